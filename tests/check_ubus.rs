//! The ubus check against the in-tree ubus broker (tests/support/ubus_broker.rs,
//! ubusd's stand-in) and a stand-in object `network.interface.wan` on it:
//! the reply judged by the http check's body expectations (text, regex,
//! jq), a missing object, a method that fails, one that is not there, and a
//! call nobody answers (the check timeout).

mod support;

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use pathosd::ubus::blob::{table_from_json, table_to_json, BlobMsgType};
use pathosd::ubus::msg::{FrameBuf, Message, MethodSig, MsgType, UbusStatus};
use serde_json::{json, Value};
use support::ubus_broker::{Broker, BrokerConfig};
use support::{probe, TempDir};

/// netifd's `network.interface.wan` as far as these tests need: `status`
/// answers `{"up": UP, "l3_device": "eth1", "args": ARGS}` (UP from a flag
/// the test flips, ARGS the call's), `broken` answers UNKNOWN_ERROR and
/// `hang` never answers.
struct Netifd {
    up: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Netifd {
    fn start(sock: &Path) -> Netifd {
        let mut s = UnixStream::connect(sock).unwrap();
        // Short reads, so that the thread sees `stop`.
        s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let mut fb = FrameBuf::new();
        let stop = Arc::new(AtomicBool::new(false));
        let hello =
            support::ubus::read_blocking(&mut s, &mut fb, &stop, "stand-in netifd").unwrap();
        assert_eq!(hello.header.ty, MsgType::Hello);
        let methods = [
            MethodSig::new("status", &[("verbose", BlobMsgType::Int8)]),
            MethodSig::new("broken", &[]),
            MethodSig::new("hang", &[]),
        ];
        let add = Message::add_object(1, "network.interface.wan", &methods);
        s.write_all(&add.encode().unwrap()).unwrap();
        let mut objid = None;
        loop {
            let m =
                support::ubus::read_blocking(&mut s, &mut fb, &stop, "stand-in netifd").unwrap();
            match m.header.ty {
                MsgType::Data => objid = m.objid(),
                MsgType::Status => break,
                _ => {}
            }
        }
        let objid = objid.expect("object registered");
        let up = Arc::new(AtomicBool::new(true));
        let (u, st) = (up.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while let Some(m) =
                support::ubus::read_blocking(&mut s, &mut fb, &st, "stand-in netifd")
            {
                if m.header.ty != MsgType::Invoke {
                    continue;
                }
                let (seq, peer) = (m.header.seq, m.header.peer);
                let args = m.data().map(table_to_json).unwrap_or(json!({}));
                let status = match m.method() {
                    Some("status") => {
                        let reply = json!({"up": u.load(Ordering::Relaxed),
                                           "l3_device": "eth1", "args": args});
                        let d =
                            Message::data_reply(seq, peer, objid, table_from_json(&reply).unwrap());
                        let _ = s.write_all(&d.encode().unwrap());
                        UbusStatus::Ok
                    }
                    Some("broken") => UbusStatus::UnknownError,
                    Some("hang") => continue,
                    _ => UbusStatus::MethodNotFound,
                };
                let st = Message::status_msg(seq, peer, status, Some(objid));
                let _ = s.write_all(&st.encode().unwrap());
            }
        });
        Netifd {
            up,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Netifd {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A ubus check on the broker at `sock`, with `opts` added to its block.
fn ubus_check(sock: &Path, object: &str, method: &str, opts: Value) -> Value {
    let mut block = json!({"socket": sock.display().to_string(), "object": object,
                           "method": method});
    for (k, v) in opts.as_object().unwrap() {
        block[k] = v.clone();
    }
    json!({"type": "ubus", "timeout": "500ms", "interval": "1s", "ubus": block})
}

#[test]
fn a_ubus_check_judges_the_reply_and_fails_with_ubus_words() {
    support::init_log();
    let dir = TempDir::new("check-ubus");
    let sock = dir.path("ubus.sock");
    let _broker = Broker::start(&sock, BrokerConfig::default()).unwrap();
    let netifd = Netifd::start(&sock);
    let vip = "10.0.0.1/32";
    let wan = "network.interface.wan";

    // The reply judged as JSON: jq over it, the arguments as sent (a
    // string of JSON, as UCI gives it, is the same object).
    let jq = json!({"response_jq": ".up == true and .args.verbose == true",
                    "args": "{\"verbose\": true}"});
    let r = probe(ubus_check(&sock, wan, "status", jq.clone()), vip);
    assert!(r.ok, "{r:?}");
    assert_eq!(r.detail, "ubus call network.interface.wan status: ok");
    let text = json!({"response_text": "\"l3_device\":\"eth1\"", "response_regex": "eth[0-9]"});
    let r = probe(ubus_check(&sock, wan, "status", text), vip);
    assert!(r.ok, "{r:?}");
    // No expectation: any answer of the call passes.
    assert!(probe(ubus_check(&sock, wan, "status", json!({})), vip).ok);

    // The interface goes down: the expression is false.
    netifd.up.store(false, Ordering::Relaxed);
    let r = probe(ubus_check(&sock, wan, "status", jq), vip);
    assert!(!r.ok, "{r:?}");
    assert!(
        r.detail
            .starts_with("ubus call network.interface.wan status: "),
        "{}",
        r.detail
    );
    assert!(!r.timed_out);
    let r = probe(
        ubus_check(&sock, wan, "status", json!({"response_text": "eth9"})),
        vip,
    );
    assert_eq!(
        r.detail,
        "ubus call network.interface.wan status: body does not contain \"eth9\""
    );

    // No such object, a failing and a missing method: ubus's own words.
    let r = probe(
        ubus_check(&sock, "network.interface.lan", "status", json!({})),
        vip,
    );
    assert!(!r.ok);
    assert_eq!(
        r.detail,
        "ubus call network.interface.lan status: object network.interface.lan: Not found"
    );
    let r = probe(ubus_check(&sock, wan, "broken", json!({})), vip);
    assert_eq!(
        (r.ok, r.detail.as_str()),
        (
            false,
            "ubus call network.interface.wan broken: Unknown error"
        )
    );
    let r = probe(ubus_check(&sock, wan, "nosuch", json!({})), vip);
    assert!(!r.ok, "{r:?}");
    assert!(r.detail.contains("Method not found"), "{}", r.detail);

    // Nobody answers: the check timeout ends it.
    let start = std::time::Instant::now();
    let r = probe(ubus_check(&sock, wan, "hang", json!({})), vip);
    assert!(r.timed_out && !r.ok, "{r:?}");
    assert_eq!(
        r.detail,
        "ubus call network.interface.wan hang: timed out after 500ms"
    );
    assert!(start.elapsed() < Duration::from_secs(2));

    // No ubusd there.
    let r = probe(
        ubus_check(&dir.path("none.sock"), wan, "status", json!({})),
        vip,
    );
    assert!(!r.ok && !r.timed_out, "{r:?}");
    assert!(r.detail.contains("connect "), "{}", r.detail);
}

/// Validation: object and method are required, args must be a JSON
/// object, a ubus block on another type is refused.
#[test]
fn ubus_check_rules() {
    let errs = support::check_errors(json!({"type": "ubus"}), "10.0.0.1/32");
    assert_eq!(
        errs,
        [
            "vips[0].check.ubus.object: required",
            "vips[0].check.ubus.method: required"
        ]
    );
    let errs = support::check_errors(
        json!({"type": "ubus", "ubus": {"object": "system", "method": "info", "args": "[1]"}}),
        "10.0.0.1/32",
    );
    assert_eq!(
        errs,
        ["vips[0].check.ubus.args: \"[1]\" is not a JSON object"]
    );
    let errs = support::check_errors(
        json!({"type": "ubus", "ubus": {"object": "system", "method": "info",
                                        "response_jq": ".a =="}}),
        "10.0.0.1/32",
    );
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].starts_with("vips[0].check.ubus.response_jq: "),
        "{errs:?}"
    );
    let errs = support::check_errors(
        json!({"type": "tcp", "tcp": {"port": 80}, "ubus": {"object": "system"}}),
        "10.0.0.1/32",
    );
    assert_eq!(
        errs,
        ["vips[0].check.ubus: a ubus block does not apply to a tcp check"]
    );
}

/// In UCI, `args` is a string holding the JSON object: the same check as
/// the JSON config's object.
#[test]
fn uci_args_are_a_json_string() {
    use pathosd::config::load::{load_str, Format};
    let uci = r#"
config pathosd 'main'
	option asn '65001'
	option router_id '10.0.0.1'

config neighbor 'bird'
	option address '127.0.0.2'
	option peer_asn '65000'

config vip 'dns'
	option prefix '10.0.0.53/32'

config check 'dnsmasq'
	option vip 'dns'
	option type 'ubus'
	option object 'service'
	option method 'list'
	option args '{"name": "dnsmasq", "verbose": true}'
	option response_jq '.dnsmasq.instances.instance1.running == true'
"#;
    let json = json!({"schema": "v1",
        "router": {"asn": 65001, "router_id": "10.0.0.1"},
        "bgp": {"neighbors": [{"name": "bird", "address": "127.0.0.2", "peer_asn": 65000}]},
        "vips": [{"name": "dns", "prefix": "10.0.0.53/32", "check": {"name": "dnsmasq",
            "type": "ubus", "ubus": {"object": "service", "method": "list",
                "args": {"name": "dnsmasq", "verbose": true},
                "response_jq": ".dnsmasq.instances.instance1.running == true"}}}]});
    let no_env = |_: &str| None;
    let from_uci = load_str(uci, Some(Format::Uci), &no_env).unwrap_or_else(|e| panic!("{e:?}"));
    let from_json = load_str(&json.to_string(), Some(Format::Json), &no_env)
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(from_uci, from_json);
    let bad = uci.replace(r#"'{"name": "dnsmasq", "verbose": true}'"#, "'dnsmasq'");
    let errs = load_str(&bad, Some(Format::Uci), &no_env).unwrap_err();
    let errs: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].contains("is not a JSON object"), "{errs:?}");
}

/// The real daemon with a ubus check (`network.interface.wan status`,
/// `.up == true`) on the broker, and BIRD: the interface goes down at the
/// stand-in → BIRD loses the route; back up → announced again.
#[test]
fn a_ubus_check_withdraws_and_returns_at_bird() {
    use support::daemon::{is_announced, policy, Setup};
    support::init_log();
    let dir = TempDir::new("e2e-ubus-check");
    let sock = dir.path("ubus.sock");
    let _broker = Broker::start(&sock, BrokerConfig::default()).unwrap();
    let netifd = Netifd::start(&sock);
    let n = 9;
    let prefix = format!("10.{}.0.1/32", 200 + n);
    let mut check = ubus_check(
        &sock,
        "network.interface.wan",
        "status",
        json!({"response_jq": ".up == true"}),
    );
    check["interval"] = json!("300ms");
    check["timeout"] = json!("250ms");
    check["fall"] = json!(2);
    let vips = json!([{"name": "wan", "prefix": prefix, "check": check,
                       "policy": policy("withdraw")}]);
    let s = Setup::start(n, vips, |_| {});
    s.wait_established();
    s.wait_route(&prefix, "announced", is_announced);
    netifd.up.store(false, Ordering::Relaxed);
    s.wait_gone(&prefix);
    let v = s.d.vip("wan");
    assert_eq!(v["state_name"], "withdrawn", "{v}");
    assert_eq!(
        v["checks"][0]["last_check_detail"],
        "ubus call network.interface.wan status: jq expression is not true: false",
        "{v}"
    );
    netifd.up.store(true, Ordering::Relaxed);
    s.wait_route(&prefix, "announced again", is_announced);
}
