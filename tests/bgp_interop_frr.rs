//! Smoke test against a real FRR bgpd: the session comes up and a route
//! from pathosd arrives with its AS path and community.

mod support;

use std::net::Ipv4Addr;
use std::time::Duration;

use pathosd::bgp::types::{Community, RouteIntent};
use support::frr::Frr;
use support::{poll, Addrs};

/// Waits (8 s at most) until FRR shows the session Established.
fn wait_established(frr: &Frr, speaker: &support::TestSpeaker) {
    let up = poll(Duration::from_secs(8), || {
        (frr.bgp_state().as_deref() == Some("Established")).then_some(())
    });
    assert!(
        up.is_some(),
        "FRR says {:?}, we say {:?}",
        frr.bgp_state(),
        speaker.peers()
    );
}

#[test]
fn frr_establishes_and_receives_a_route() {
    support::init_log();
    let a = Addrs::new(40);
    let frr = Frr::start(a.peer, a.ours);
    let (tx, _rx) = pathosd::chan::unbounded();
    // FRR refuses a 127/8 NEXT_HOP: see support::config_with_next_hop.
    let cfg = support::config_with_next_hop(a, Ipv4Addr::new(192, 0, 2, 40));
    let speaker = {
        let cfg = cfg.clone();
        support::TestSpeaker::start(&cfg, tx)
    }
    .unwrap();
    speaker.mark_initial_done();
    wait_established(&frr, &speaker);
    speaker.set_route(
        "10.140.1.1/32".parse().unwrap(),
        Some(RouteIntent {
            as_path_prepend: 1,
            communities: vec![Community(65001, 140)],
            large_communities: Vec::new(),
            ..RouteIntent::default()
        }),
    );
    let route = poll(Duration::from_secs(5), || frr.route("10.140.1.1/32")).unwrap_or_else(|| {
        panic!(
            "FRR has no route: {:?}; we say {:?}",
            frr.vtysh("show bgp ipv4 unicast"),
            speaker.peers()
        )
    });
    let text = route.to_string();
    assert!(text.contains("65001 65001"), "{text}");
    assert!(text.contains("192.0.2.40"), "{text}");
}

#[test]
fn frr_md5_session_establishes() {
    support::init_log();
    let a = Addrs::new(42);
    let frr = Frr::start_with_password(a.peer, a.ours, Some("frr-md5-42"));
    let mut cfg = support::config_with_next_hop(a, Ipv4Addr::new(192, 0, 2, 42));
    cfg.bgp.neighbors[0].auth_password = Some("frr-md5-42".into());
    let (tx, _rx) = pathosd::chan::unbounded();
    let speaker = {
        let cfg = cfg.clone();
        support::TestSpeaker::start(&cfg, tx)
    }
    .unwrap();
    wait_established(&frr, &speaker);
}
