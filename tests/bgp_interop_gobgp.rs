//! Smoke test against a real gobgpd: the session comes up and a route from
//! pathosd arrives in its global RIB with our AS path.

mod support;

use std::net::Ipv4Addr;
use std::time::Duration;

use pathosd::bgp::types::{Community, RouteIntent};
use support::gobgp::Gobgp;
use support::{poll, Addrs};

#[test]
fn gobgpd_establishes_and_receives_a_route() {
    support::init_log();
    let a = Addrs::new(41);
    let g = Gobgp::start(a.peer, a.ours);
    let (tx, _rx) = pathosd::chan::unbounded();
    // GoBGP ignores a 127/8 NEXT_HOP: see support::config_with_next_hop.
    let cfg = support::config_with_next_hop(a, Ipv4Addr::new(192, 0, 2, 41));
    let speaker = {
        let cfg = cfg.clone();
        support::TestSpeaker::start(&cfg, tx)
    }
    .unwrap();
    speaker.mark_initial_done();
    let up = poll(Duration::from_secs(8), || {
        (g.bgp_state().as_deref() == Some("Establ")).then_some(())
    });
    assert!(
        up.is_some(),
        "gobgpd says {:?}, we say {:?}",
        g.bgp_state(),
        speaker.peers()
    );
    speaker.set_route(
        "10.141.1.1/32".parse().unwrap(),
        Some(RouteIntent {
            as_path_prepend: 0,
            communities: vec![Community(65001, 141)],
            large_communities: Vec::new(),
            ..RouteIntent::default()
        }),
    );
    let route = poll(Duration::from_secs(5), || g.route("10.141.1.1/32")).unwrap_or_else(|| {
        panic!(
            "gobgpd has no route: {:?}; we say {:?}; log: {}",
            g.cli(&["global", "rib"]),
            speaker.peers(),
            std::fs::read_to_string(g.dir.path("gobgpd.log")).unwrap_or_default()
        )
    });
    let text = route.to_string();
    assert!(text.contains("65001"), "{text}");
    assert!(text.contains("192.0.2.41"), "{text}");
}
