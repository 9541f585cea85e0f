//! grpc probes against a real Python grpcio server (grpcio-health-checking
//! for grpc.health.v1), over h2c and TLS.

mod support;

use serde_json::{json, Value};
use std::process::Command;
use support::*;

fn grpc_server(args: &[&str]) -> Server {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/grpc_server.py");
    Server::spawn(
        Command::new("python3")
            .arg(script)
            .args(args)
            .env("GRPC_VERBOSITY", "NONE"),
        true,
    )
}

fn grpc(vip: &str, opts: Value) -> pathosd::check::CheckResult {
    probe(
        json!({"type": "grpc", "timeout": "3s", "interval": "5s", "grpc": opts}),
        vip,
    )
}

#[test]
fn health_check_over_h2c() {
    let ip = test_ip(60).to_string();
    let srv = grpc_server(&[&ip]);
    let vip = format!("{ip}/32");
    let port = srv.port();
    let r = grpc(&vip, json!({"port": port}));
    assert!(r.ok, "{r:?}");
    assert_eq!(r.detail, "grpc health: SERVING");
    let r = grpc(&vip, json!({"port": port, "service": "web"}));
    assert!(r.ok, "{r:?}");
    let r = grpc(&vip, json!({"port": port, "service": "down"}));
    assert!(!r.ok);
    assert_eq!(r.detail, "grpc health: NOT_SERVING");
    let r = grpc(&vip, json!({"port": port, "service": "nope"}));
    assert!(!r.ok);
    assert!(
        r.detail.starts_with("grpc health: status NOT_FOUND (5)"),
        "{}",
        r.detail
    );
    // Repeated probes each use a fresh connection.
    for _ in 0..5 {
        assert!(grpc(&vip, json!({"port": port})).ok);
    }
}

#[test]
fn unary_methods_ok_codes_and_metadata() {
    let ip = test_ip(61).to_string();
    let srv = grpc_server(&[&ip]);
    let vip = format!("{ip}/32");
    let port = srv.port();
    let r = grpc(&vip, json!({"port": port, "method": "test.Probe/Ok"}));
    assert!(r.ok, "{r:?}");
    assert_eq!(r.detail, "grpc /test.Probe/Ok: status OK (0)");
    let r = grpc(
        &vip,
        json!({"port": port, "method": "/test.Probe/NotFound"}),
    );
    assert!(!r.ok);
    assert_eq!(
        r.detail,
        "grpc /test.Probe/NotFound: status NOT_FOUND (5) not in [OK]: no such thing"
    );
    let r = grpc(
        &vip,
        json!({"port": port, "method": "/test.Probe/NotFound", "ok_codes": ["OK", "NotFound"]}),
    );
    assert!(r.ok, "{r:?}");
    // An unknown method is UNIMPLEMENTED.
    let r = grpc(&vip, json!({"port": port, "method": "/test.Probe/Missing"}));
    assert!(r.detail.contains("UNIMPLEMENTED (12)"), "{}", r.detail);
    let r = grpc(&vip, json!({"port": port, "method": "/test.Probe/Meta"}));
    assert!(r.detail.contains("UNAUTHENTICATED (16)"), "{}", r.detail);
    let r = grpc(
        &vip,
        json!({"port": port, "method": "/test.Probe/Meta", "metadata": {"X-Token": "s3cret"}}),
    );
    assert!(r.ok, "{r:?}");
}

#[test]
fn tls_with_ca_server_name_and_insecure() {
    let ip = test_ip(62).to_string();
    let dir = temp_dir("grpc-tls");
    let pki = pki(&dir, &ip);
    let srv = grpc_server(&[&ip, "--tls", &pki.cert, &pki.key]);
    let vip = format!("{ip}/32");
    let port = srv.port();
    let r = grpc(
        &vip,
        json!({"port": port, "tls": true, "tls_ca_cert": pki.ca}),
    );
    assert!(r.ok, "{r:?}");
    let r = grpc(
        &vip,
        json!({"port": port, "tls": true, "tls_ca_cert": pki.ca, "tls_server_name": "web.pathosd.test", "method": "/test.Probe/Ok"}),
    );
    assert!(r.ok, "{r:?}");
    let r = grpc(
        &vip,
        json!({"port": port, "tls": true, "tls_ca_cert": pki.ca, "tls_server_name": "other.pathosd.test"}),
    );
    assert!(!r.ok);
    assert!(r.detail.contains("not valid for name"), "{}", r.detail);
    let r = grpc(&vip, json!({"port": port, "tls": true}));
    assert!(!r.ok);
    assert!(r.detail.contains("UnknownIssuer"), "{}", r.detail);
    let r = grpc(
        &vip,
        json!({"port": port, "tls": true, "tls_insecure": true}),
    );
    assert!(r.ok, "{r:?}");
    // Plaintext against the TLS port fails.
    let r = grpc(&vip, json!({"port": port}));
    assert!(!r.ok, "{r:?}");
}

#[test]
fn connection_refused_and_config_errors() {
    let ip = test_ip(63).to_string();
    let port = free_tcp_port(ip.as_str());
    let r = grpc(&format!("{ip}/32"), json!({"port": port}));
    assert_eq!(r.detail, format!("connect {ip}:{port}: connection refused"));
    let e = |o: Value| {
        build_probe(check(json!({"type": "grpc", "grpc": o})), "10.0.0.1/32").unwrap_err()
    };
    // Status names are resolved by validation, which names the entry; a
    // check that fails it never gets a target, so no probe is built.
    assert_eq!(
        check_errors(
            json!({"type": "grpc", "grpc": {"port": 1, "ok_codes": ["OK", "Bogus"]}}),
            "10.0.0.1/32"
        ),
        ["vips[0].check.grpc.ok_codes[1]: \"Bogus\" is not a gRPC status code such as OK or NOT_FOUND"]
    );
    assert_eq!(
        e(json!({"port": 1, "tls_insecure": true})),
        "tls_insecure, tls_ca_cert and tls_server_name need tls: true"
    );
}

#[test]
fn not_an_http2_server() {
    let ip = test_ip(64).to_string();
    // Speaks a text banner, then waits 2 s: never HTTP/2.
    let srv = py_server(&["tcp-banner", &ip, "220 smtp ready\r\n"]);
    let r = probe(
        json!({"type": "grpc", "timeout": "500ms", "grpc": {"port": srv.port()}}),
        &format!("{ip}/32"),
    );
    assert!(!r.ok);
    assert!(r.detail.starts_with(&format!("grpc {ip}:")), "{}", r.detail);
    assert!(r.duration < std::time::Duration::from_millis(1000));
}

#[test]
fn ipv6_h2c() {
    let srv = grpc_server(&["::1"]);
    let r = grpc("::1/128", json!({"port": srv.port()}));
    assert!(r.ok, "{r:?}");
}
