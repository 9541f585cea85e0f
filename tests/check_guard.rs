//! The local address guard against real interfaces: inside a network
//! namespace the test creates, a VIP check fails with an explicit detail
//! while its address is missing, passes once `ip addr add` puts it on the
//! named interface, and fails again when it moves to another interface.
//!
//! `guard_in_namespace` re-runs this test binary inside the namespace for
//! `inner_guard`, which is ignored in normal runs.

mod support;

use pathosd::check::scheduler::{self, CheckLoop};
use pathosd::config::{Errors, Field, Vip};
use pathosd::daemon::engine::CheckId;
use serde_json::json;
use support::netns::{ip, run_ignored_in, Netns};

const ENV: &str = "PATHOSD_GUARD_NETNS";

#[test]
fn guard_in_namespace() {
    let ns = Netns(format!("pathosd-guard-{}", std::process::id()));
    ip(&["netns", "add", &ns.0]);
    ip(&["netns", "exec", &ns.0, "ip", "link", "set", "lo", "up"]);
    // No dummy module on every kernel; a veth pair gives a named second interface.
    ip(&[
        "netns", "exec", &ns.0, "ip", "link", "add", "vip0", "type", "veth", "peer", "name", "vip1",
    ]);
    ip(&["netns", "exec", &ns.0, "ip", "link", "set", "vip0", "up"]);
    run_ignored_in(&ns.0, "inner_guard", ENV);
}

fn run(vc: &[CheckLoop]) -> pathosd::check::CheckResult {
    smol::block_on(vc[0].run_once())
}

#[test]
#[ignore = "run by guard_in_namespace"]
fn inner_guard() {
    let ns = std::env::var(ENV).expect("runs only inside guard_in_namespace's namespace");
    assert!(ns.starts_with("pathosd-guard-"));
    let mut errs = Errors::default();
    let vip = Vip::decode(
        &json!({
            "name": "web", "prefix": "10.77.0.1/32",
            "require_local_address": true, "local_interface": "vip0",
            "check": {"type": "exec", "exec": {"command": "/bin/true"}}
        }),
        "vip",
        &mut errs,
    )
    .unwrap();
    assert!(errs.is_empty(), "{errs:?}");
    let vip = pathosd::config::run::vip_spec(vip).expect("a valid VIP");
    let vc = scheduler::build(&vip, &[CheckId(0)]).unwrap();

    let r = run(&vc);
    assert!(!r.ok);
    assert_eq!(
        r.detail,
        "VIP address 10.77.0.1 is not configured on interface vip0"
    );
    assert_eq!(r.details["local_address_assigned"], json!(false));

    // On the wrong interface it still fails.
    ip(&["addr", "add", "10.77.0.1/32", "dev", "lo"]);
    assert!(!run(&vc).ok);
    ip(&["addr", "del", "10.77.0.1/32", "dev", "lo"]);

    ip(&["addr", "add", "10.77.0.1/32", "dev", "vip0"]);
    let r = run(&vc);
    assert!(r.ok, "{r:?}");
    assert_eq!(r.details["local_address_assigned"], json!(true));

    ip(&["addr", "del", "10.77.0.1/32", "dev", "vip0"]);
    assert!(!run(&vc).ok);
}
