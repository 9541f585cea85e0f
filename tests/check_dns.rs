//! dns probe against Debian's dnsmasq (the DNS server OpenWrt ships),
//! started by each test on its own 127.x address.

mod support;

use serde_json::{json, Value};
use support::*;

/// Returns the server, its port and its directory (kept while it runs).
fn dnsmasq(ip: &str, tag: &str) -> (Server, u16, TempDir) {
    let dir = temp_dir(tag);
    let port = free_udp_port(ip);
    let big = "x".repeat(200);
    let s = Server::spawn(
        std::process::Command::new("/usr/sbin/dnsmasq")
            .args([
                "-k",
                "--conf-file=/dev/null",
                "--bind-interfaces",
                "--no-resolv",
                "--no-hosts",
            ])
            .args(["--user=root", "--log-facility=/dev/null"])
            .arg(format!("--listen-address={ip}"))
            .arg(format!("--port={port}"))
            .arg(format!("--pid-file={}", dir.join("dnsmasq.pid").display()))
            .args([
                "--host-record=web.pathosd.test,10.1.2.3,2001:db8::3",
                "--host-record=web2.pathosd.test,10.1.2.4",
                "--address=/nx.pathosd.test/",
                // Answer pathosd.test from local data only: NODATA, not REFUSED.
                "--local=/pathosd.test/",
                "--txt-record=txt.pathosd.test,hello pathosd",
                "--txt-record=addr.pathosd.test,2001:db8:0::5",
                "--mx-host=pathosd.test,mail.pathosd.test,10",
                "--srv-host=_http._tcp.pathosd.test,web.pathosd.test,80",
                "--cname=alias.pathosd.test,web.pathosd.test",
            ])
            // Three 200+ byte TXT records: the UDP reply is truncated.
            .arg(format!("--txt-record=big.pathosd.test,{big}"))
            .arg(format!("--txt-record=big.pathosd.test,1{big}"))
            .arg(format!("--txt-record=big.pathosd.test,2{big}")),
        false,
    );
    // dnsmasq also answers on TCP: ready once that port accepts.
    wait_tcp(&format!("{ip}:{port}"));
    (s, port, dir)
}

fn dns(ip: &str, port: u16, opts: Value) -> pathosd::check::CheckResult {
    let mut o = opts;
    o["port"] = json!(port);
    probe(
        json!({"type": "dns", "timeout": "2s", "interval": "5s", "dns": o}),
        &format!("{ip}/32"),
    )
}

#[test]
fn answers_for_every_query_type() {
    let ip = test_ip(40).to_string();
    let (_d, port, _dir) = dnsmasq(&ip, "dns-types");
    let cases = [
        ("web.pathosd.test", "A", "10.1.2.3"),
        ("web.pathosd.test.", "AAAA", "2001:db8::3"),
        ("alias.pathosd.test", "CNAME", "web.pathosd.test"),
        ("pathosd.test", "MX", "mail.pathosd.test"),
        ("txt.pathosd.test", "TXT", "hello pathosd"),
        ("_http._tcp.pathosd.test", "SRV", "web.pathosd.test."),
        ("3.2.1.10.in-addr.arpa", "PTR", "web.pathosd.test"),
    ];
    for (name, qt, want) in cases {
        let r = dns(
            &ip,
            port,
            json!({"names": [name], "query_type": qt, "expected_answers": [want]}),
        );
        assert!(r.ok, "{qt} {name}: {r:?}");
        assert_eq!(r.detail, format!("DNS OK: {name}"));
    }
    // Any answer passes when none is listed; every name must pass.
    let r = dns(
        &ip,
        port,
        json!({"names": ["web.pathosd.test", "web2.pathosd.test"]}),
    );
    assert!(r.ok, "{r:?}");
    assert_eq!(r.details["answers"], json!(["10.1.2.3", "10.1.2.4"]));
}

#[test]
fn failure_modes() {
    let ip = test_ip(41).to_string();
    let (_d, port, _dir) = dnsmasq(&ip, "dns-fail");
    let r = dns(
        &ip,
        port,
        json!({"names": ["web.pathosd.test", "nx.pathosd.test"]}),
    );
    assert!(!r.ok);
    assert_eq!(r.detail, "query nx.pathosd.test: rcode NXDOMAIN");
    // NXDOMAIN can be the expected outcome.
    let r = dns(
        &ip,
        port,
        json!({"names": ["nx.pathosd.test"], "expected_rcode": "NXDOMAIN"}),
    );
    assert!(r.ok, "{r:?}");
    let r = dns(&ip, port, json!({"names": ["elsewhere.example"]}));
    assert_eq!(r.detail, "query elsewhere.example: rcode REFUSED");
    // NOERROR without answers (web2 has no IPv6 address).
    let r = dns(
        &ip,
        port,
        json!({"names": ["web2.pathosd.test"], "query_type": "AAAA"}),
    );
    assert_eq!(r.detail, "query web2.pathosd.test: no answers");
    let r = dns(&ip, port, json!({"names": ["nothere.pathosd.test"]}));
    assert_eq!(r.detail, "query nothere.pathosd.test: rcode NXDOMAIN");
    // Expected addresses are compared by value: with the AAAA answer, and
    // with a TXT answer whose text is an address.
    for (name, qtype) in [("web.pathosd.test", "AAAA"), ("addr.pathosd.test", "TXT")] {
        let want = if qtype == "TXT" {
            "2001:db8::5"
        } else {
            "2001:db8:0::3"
        };
        let r = dns(
            &ip,
            port,
            json!({"names": [name], "query_type": qtype, "expected_answers": [want]}),
        );
        assert!(r.ok, "{r:?}");
    }
    let r = dns(
        &ip,
        port,
        json!({"names": ["web.pathosd.test"], "expected_answers": ["10.9.9.9"]}),
    );
    assert_eq!(
        r.detail,
        "query web.pathosd.test: answers [10.1.2.3] lack all of [10.9.9.9]"
    );
    // any: one listed answer suffices; all: every listed answer must appear.
    let any =
        json!({"names": ["alias.pathosd.test"], "expected_answers": ["10.1.2.3", "10.9.9.9"]});
    assert!(dns(&ip, port, any.clone()).ok);
    let mut all = any;
    all["expected_match"] = json!("all");
    let r = dns(&ip, port, all);
    assert_eq!(
        r.detail,
        "query alias.pathosd.test: answers [web.pathosd.test, 10.1.2.3] lack some of [10.9.9.9]"
    );
}

#[test]
fn truncated_reply_falls_back_to_tcp() {
    let ip = test_ip(42).to_string();
    let (_d, port, _dir) = dnsmasq(&ip, "dns-tcp");
    let r = dns(
        &ip,
        port,
        json!({"names": ["big.pathosd.test"], "query_type": "TXT", "expected_answers": [format!("2{}", "x".repeat(200))]}),
    );
    assert!(r.ok, "{r:?}");
    assert_eq!(r.details["tcp"], json!(true));
    let r = dns(
        &ip,
        port,
        json!({"names": ["txt.pathosd.test"], "query_type": "TXT"}),
    );
    assert_eq!(r.details["tcp"], json!(false));
}

#[test]
fn no_server() {
    let ip = test_ip(43).to_string();
    let port = free_udp_port(ip.as_str());
    let r = dns(&ip, port, json!({"names": ["web.pathosd.test"]}));
    assert!(!r.ok);
    assert_eq!(
        r.detail,
        format!("query web.pathosd.test: server {ip}:{port}: connection refused")
    );
}

#[test]
fn silent_server_times_out() {
    let ip = test_ip(44).to_string();
    let srv = py_server(&["udp-silent", &ip]);
    let r = probe(
        json!({"type": "dns", "timeout": "300ms", "dns": {"resolver": ip, "port": srv.port(), "names": ["a.test"]}}),
        "10.0.0.0/8",
    );
    assert!(!r.ok);
    assert!(
        r.detail.ends_with("no reply") || r.detail.ends_with("timed out after 300ms"),
        "{}",
        r.detail
    );
    assert!(r.duration < std::time::Duration::from_millis(1000));
}

#[test]
fn resolver_required_for_network_prefix() {
    // A config error (validation resolves the resolver the probe uses).
    assert_eq!(
        check_errors(
            json!({"type": "dns", "dns": {"names": ["a.test"]}}),
            "10.0.0.0/24"
        ),
        ["vips[0].check.dns.resolver: required because prefix 10.0.0.0/24 is not a single address (/32 or /128)"]
    );
}
