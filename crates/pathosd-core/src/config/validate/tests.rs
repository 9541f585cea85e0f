//! The rules of validation, one broken thing at a time, each error at its
//! path and naming the bad value.
// Scenarios against real peers and whole configurations read as one
// script, top to bottom: the workspace's function-length lint is for
// shipped code.
#![allow(clippy::too_many_lines)]

use super::values::{grpc_code, UrlParts};
use super::*;
use crate::bgp::settings::PeerSettings;
use crate::config::field::Field;
use crate::config::policy_expr;
use crate::config::schema::*;
use serde_json::{json, Value};

/// A minimal valid config; each test breaks one thing in it.
fn base() -> Value {
    json!({
        "schema": "v1",
        "router": {"asn": 65001, "router_id": "10.0.0.1", "local_address": "127.0.0.1"},
        "bgp": {"neighbors": [{"name": "bird", "address": "127.0.0.2", "peer_asn": 65000}]},
        "vips": [{"name": "web", "prefix": "192.0.2.10/32",
                  "check": {"type": "tcp", "tcp": {"port": 80}}}]
    })
}

fn errors(v: &Value) -> Vec<String> {
    let mut errs = Errors::default();
    if let Some(c) = Config::decode(v, "", &mut errs) {
        validate(c, &mut errs);
    }
    errs.0.iter().map(|e| e.to_string()).collect()
}

/// Applies `patch` (a JSON pointer and a value; Null deletes) to base()
/// and asserts the exact, single error.
fn one(patches: &[(&str, Value)], want: &str) {
    let mut v = base();
    for (ptr, val) in patches {
        let (parent, key) = ptr.rsplit_once('/').unwrap();
        let target = v.pointer_mut(parent).unwrap();
        match (target, val) {
            (Value::Object(m), Value::Null) => {
                m.remove(key);
            }
            (Value::Object(m), val) => {
                m.insert(key.to_string(), val.clone());
            }
            (Value::Array(a), val) => {
                let i: usize = key.parse().unwrap();
                if i == a.len() {
                    a.push(val.clone());
                } else {
                    a[i] = val.clone();
                }
            }
            _ => panic!("bad pointer {ptr}"),
        }
    }
    // The other rules hold in a build without TLS too (cargo test
    // --no-default-features): there an https check also gets the
    // NEEDS_TLS error, which tls_needs_the_feature tests by itself.
    let got: Vec<String> = errors(&v)
        .into_iter()
        .filter(|e| want.contains(crate::NEEDS_TLS) || !e.contains(crate::NEEDS_TLS))
        .collect();
    assert_eq!(got, vec![want.to_string()], "patches {patches:?}");
}

/// Every option that needs TLS names itself in a build without it (the
/// pathosd-nossl package), and is accepted in a build with it.
#[test]
fn tls_needs_the_feature() {
    let why = crate::NEEDS_TLS;
    let cases = [
        (
            json!({"type": "https", "http": {"url": "/healthz"}}),
            format!("vips[0].check.type: https {why}"),
        ),
        (
            json!({"type": "http", "http": {"url": "https://web.example/healthz"}}),
            format!("vips[0].check.http.url: \"https://web.example/healthz\" {why}"),
        ),
        (
            json!({"type": "grpc", "grpc": {"port": 50051, "tls": true}}),
            format!("vips[0].check.grpc.tls: true {why}"),
        ),
        (
            json!({"type": "http", "http": {"url": "http://web.example/", "proxy": "https://p.example:3128"}}),
            format!("vips[0].check.http.proxy: \"https://p.example:3128\" {why}"),
        ),
    ];
    for (check, want) in cases {
        let mut v = base();
        v["vips"][0]["check"] = check.clone();
        let want = if crate::TLS { vec![] } else { vec![want] };
        assert_eq!(errors(&v), want, "check {check}");
    }
    // Plain http (also through an http:// proxy) and h2c gRPC need nothing.
    for check in [
        json!({"type": "http", "http": {"url": "http://web.example/"}}),
        json!({"type": "http", "http": {"url": "http://web.example/", "proxy": "http://p.example:3128"}}),
        json!({"type": "grpc", "grpc": {"port": 50051}}),
    ] {
        let mut v = base();
        v["vips"][0]["check"] = check.clone();
        assert_eq!(errors(&v), Vec::<String>::new(), "check {check}");
    }
}

fn loaded(v: Value) -> Config {
    crate::config::load::check_str(&v.to_string(), None, &|_| None).unwrap()
}

fn run(v: Value) -> crate::config::RunConfig {
    crate::config::RunConfig::new(loaded(v)).unwrap()
}

/// Validation hands the daemon the compiled checks_policy: the one
/// `policy_expr::compile` gives for the VIP's check names, `all` for an
/// `always` VIP.
#[test]
fn a_valid_config_carries_its_compiled_policies() {
    let mut v = base();
    v["vips"][0]["check"] = Value::Null;
    v["vips"][0]["checks"] = json!([
        {"name": "web", "type": "tcp", "tcp": {"port": 80}},
        {"type": "ping"}
    ]);
    v["vips"][0]["checks_policy"] = json!("web && !ping || at_least(2)");
    if let Some(vips) = v["vips"].as_array_mut() {
        vips.push(
            json!({"name": "a", "prefix": "192.0.2.11/32", "always": true,
                         "checks_policy": "any"}),
        );
    }
    let c = run(v);
    let names = ["web".to_string(), "ping".to_string()];
    let want = policy_expr::compile("web && !ping || at_least(2)", &names).unwrap();
    assert_eq!(c.vips[0].checks_expr, want);
    assert_ne!(want, policy_expr::Expr::All);
    assert_eq!(c.vips[1].checks_expr, policy_expr::Expr::All);
    // And it evaluates as written: web && !ping || at_least(2).
    let eval = |up: &[&str]| {
        crate::check::policy::eval(&c.vips[0].checks_expr, &names, &|n| up.contains(&n))
    };
    assert!(eval(&["web"]));
    assert!(!eval(&["ping"]));
    assert!(eval(&["web", "ping"]));
    assert!(!eval(&[]));
}

/// The prefix is required by the decoder, so a decoded VIP holds a
/// `Prefix` (no `Option` for the engine or the checks to unwrap); the
/// errors stay what validation said before, also for an explicit null.
#[test]
fn a_vip_prefix_is_required_when_decoding() {
    for missing in [None, Some(Value::Null)] {
        let mut v = base();
        match missing {
            None => {
                v["vips"][0].as_object_mut().map(|o| o.remove("prefix"));
            }
            Some(n) => v["vips"][0]["prefix"] = n,
        }
        v["router"]["asn"] = json!(0);
        assert_eq!(
            errors(&v),
            [
                "vips[0].prefix: required",
                "router.asn: required and must be > 0"
            ]
        );
    }
    // Two VIPs without a prefix are not duplicates of each other.
    let mut v = base();
    v["vips"] = json!([
        {"name": "a", "always": true},
        {"name": "b", "always": true, "prefix": "0.0.0.0/32"},
        {"name": "c", "always": true, "prefix": "10.0.0.300/32"}
    ]);
    assert_eq!(
        errors(&v),
        [
            "vips[0].prefix: required",
            "vips[2].prefix: \"10.0.0.300/32\" is not a valid prefix (\"10.0.0.300\" is not an IP address)"
        ]
    );
    assert_eq!(
        loaded(base()).vips[0].prefix.first,
        "192.0.2.10/32".parse().unwrap()
    );
}

#[test]
fn a_valid_config_carries_its_api_listen_address() {
    let mut v = base();
    assert_eq!(
        run(v.clone()).api.listen,
        Some("127.0.0.1:59179".parse().unwrap())
    );
    v["api"] = json!({"listen": ":8080"});
    assert_eq!(
        run(v.clone()).api.listen,
        Some("0.0.0.0:8080".parse().unwrap())
    );
    v["api"] = json!({"listen": "[::1]:1"});
    assert_eq!(run(v.clone()).api.listen, Some("[::1]:1".parse().unwrap()));
    v["api"] = json!({"listen": ""});
    assert_eq!(run(v).api.listen, None);
}

/// Every default and override of a neighbor is applied once, by
/// validation: the speaker reads the result.
#[test]
fn a_valid_config_carries_each_neighbors_session() {
    let mut v = base();
    v["router"]["local_address"] = json!("0.0.0.0");
    v["router"]["local_address_ipv6"] = json!("2001:db8::1");
    v["bgp"]["hold_time"] = json!("30s");
    v["bgp"]["keepalive_time"] = json!("10s");
    v["bgp"]["graceful_restart"] = json!(false);
    v["bgp"]["neighbors"] = json!([
        {"name": "ebgp", "address": "127.0.0.2", "peer_asn": 65000, "auth_password": ""},
        {"name": "mh", "address": "127.0.0.3", "peer_asn": 65000, "enable_multihop": true,
         "multihop_ttl": 5, "ttl_security": true, "hold_time": "9s", "keepalive_time": "0s",
         "graceful_restart": true, "auth_password": "k", "local_address": "127.0.0.9"},
        {"name": "ibgp", "address": "127.0.0.4", "peer_asn": 65001, "passive": true}
    ]);
    let c = run(v);
    let s: Vec<&PeerSettings> = c.neighbors.iter().map(|n| &n.settings).collect();
    let id: std::net::Ipv4Addr = "10.0.0.1".parse().unwrap();
    let ebgp = s[0];
    assert_eq!(ebgp.address, "127.0.0.2".parse::<IpAddr>().unwrap());
    assert_eq!(ebgp.local_address, Some("0.0.0.0".parse().unwrap()));
    assert_eq!((ebgp.fsm.router_id, ebgp.fsm.local_as), (id, 65001));
    assert!(ebgp.shape.ebgp);
    assert_eq!(
        (ebgp.fsm.hold_time, ebgp.fsm.keepalive_time),
        (30, Some(10))
    );
    assert!(!ebgp.fsm.capabilities.graceful_restart);
    assert!(ebgp.fsm.capabilities.mp_ipv6);
    assert_eq!(ebgp.password, None);
    assert_eq!((ebgp.ttl, ebgp.min_ttl), (Some(1), None));
    assert_eq!(ebgp.shape.next_hop_v4, Some(id));
    assert!(ebgp.next_hop_v4_from_session);
    assert_eq!(ebgp.shape.next_hop_v6, Some("2001:db8::1".parse().unwrap()));
    assert!(!ebgp.next_hop_v6_from_session);
    // RFC 5082 §3: 255 out, at least 255 - (5 - 1) in.
    assert_eq!((s[1].ttl, s[1].min_ttl), (Some(255), Some(251)));
    assert_eq!((s[1].fsm.hold_time, s[1].fsm.keepalive_time), (9, None));
    assert!(s[1].fsm.capabilities.graceful_restart);
    assert_eq!(s[1].password.as_deref(), Some("k"));
    assert_eq!(s[1].local_address, Some("127.0.0.9".parse().unwrap()));
    assert_eq!(
        (s[2].shape.ebgp, s[2].ttl, s[2].min_ttl),
        (false, None, None)
    );
    assert!(s[2].fsm.passive);
}

#[test]
fn base_is_valid() {
    assert_eq!(errors(&base()), Vec::<String>::new());
}

#[test]
fn top_level_and_router_rules() {
    one(&[("/schema", Value::Null)], "schema: required (set \"v1\")");
    one(
        &[("/schema", json!("v2"))],
        "schema: unsupported version \"v2\" (expected \"v1\")",
    );
    one(
        &[("/router/asn", json!(0))],
        "router.asn: required and must be > 0",
    );
    one(
        &[("/router/router_id", Value::Null)],
        "router.router_id: required (an IPv4 address)",
    );
    one(
        &[("/router/router_id", json!("2001:db8::1"))],
        "router.router_id: 2001:db8::1 is not an IPv4 address (the BGP identifier is 32 bits)",
    );
    one(
        &[("/router/router_id", json!("0.0.0.0"))],
        "router.router_id: 0.0.0.0 is not a valid BGP identifier (RFC 6286: non-zero)",
    );
    one(
        &[("/router/local_address_ipv6", json!("10.0.0.9"))],
        "router.local_address_ipv6: 10.0.0.9 is not an IPv6 address",
    );
    one(
        &[("/vips/1", json!({"name": "v6", "prefix": "2001:db8::1/128", "always": true}))],
        "router.local_address_ipv6: required because vips[1].prefix 2001:db8::1/128 is IPv6 (it is the IPv6 next hop)",
    );
    one(
        &[("/vips", json!([]))],
        "vips: at least one VIP is required",
    );
    one(&[("/api", json!({"listen": "localhost"}))],
        "api.listen: \"localhost\" is not host:port such as 127.0.0.1:59179 (empty disables the API)");
    one(
        &[("/api", json!({"token": "short"}))],
        "api.token: is 5 characters; it must have 16 to 256",
    );
    one(
        &[("/api", json!({"token": "x".repeat(257)}))],
        "api.token: is 257 characters; it must have 16 to 256",
    );
    for bad in [
        "has space in it 0123",
        "quote\"0123456789abcdef",
        "ümlaut0123456789abc",
        "=0123456789abcdefgh",
    ] {
        one(&[("/api", json!({"token": bad}))],
            "api.token: may contain only letters, digits and - . _ ~ + / (then = padding), as a bearer token (RFC 6750)");
    }
    for good in ["", "0123456789abcdef", "aB3-._~+/0123456789==="] {
        let mut v = base();
        v["api"] = json!({"token": good});
        assert_eq!(errors(&v), Vec::<String>::new(), "{good}");
    }
    assert_eq!(
        errors(&{
            let mut v = base();
            v["api"] = json!({"listen": ":59179"});
            v
        }),
        Vec::<String>::new()
    );
}

#[test]
fn bgp_rules() {
    one(
        &[("/bgp/listen_port", json!(0))],
        "bgp.listen_port: 0 must be -1 (disabled) or in range 1..65535",
    );
    one(
        &[("/bgp/listen_port", json!(65536))],
        "bgp.listen_port: 65536 must be -1 (disabled) or in range 1..65535",
    );
    one(
        &[("/bgp/hold_time", json!("2s"))],
        "bgp.hold_time: 2s must be 0 or at least 3s",
    );
    one(
        &[("/bgp/hold_time", json!("4.5s"))],
        "bgp.hold_time: 4.5s is not a whole number of seconds",
    );
    one(
        &[("/bgp/hold_time", json!("20h"))],
        "bgp.hold_time: 20h is more than 65535s",
    );
    one(
        &[("/bgp/keepalive_time", json!("90s"))],
        "bgp.keepalive_time: 1m30s must be less than hold_time 1m30s",
    );
    one(
        &[
            ("/bgp/hold_time", json!("0s")),
            ("/bgp/keepalive_time", json!("1s")),
        ],
        "bgp.keepalive_time: 1s must be 0 when hold_time is 0 (no keepalives)",
    );
    one(
        &[("/bgp/shutdown_drain", json!("5s"))],
        "bgp.shutdown_drain: 5s is more than 4s (procd kills a stopping service after 5s)",
    );
    one(
        &[("/bgp/neighbors", json!([]))],
        "bgp.neighbors: at least one neighbor is required",
    );
}

#[test]
fn neighbor_rules() {
    let n = "/bgp/neighbors/0";
    one(
        &[(&format!("{n}/name"), json!(""))],
        "bgp.neighbors[0].name: required",
    );
    one(
        &[(&format!("{n}/name"), json!("a b"))],
        "bgp.neighbors[0].name: \"a b\" may contain only letters, digits, '_', '-' and '.'",
    );
    one(
        &[(
            "/bgp/neighbors/1",
            json!({"name": "bird", "address": "127.0.0.3", "peer_asn": 1}),
        )],
        "bgp.neighbors[1].name: duplicate neighbor name \"bird\" (also bgp.neighbors[0])",
    );
    one(
        &[(
            "/bgp/neighbors/1",
            json!({"name": "frr", "address": "127.0.0.2", "peer_asn": 1}),
        )],
        "bgp.neighbors[1].address: duplicate neighbor address 127.0.0.2 (also bgp.neighbors[0])",
    );
    one(
        &[(&format!("{n}/passive"), json!(true)), ("/bgp/listen_port", json!(-1))],
        "bgp.neighbors[0].passive: a passive neighbor can never connect: bgp.listen_port is -1 (no listener)",
    );
    one(
        &[(&format!("{n}/address"), Value::Null)],
        "bgp.neighbors[0].address: required",
    );
    one(
        &[(&format!("{n}/address"), json!("224.0.0.1"))],
        "bgp.neighbors[0].address: 224.0.0.1 is not a unicast address",
    );
    one(
        &[(&format!("{n}/peer_asn"), json!(0))],
        "bgp.neighbors[0].peer_asn: required and must be > 0",
    );
    one(
        &[(&format!("{n}/port"), json!(0))],
        "bgp.neighbors[0].port: 0 is not a port (1..65535)",
    );
    one(&[(&format!("{n}/address"), json!("127.0.0.1"))],
        "bgp.neighbors[0].local_address: active peer local_address \"127.0.0.1\" must differ from neighbor address \"127.0.0.1\" to avoid self-dial");
    // Passive peers never dial, so the guard does not apply.
    one(
        &[
            (&format!("{n}/address"), json!("127.0.0.1")),
            (&format!("{n}/passive"), json!(true)),
            ("/schema", json!("v0")),
        ],
        "schema: unsupported version \"v0\" (expected \"v1\")",
    );
    one(&[(&format!("{n}/local_address"), json!("::1"))],
        "bgp.neighbors[0].local_address: ::1 and address 127.0.0.2 are of different address families");
    one(
        &[(&format!("{n}/auth_password"), json!("x".repeat(81)))],
        "bgp.neighbors[0].auth_password: is 81 bytes; TCP MD5 keys are at most 80 bytes",
    );
    one(
        &[(&format!("{n}/multihop_ttl"), json!(5))],
        "bgp.neighbors[0].multihop_ttl: 5 has no effect when enable_multihop is false",
    );
    one(
        &[
            (&format!("{n}/multihop_ttl"), json!(1)),
            (&format!("{n}/enable_multihop"), json!(true)),
        ],
        "bgp.neighbors[0].multihop_ttl: 1 must be 0 (meaning 255) or at least 2",
    );
    one(
        &[(&format!("{n}/hold_time"), json!("1s"))],
        "bgp.neighbors[0].hold_time: 1s must be 0 or at least 3s",
    );
    one(
        &[(&format!("{n}/keepalive_time"), json!("2m"))],
        "bgp.neighbors[0].keepalive_time: 2m must be less than hold_time 1m30s",
    );
    // The global keepalive is fine for the global hold, not for this peer's.
    one(
        &[
            (&format!("{n}/hold_time"), json!("9s")),
            ("/bgp/keepalive_time", json!("30s")),
        ],
        "bgp.neighbors[0].keepalive_time: 30s must be less than hold_time 9s",
    );
    one(
        &[(&format!("{n}/error_wait_min"), json!("50ms"))],
        "bgp.neighbors[0].error_wait_min: 50ms is less than 100ms (a refused peer would be redialled in a busy loop)",
    );
    one(
        &[(&format!("{n}/error_wait_max"), json!("2h"))],
        "bgp.neighbors[0].error_wait_max: 2h is more than 1h",
    );
    // The default cap (60s) is below this minimum.
    one(
        &[(&format!("{n}/error_wait_min"), json!("2m"))],
        "bgp.neighbors[0].error_wait_min: 2m must not be more than error_wait_max 1m",
    );
    one(
        &[
            (&format!("{n}/error_wait_min"), json!("5s")),
            (&format!("{n}/error_wait_max"), json!("2s")),
        ],
        "bgp.neighbors[0].error_wait_min: 5s must not be more than error_wait_max 2s",
    );
    one(
        &[(&format!("{n}/require_role"), json!(true))],
        "bgp.neighbors[0].require_role: needs role",
    );
    one(
        &[(&format!("{n}/role"), json!("provider-ish"))],
        "bgp.neighbors[0].role: \"provider-ish\" is not one of provider, rs, rs-client, customer, peer",
    );
    // RFC 9687 §3.4: SendHoldTime MUST be greater than HoldTime (90s here).
    one(
        &[(&format!("{n}/send_hold_time"), json!("90s"))],
        "bgp.neighbors[0].send_hold_time: 1m30s must be 0 (off) or more than hold_time 1m30s",
    );
    one(
        &[
            (&format!("{n}/hold_time"), json!("9s")),
            (&format!("{n}/send_hold_time"), json!("5s")),
        ],
        "bgp.neighbors[0].send_hold_time: 5s must be 0 (off) or more than hold_time 9s",
    );
    let bfd = |b: Value| [(format!("{n}/bfd"), b)];
    for (b, want) in [
        (
            json!({"desired_minimum_tx_interval": "5ms"}),
            "bgp.neighbors[0].bfd.desired_minimum_tx_interval: 5ms is not within 10ms..1m",
        ),
        (
            json!({"required_minimum_receive": "2m"}),
            "bgp.neighbors[0].bfd.required_minimum_receive: 2m is not within 10ms..1m",
        ),
        (
            json!({"detection_multiplier": 1}),
            "bgp.neighbors[0].bfd.detection_multiplier: 1 must be at least 2 (one lost packet must not take the session down)",
        ),
        (
            json!({"detection_multiplier": 256}),
            "bgp.neighbors[0].bfd.detection_multiplier: 256 is not an integer in 0..=255",
        ),
    ] {
        let p = bfd(b);
        one(&[(&p[0].0, p[0].1.clone())], want);
    }
    // A source address is needed once BFD is on: the router's is unset.
    one(
        &[
            ("/router/local_address", Value::Null),
            (&format!("{n}/bfd"), json!({"enabled": true})),
        ],
        "bgp.neighbors[0].bfd.enabled: BFD needs a source address: set this neighbor's local_address or router.local_address",
    );
}

/// BFD off by default; once on, the run config has the session: multihop
/// for a loopback neighbor, the intervals in microseconds.
#[test]
fn bfd_run_settings() {
    use crate::bfd::Hops;
    let mut v = base();
    let run = |v: &Value| {
        let mut errs = Errors::default();
        let c = Config::decode(v, "", &mut errs).unwrap();
        crate::config::RunConfig::new(c).unwrap().neighbors[0].bfd
    };
    assert_eq!(run(&v), None);
    v["bgp"]["neighbors"][0]["bfd"] =
        json!({"enabled": true, "desired_minimum_tx_interval": "100ms"});
    let b = run(&v).unwrap();
    assert_eq!(b.hops, Hops::Multi { min_ttl: 1 });
    assert_eq!(b.local, "127.0.0.1".parse::<std::net::IpAddr>().unwrap());
    assert_eq!(b.timers.desired_min_tx.get(), 100_000);
    assert_eq!(b.timers.required_min_rx, 300_000);
    assert_eq!(b.timers.detect_mult.get(), 3);
    v["bgp"]["neighbors"][0]["bfd"]["multihop"] = json!(false);
    assert_eq!(run(&v).unwrap().hops, Hops::Single);
}

/// Duplicate names and prefixes name the first VIP that has them, in VIP
/// order, however many repeat it; a prefix that failed to decode takes
/// no part (found through sorted index lists, not maps: memory).
#[test]
fn duplicates_name_the_first_vip() {
    let mut v = base();
    let vip = |name: &str, prefix: Value| json!({"name": name, "prefix": prefix, "always": true});
    v["vips"] = json!([
        vip("b", json!("192.0.2.2/32")),
        vip("a", json!("192.0.2.1/32")),
        vip("b", json!("bad")),
        vip("a", json!("192.0.2.2/32")),
        vip("c", json!("bad")),
        vip("b", json!("192.0.2.1/32")),
    ]);
    assert_eq!(
        errors(&v),
        [
            "vips[2].prefix: \"bad\" is not a prefix such as 192.0.2.1/32",
            "vips[4].prefix: \"bad\" is not a prefix such as 192.0.2.1/32",
            "vips[2].name: duplicate VIP name \"b\" (also vips[0])",
            "vips[3].name: duplicate VIP name \"a\" (also vips[1])",
            "vips[3].prefix: duplicate prefix 192.0.2.2/32 (also vips[0].prefix)",
            "vips[5].name: duplicate VIP name \"b\" (also vips[0])",
            "vips[5].prefix: duplicate prefix 192.0.2.1/32 (also vips[1].prefix)",
        ]
    );
}

#[test]
fn vip_rules() {
    let v = "/vips/0";
    one(
        &[(&format!("{v}/name"), json!("a/b"))],
        "vips[0].name: \"a/b\" may contain only letters, digits, '_', '-' and '.'",
    );
    one(
        &[(
            "/vips/1",
            json!({"name": "web", "prefix": "192.0.2.11/32", "always": true}),
        )],
        "vips[1].name: duplicate VIP name \"web\" (also vips[0])",
    );
    one(
        &[
            (
                "/vips/1",
                json!({"name": "net", "prefix": "192.0.2.0/24", "always": true}),
            ),
            (
                "/vips/2",
                json!({"name": "net2", "prefix": "192.0.2.0/24", "always": true}),
            ),
        ],
        "vips[2].prefix: duplicate prefix 192.0.2.0/24 (also vips[1].prefix)",
    );
    // Host bits name both readings instead of announcing the network.
    one(
        &[(
            "/vips/1",
            json!({"name": "net", "prefix": "10.10.1.5/24", "always": true}),
        )],
        "vips[1].prefix: \"10.10.1.5/24\" has host bits set: write 10.10.1.5/32 for the address or 10.10.1.0/24 for the network",
    );
    one(
        &[(
            "/vips/1",
            json!({"name": "net", "prefix": "2001:db8::1/64", "always": true}),
        )],
        "vips[1].prefix: \"2001:db8::1/64\" has host bits set: write 2001:db8::1/128 for the address or 2001:db8::/64 for the network",
    );
    one(
        &[(&format!("{v}/prefix"), Value::Null)],
        "vips[0].prefix: required",
    );
    one(
        &[(&format!("{v}/check"), Value::Null)],
        "vips[0]: exactly one of check or checks is required (or always: true)",
    );
    one(
        &[(&format!("{v}/checks"), json!([{"type": "ping"}]))],
        "vips[0].checks: set either check or checks, not both",
    );
    one(
        &[
            (&format!("{v}/check"), Value::Null),
            (&format!("{v}/checks"), json!([])),
        ],
        "vips[0].checks: at least one check is required",
    );
    one(
        &[(&format!("{v}/always"), json!(true))],
        "vips[0].check: not allowed with always: true (the VIP is announced without checks)",
    );
    one(
        &[(&format!("{v}/local_interface"), json!("lo"))],
        "vips[0].local_interface: has no effect unless require_local_address is true",
    );
    one(
        &[
            (
                &format!("{v}/local_interface"),
                json!("a-very-long-interface"),
            ),
            (&format!("{v}/require_local_address"), json!(true)),
        ],
        "vips[0].local_interface: \"a-very-long-interface\" is not an interface name",
    );
    one(
        &[(&format!("{v}/services"), json!(["dnsmasq", "two words"]))],
        "vips[0].services[1]: \"two words\" is not a name",
    );
    one(
        &[(&format!("{v}/interfaces"), json!([""]))],
        "vips[0].interfaces[0]: \"\" is not a name",
    );
    one(
        &[(
            &format!("{v}/policy"),
            json!({"announce": {"as_path_prepend": 17}}),
        )],
        "vips[0].policy.announce.as_path_prepend: 17 is more than 16",
    );
    one(
        &[(
            &format!("{v}/policy"),
            json!({"lower_priority": {"as_path_prepend": 20}}),
        )],
        "vips[0].policy.lower_priority.as_path_prepend: 20 is more than 16",
    );
    one(
        &[(
            &format!("{v}/policy"),
            json!({"announce": {"med": 100}, "lower_priority": {"med": 99}}),
        )],
        "vips[0].policy.lower_priority.med: 99 is below announce.med 100: a pessimized route would be preferred",
    );
    one(
        &[(
            &format!("{v}/policy"),
            json!({"lower_priority": {"local_pref": 101}}),
        )],
        "vips[0].policy.lower_priority.local_pref: 101 is above announce.local_pref 100: a pessimized route would be preferred",
    );
    one(
        &[(
            &format!("{v}/policy"),
            json!({"announce": {"med": 4_294_967_296u64}}),
        )],
        "vips[0].policy.announce.med: 4294967296 is not an integer in 0..=4294967295",
    );
    one(
        &[(
            &format!("{v}/policy"),
            json!({"fail_action": "drain_then_withdraw", "drain_time": "0s"}),
        )],
        "vips[0].policy.drain_time: 0s must be greater than 0 for fail_action drain_then_withdraw",
    );
    one(
        &[(
            &format!("{v}/policy"),
            json!({"drain_until_flows_below": 1, "drain_time": "0s"}),
        )],
        "vips[0].policy.drain_time: 0s must be greater than 0 with drain_until_flows_below",
    );
    one(
        &[(
            &format!("{v}/policy"),
            json!({"damping": {"enabled": true, "half_life": "500ms"}}),
        )],
        "vips[0].policy.damping.half_life: must be 1s to 45m",
    );
    one(
        &[(&format!("{v}/policy"), json!({"damping": {"reuse": 2000}}))],
        "vips[0].policy.damping.reuse: must be at least 1 and less than suppress",
    );
    // 750 × 2^(10m/5m) = 3,000: a suppress of 3,000 is never exceeded.
    one(
        &[(
            &format!("{v}/policy"),
            json!({"damping": {"suppress": 3000, "max_suppress": "10m"}}),
        )],
        "vips[0].policy.damping.suppress: can never be exceeded: the penalty stops below reuse × 2^(max_suppress/half_life); raise max_suppress or lower suppress",
    );
    one(
        &[(
            &format!("{v}/policy"),
            json!({"lower_priority_file": "drain"}),
        )],
        "vips[0].policy.lower_priority_file: \"drain\" must be an absolute path",
    );
    one(&[(&format!("{v}/policy"), json!({"announce": {"communities": ["65536:1"]}}))],
        "vips[0].policy.announce.communities[0]: \"65536:1\" is not a community \"asn:value\" with 16-bit parts");
    one(&[(&format!("{v}/policy"), json!({"lower_priority": {"large_communities": ["1:2"]}}))],
        "vips[0].policy.lower_priority.large_communities[0]: \"1:2\" is not a large community \"global:local1:local2\" with 32-bit parts");
}

fn checks(list: Value) -> [(&'static str, Value); 2] {
    [("/vips/0/check", Value::Null), ("/vips/0/checks", list)]
}

#[test]
fn check_names_and_policy() {
    let tcp = json!({"type": "tcp", "tcp": {"port": 80}});
    one(&checks(json!([tcp, tcp])),
        "vips[0].checks[1].name: duplicate check name \"tcp\" (also vips[0].checks[0]); two checks of the same type need explicit names");
    one(
        &checks(json!([{"name": "web-1", "type": "tcp", "tcp": {"port": 80}}])),
        "vips[0].checks[0].name: \"web-1\" is not an identifier ([A-Za-z_][A-Za-z0-9_]*)",
    );
    one(
        &checks(json!([{"name": "any", "type": "tcp", "tcp": {"port": 80}}])),
        "vips[0].checks[0].name: \"any\" is reserved in checks_policy",
    );
    let mut p =
        checks(json!([{"name": "web", "type": "tcp", "tcp": {"port": 80}}, {"type": "ping"}]))
            .to_vec();
    p.push(("/vips/0/checks_policy", json!("web || pnig")));
    one(&p, "vips[0].checks_policy: column 8 of \"web || pnig\": unknown check \"pnig\" (checks: web, ping)");
    p.pop();
    p.push(("/vips/0/checks_policy", json!("web &&")));
    one(&p, "vips[0].checks_policy: column 7 of \"web &&\": expected a check name, all, any, !, or \"(\" but found end of policy");
}

#[test]
fn common_check_rules() {
    let c = "/vips/0/check";
    one(
        &[(&format!("{c}/degraded_latency"), json!("100ms"))],
        "vips[0].check.degraded_latency: 100ms must be less than timeout 100ms",
    );
    one(
        &[(&format!("{c}/degraded_latency"), json!("0s"))],
        "vips[0].check.degraded_latency: 0s must be greater than 0",
    );
    one(
        &[(&format!("{c}/timeout"), json!("1s"))],
        "vips[0].check.timeout: 1s must be less than interval 1s",
    );
    one(
        &[(&format!("{c}/interval"), json!("0s"))],
        "vips[0].check.interval: 0s must be greater than 0",
    );
    one(
        &[(&format!("{c}/timeout"), json!("0s"))],
        "vips[0].check.timeout: 0s must be greater than 0",
    );
    one(
        &[(&format!("{c}/fast_interval"), json!("2s"))],
        "vips[0].check.fast_interval: 2s must not be more than interval 1s",
    );
    one(
        &[(&format!("{c}/fast_interval"), json!("100ms"))],
        "vips[0].check.fast_interval: 100ms must be more than timeout 100ms",
    );
    one(
        &[(&format!("{c}/fast_interval"), json!("0s"))],
        "vips[0].check.fast_interval: 0s must be greater than 0",
    );
    // More than timeout, at most interval.
    for ok in ["101ms", "1s"] {
        let mut v = base();
        v["vips"][0]["check"]["fast_interval"] = json!(ok);
        assert_eq!(errors(&v), Vec::<String>::new(), "{ok}");
    }
    one(
        &[(&format!("{c}/rise"), json!(0))],
        "vips[0].check.rise: 0 must be at least 1",
    );
    one(
        &[(&format!("{c}/fall"), json!(0))],
        "vips[0].check.fall: 0 must be at least 1",
    );
    one(
        &[(&format!("{c}/type"), Value::Null)],
        "vips[0].check.type: required (one of http, https, dns, ping, tcp, udp, grpc, exec, ubus)",
    );
    one(
        &[(&format!("{c}/http"), json!({}))],
        "vips[0].check.http: a http block does not apply to a tcp check",
    );
    // A check that is not an object is one error, not also "no checks".
    one(
        &checks(json!(["tcp"])),
        "vips[0].checks[0]: \"tcp\" is not an object",
    );
    one(&[("/vips/1", json!(7))], "vips[1]: 7 is not an object");
    one(
        &[("/bgp/neighbors/0", json!("bird"))],
        "bgp.neighbors[0]: \"bird\" is not an object",
    );
    // A bad interval is one error, not also a timeout comparison.
    one(
        &[(&format!("{c}/interval"), json!("1"))],
        "vips[0].check.interval: \"1\" is not a duration such as \"500ms\", \"2s\" or \"1m30s\"",
    );
}

fn chk(c: Value) -> [(&'static str, Value); 1] {
    [("/vips/0/check", c)]
}

fn net(c: Value) -> [(&'static str, Value); 2] {
    [
        ("/vips/0/prefix", json!("192.0.2.0/24")),
        ("/vips/0/check", c),
    ]
}

#[test]
fn host_needed_for_network_prefixes() {
    let why = "required because prefix 192.0.2.0/24 is not a single address (/32 or /128)";
    one(
        &net(json!({"type": "tcp", "tcp": {"port": 80}})),
        &format!("vips[0].check.tcp.host: {why}"),
    );
    one(
        &net(json!({"type": "udp", "udp": {"port": 53}})),
        &format!("vips[0].check.udp.host: {why}"),
    );
    one(
        &net(json!({"type": "grpc", "grpc": {"port": 50051}})),
        &format!("vips[0].check.grpc.host: {why}"),
    );
    one(
        &net(json!({"type": "http"})),
        &format!("vips[0].check.http.host: {why}"),
    );
    one(
        &net(json!({"type": "dns", "dns": {"names": ["a."]}})),
        &format!("vips[0].check.dns.resolver: {why}"),
    );
    one(
        &net(json!({"type": "ping"})),
        &format!("vips[0].check.ping.dst_ip: {why}"),
    );
    // A full URL names its host.
    one(
        &[
            ("/vips/0/prefix", json!("192.0.2.0/24")),
            (
                "/vips/0/check",
                json!({"type": "http", "http": {"url": "http://example.com/"}}),
            ),
            ("/schema", json!("x")),
        ],
        "schema: unsupported version \"x\" (expected \"v1\")",
    );
}

#[test]
fn http_rules() {
    let h = |o: Value| chk(json!({"type": "http", "http": o}));
    let hs = |o: Value| chk(json!({"type": "https", "http": o}));
    one(&h(json!({"url": "ftp://x/"})),
        "vips[0].check.http.url: \"ftp://x/\" must be a path such as /healthz or an http:// or https:// URL");
    one(
        &hs(json!({"url": "http://x/"})),
        "vips[0].check.http.url: \"http://x/\" is http:// but the check type is https",
    );
    one(
        &h(json!({"port": 0})),
        "vips[0].check.http.port: 0 is not a port (1..65535)",
    );
    one(
        &h(json!({"response_codes": []})),
        "vips[0].check.http.response_codes: at least one code is required",
    );
    one(&h(json!({"response_codes": [99]})),
        "vips[0].check.http.response_codes[0]: 99 is not a status code (100..599) or range such as \"200-299\"");
    one(&h(json!({"response_regex": "("})),
        "vips[0].check.http.response_regex: \"(\" does not compile: found open group without closing ')'");
    let e = crate::check::jsonmatch::parse(".ready ==").unwrap_err();
    one(
        &h(json!({"response_jq": ".ready =="})),
        &format!("vips[0].check.http.response_jq: \".ready ==\": {e}"),
    );
    one(
        &h(json!({"method": "HEAD", "response_text": "ok"})),
        "vips[0].check.http.response_text: cannot be checked: a HEAD response has no body",
    );
    one(
        &h(json!({"method": "PUT"})),
        "vips[0].check.http.method: \"PUT\" is not one of GET, HEAD, POST",
    );
    one(
        &h(json!({"proxy": "socks5://p:1"})),
        "vips[0].check.http.proxy: \"socks5://p:1\" is not an http:// or https:// proxy URL",
    );
    one(&h(json!({"proxy": "http://p:3128", "url": "http://10.0.0.1/"})),
        "vips[0].check.http.proxy: needs url to be a full URL with a host name (the proxy connects by name)");
    one(
        &hs(json!({"tls_insecure": true, "tls_ca_cert": "/etc/ca.pem"})),
        "vips[0].check.http.tls_insecure: cannot be combined with tls_ca_cert",
    );
    one(
        &hs(json!({"tls_client_cert": "/c.pem"})),
        "vips[0].check.http.tls_client_key: required with tls_client_cert",
    );
    one(&h(json!({"tls_insecure": true})),
        "vips[0].check.http.tls_insecure: has no effect without TLS (type https or an https:// url)");
    one(
        &h(json!({"headers": {"X Bad": "1"}})),
        "vips[0].check.http.headers.X Bad: \"X Bad\" is not a valid header name",
    );
    one(
        &h(json!({"headers": {"X-Ok": "a\r\nInjected: 1"}})),
        "vips[0].check.http.headers.X-Ok: value contains a line break or NUL",
    );
    one(
        &h(json!({"host": ""})),
        "vips[0].check.http.host: must not be empty",
    );
    // type http with an https:// URL is how pathosd's examples spell TLS.
    one(
        &[
            (
                "/vips/0/check",
                json!({"type": "http", "http": {"url": "https://web.example.com/healthz", "tls_insecure": true}}),
            ),
            ("/schema", json!("x")),
        ],
        "schema: unsupported version \"x\" (expected \"v1\")",
    );
}

#[test]
fn other_type_rules() {
    one(
        &chk(json!({"type": "dns"})),
        "vips[0].check.dns.names: at least one name is required",
    );
    one(
        &chk(json!({"type": "dns", "dns": {"names": [" "]}})),
        "vips[0].check.dns.names[0]: must not be empty",
    );
    one(&chk(json!({"type": "dns", "dns": {"names": ["a."], "query_type": "a"}})),
        "vips[0].check.dns.query_type: \"a\" is not one of A, AAAA, CNAME, MX, TXT, SRV, PTR, NS, SOA");
    one(
        &chk(json!({"type": "ping", "ping": {"count": 0}})),
        "vips[0].check.ping.count: 0 is not in 1..60",
    );
    one(
        &chk(json!({"type": "ping", "ping": {"count": 61}})),
        "vips[0].check.ping.count: 61 is not in 1..60",
    );
    one(
        &chk(json!({"type": "ping", "ping": {"max_loss_ratio": 1}})),
        "vips[0].check.ping.max_loss_ratio: 1 is not in [0, 1)",
    );
    one(&chk(json!({"type": "ping", "timeout": "800ms", "ping": {"count": 3, "interval": "400ms"}})),
        "vips[0].check.ping.interval: (count - 1) x interval = 800ms must be less than the check timeout 800ms");
    one(
        &chk(json!({"type": "ping", "ping": {"dst_ip": "::1", "src_ip": "127.0.0.1"}})),
        "vips[0].check.ping.src_ip: 127.0.0.1 and dst_ip ::1 are of different address families",
    );
    one(
        &chk(json!({"type": "tcp"})),
        "vips[0].check.tcp.port: required (1..65535)",
    );
    one(
        &chk(json!({"type": "udp", "udp": {"port": 53, "payload": "x", "payload_hex": "00"}})),
        "vips[0].check.udp.payload_hex: cannot be combined with payload",
    );
    one(
        &chk(json!({"type": "udp", "udp": {"port": 53, "payload_hex": "0g"}})),
        "vips[0].check.udp.payload_hex: \"0g\" is not hex (an even number of 0-9a-f digits)",
    );
    one(
        &chk(json!({"type": "grpc"})),
        "vips[0].check.grpc.port: required (1..65535)",
    );
    one(
        &chk(json!({"type": "grpc", "grpc": {"port": 1, "tls_insecure": true}})),
        "vips[0].check.grpc.tls_insecure: has no effect unless tls is true",
    );
    one(
        &chk(
            json!({"type": "grpc", "grpc": {"port": 1, "tls": true, "tls_insecure": true, "tls_ca_cert": "/ca"}}),
        ),
        "vips[0].check.grpc.tls_insecure: cannot be combined with tls_ca_cert",
    );
    one(&chk(json!({"type": "grpc", "grpc": {"port": 1, "ok_codes": ["OK", "NotFound", "not_found", "Nope"]}})),
        "vips[0].check.grpc.ok_codes[3]: \"Nope\" is not a gRPC status code such as OK or NOT_FOUND");
    one(
        &chk(json!({"type": "grpc", "grpc": {"port": 1, "method": "Ping"}})),
        "vips[0].check.grpc.method: \"Ping\" is not a method such as /pkg.Service/Method",
    );
    one(
        &chk(json!({"type": "exec"})),
        "vips[0].check.exec.command: required",
    );
    one(
        &chk(json!({"type": "exec", "exec": {"command": "/bin/true", "args": ["-x"]}, "extra": 1})),
        "vips[0].check.extra: unknown field",
    );
}

#[test]
fn helpers() {
    assert_eq!(grpc_code("DeadlineExceeded"), Some(4));
    assert_eq!(grpc_code("deadline_exceeded"), Some(4));
    assert_eq!(grpc_code("Canceled"), Some(1));
    assert_eq!(grpc_code("OKAY"), None);
    assert_eq!(
        split_url("https://[2001:db8::1]:8443/x?y").unwrap(),
        UrlParts {
            https: true,
            host: "2001:db8::1".into(),
            port: Some(8443),
            path: "/x?y".into()
        }
    );
    assert_eq!(split_url("http://a?q").unwrap().path, "/?q");
    assert_eq!(split_url("http://a:0/"), None);
    assert_eq!(split_url("http://u:p@a/"), None);
    assert_eq!(split_url("http:///x"), None);
    assert_eq!(listen_addr("[::1]:80"), Some("[::1]:80".parse().unwrap()));
}

/// `prefix` as a list: every prefix keeps the one prefix's rules, and each
/// error names the item (`prefix[1]`) and its value; a VIP with one prefix
/// is named as before.
#[test]
fn a_prefix_list_keeps_the_rules_of_each_prefix() {
    let mut v = base();
    v["router"]["local_address_ipv6"] = json!("2001:db8::ff");
    v["vips"][0]["prefix"] = json!(["192.0.2.10/32", "2001:db8::10/128"]);
    let r = run(v.clone());
    assert_eq!(r.vips[0].prefix.to_string(), "192.0.2.10/32");
    assert_eq!(
        r.vips[0]
            .prefixes()
            .map(|p| p.to_string())
            .collect::<Vec<_>>(),
        ["192.0.2.10/32", "2001:db8::10/128"]
    );
    // pathosd convert keeps a list a list, and one prefix a string.
    let back: Value =
        serde_json::from_str(&crate::config::convert::to_json(&loaded(v.clone()))).unwrap();
    assert_eq!(
        back["vips"][0]["prefix"],
        json!(["192.0.2.10/32", "2001:db8::10/128"])
    );
    let back: Value =
        serde_json::from_str(&crate::config::convert::to_json(&loaded(base()))).unwrap();
    assert_eq!(back["vips"][0]["prefix"], json!("192.0.2.10/32"));
    // The IPv6 next hop is asked for by the IPv6 item.
    let mut w = v.clone();
    w["router"]
        .as_object_mut()
        .unwrap()
        .remove("local_address_ipv6");
    assert_eq!(
        errors(&w),
        ["router.local_address_ipv6: required because vips[0].prefix[1] 2001:db8::10/128 is IPv6 (it is the IPv6 next hop)"]
    );
    let bad = |prefix: Value| {
        let mut w = v.clone();
        w["vips"][0]["prefix"] = prefix;
        errors(&w)
    };
    assert_eq!(
        bad(json!(["192.0.2.10/32", "2001:db8::zz/128"])),
        ["vips[0].prefix[1]: \"2001:db8::zz/128\" is not a valid prefix (\"2001:db8::zz\" is not an IP address)"]
    );
    assert_eq!(
        bad(json!([])),
        ["vips[0].prefix: an empty list: give at least one prefix"]
    );
    assert_eq!(
        bad(json!(["192.0.2.10/32", "192.0.2.10/32"])),
        ["vips[0].prefix[1]: duplicate prefix 192.0.2.10/32 (also vips[0].prefix[0])"]
    );
    assert_eq!(
        bad(json!(["192.0.2.10/32", "0.0.0.0/0"])),
        ["vips[0].prefix[1]: 0.0.0.0/0 is a default route: announced, it draws all of the peers' traffic to this router (set allow_default_route: true if that is meant)"]
    );
    let many: Vec<String> = (0..17).map(|i| format!("192.0.2.{i}/32")).collect();
    assert_eq!(
        bad(json!(many)),
        ["vips[0].prefix: 17 prefixes, more than the limit of 16"]
    );
    // Across VIPs: a list item against another VIP's one prefix, both ways.
    let mut w = v.clone();
    w["vips"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "b", "prefix": "2001:db8::10/128", "always": true}));
    assert_eq!(
        errors(&w),
        ["vips[1].prefix: duplicate prefix 2001:db8::10/128 (also vips[0].prefix[1])"]
    );
    w["vips"][1]["prefix"] = json!(["198.51.100.1/32", "192.0.2.10/32"]);
    assert_eq!(
        errors(&w),
        ["vips[1].prefix[1]: duplicate prefix 192.0.2.10/32 (also vips[0].prefix[0])"]
    );
    // A failed list takes no part in the duplicate rule.
    w["vips"][1]["prefix"] = json!(["192.0.2.10/33"]);
    assert_eq!(errors(&w).len(), 1, "{:?}", errors(&w));
}
