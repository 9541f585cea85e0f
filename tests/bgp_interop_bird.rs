//! pathosd's BGP speaker against a real BIRD 2 on loopback. Each test has
//! its own 127.x.y.0/24 (see support::Addrs), BIRD instance and speaker, and
//! asserts what BIRD itself reports through birdc.

mod support;

use std::net::IpAddr;
use std::time::{Duration, Instant};

use pathosd::bgp::driver::PeerEvent;
use pathosd::bgp::types::{Community, LargeCommunity, Prefix, RouteIntent};
use pathosd::chan::Rx;
use pathosd::config::Config;
use support::bird::{attr, Bird, BirdPeer};
use support::{poll, Addrs};

struct Setup {
    bird: Bird,
    // Lives on the daemon thread of support::on_rt, where its sessions run.
    speaker: support::TestSpeaker,
    addrs: Addrs,
    /// The speaker's session changes.
    events: Rx<PeerEvent>,
    started: Instant,
}

fn setup(block: u8, bird: impl FnOnce(&mut BirdPeer), ours: impl FnOnce(&mut Config)) -> Setup {
    support::init_log();
    let addrs = Addrs::new(block);
    let mut peer = BirdPeer::new(addrs.peer, addrs.ours);
    bird(&mut peer);
    let bird = Bird::start(peer);
    let mut cfg = support::config(addrs);
    ours(&mut cfg);
    let (tx, rx) = pathosd::chan::unbounded();
    let started = Instant::now();
    let speaker = {
        let cfg = cfg.clone();
        support::TestSpeaker::start(&cfg, tx).unwrap()
    };
    speaker.mark_initial_done();
    Setup {
        bird,
        speaker,
        addrs,
        events: rx,
        started,
    }
}

impl Setup {
    fn wait_established(&self, timeout: Duration) {
        let ok = poll(timeout, || self.bird.established().then_some(()));
        assert!(
            ok.is_some(),
            "not Established: bird says {:?}, we say {:?}\n{}",
            self.bird.bgp_state(),
            self.speaker.peers(),
            self.bird.log()
        );
    }

    fn wait_route(&self, prefix: &str, pred: impl Fn(&str) -> bool) -> String {
        poll(Duration::from_secs(5), || {
            self.bird.route(prefix).filter(|b| pred(b))
        })
        .unwrap_or_else(|| {
            panic!(
                "BIRD never showed the expected {prefix}: {:?}",
                self.bird.route(prefix)
            )
        })
    }

    fn wait_gone(&self, prefix: &str) {
        let gone = poll(Duration::from_secs(8), || {
            self.bird.route(prefix).is_none().then_some(())
        });
        assert!(gone.is_some(), "{prefix} still in BIRD");
    }

    /// The next session state change, waiting at most `limit`; with the
    /// time it was received (the test thread waits on the channel, so that
    /// is within microseconds of the transition).
    fn next_event(&self, limit: Duration) -> Option<(PeerEvent, Instant)> {
        smol::block_on(smol::future::or(
            async { self.events.recv().await.ok() },
            async {
                smol::Timer::after(limit).await;
                None
            },
        ))
        .map(|e| (e, Instant::now()))
    }

    /// Waits (bounded) for a transition `from` -> `to`, skipping others.
    fn wait_event(&self, from: &str, to: &str, limit: Duration) -> (PeerEvent, Instant) {
        let end = Instant::now() + limit;
        let mut seen = Vec::new();
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            match self.next_event(left) {
                Some((e, at)) if e.from.as_str() == from && e.to.as_str() == to => return (e, at),
                Some((e, _)) => seen.push(e),
                None => break,
            }
        }
        panic!(
            "no {from} -> {to} within {limit:?}; saw {seen:?}; we say {:?}\n{}",
            self.speaker.peers(),
            self.bird.log()
        );
    }

    fn updates_out(&self) -> u32 {
        self.speaker.peers()[0].summary.messages_out.update
    }
}

fn p(s: &str) -> Prefix {
    s.parse().unwrap()
}

fn intent(prepend: u8, community: u16) -> RouteIntent {
    RouteIntent {
        as_path_prepend: prepend,
        communities: vec![Community(65001, community)],
        large_communities: vec![LargeCommunity(65001, 1, u32::from(community))],
        ..RouteIntent::default()
    }
}

#[test]
fn established_within_one_second_of_start() {
    let s = setup(10, |_| {}, |_| {});
    let up = poll(Duration::from_secs(1), || {
        s.bird.established().then_some(())
    });
    assert!(
        up.is_some(),
        "not Established 1 s after start ({:?} elapsed): {:?}",
        s.started.elapsed(),
        s.bird.bgp_state()
    );
    let st = &s.speaker.peers()[0];
    let ours = poll(Duration::from_secs(1), || {
        (s.speaker.peers()[0].summary.state == "established").then_some(())
    });
    assert!(ours.is_some(), "our side: {st:?}");
    assert_eq!(st.address, IpAddr::V4(s.addrs.peer));
    let st = &s.speaker.peers()[0];
    assert_eq!(
        (st.asn, st.required, st.summary.messages_in.open),
        (65000, true, 1)
    );
    assert!(st.uptime.is_some());
}

#[test]
fn ipv4_host_route_announced_with_attributes_then_withdrawn() {
    let s = setup(11, |_| {}, |_| {});
    s.wait_established(Duration::from_secs(3));
    s.speaker
        .set_route(p("10.111.1.1/32"), Some(intent(0, 100)));
    let block = s.wait_route("10.111.1.1/32", |_| true);
    assert_eq!(attr(&block, "as_path").as_deref(), Some("65001"), "{block}");
    assert_eq!(attr(&block, "origin").as_deref(), Some("IGP"), "{block}");
    assert_eq!(
        attr(&block, "next_hop"),
        Some(s.addrs.ours.to_string()),
        "{block}"
    );
    assert_eq!(
        attr(&block, "community").as_deref(),
        Some("(65001,100)"),
        "{block}"
    );
    assert_eq!(
        attr(&block, "large_community").as_deref(),
        Some("(65001, 1, 100)"),
        "{block}"
    );
    assert_eq!(s.speaker.peers()[0].summary.advertised, 1);

    s.speaker.set_route(p("10.111.1.1/32"), None);
    s.wait_gone("10.111.1.1/32");
    assert_eq!(s.speaker.peers()[0].summary.advertised, 0);
}

#[test]
fn pessimized_route_changes_in_place() {
    let s = setup(12, |_| {}, |_| {});
    s.wait_established(Duration::from_secs(3));
    s.speaker
        .set_route(p("10.112.1.1/32"), Some(intent(0, 100)));
    s.wait_route("10.112.1.1/32", |b| {
        attr(b, "as_path").as_deref() == Some("65001")
    });
    let before = s.updates_out();
    s.speaker
        .set_route(p("10.112.1.1/32"), Some(intent(3, 666)));
    let block = s.wait_route("10.112.1.1/32", |b| {
        attr(b, "as_path").as_deref() == Some("65001 65001 65001 65001")
    });
    assert_eq!(
        attr(&block, "community").as_deref(),
        Some("(65001,666)"),
        "{block}"
    );
    assert_eq!(
        attr(&block, "large_community").as_deref(),
        Some("(65001, 1, 666)"),
        "{block}"
    );
    // In place: exactly one UPDATE (an implicit replace), no withdraw first.
    assert_eq!(s.updates_out(), before + 1);
}

/// MULTI_EXIT_DISC goes to an external peer, and a pessimized route
/// changes it in place (RFC 4271 §5.1.4).
#[test]
fn med_reaches_an_external_peer_and_changes_in_place() {
    let s = setup(51, |_| {}, |_| {});
    s.wait_established(Duration::from_secs(3));
    let with_med = |med| RouteIntent {
        med: Some(med),
        ..intent(0, 100)
    };
    s.speaker.set_route(p("10.151.1.1/32"), Some(with_med(50)));
    let block = s.wait_route("10.151.1.1/32", |b| attr(b, "med").is_some());
    assert_eq!(attr(&block, "med").as_deref(), Some("50"), "{block}");
    let before = s.updates_out();
    s.speaker.set_route(p("10.151.1.1/32"), Some(with_med(500)));
    let block = s.wait_route("10.151.1.1/32", |b| {
        attr(b, "med").as_deref() == Some("500")
    });
    assert_eq!(attr(&block, "as_path").as_deref(), Some("65001"), "{block}");
    assert_eq!(s.updates_out(), before + 1, "one UPDATE, no withdraw first");
}

/// An internal peer gets the VIP's LOCAL_PREF (RFC 4271 §5.1.5), and the
/// pessimized one in place.
#[test]
fn local_pref_reaches_an_internal_peer_and_changes_in_place() {
    let s = setup(
        52,
        |b| b.ibgp = true,
        |c| c.bgp.neighbors[0].peer_asn = c.router.asn,
    );
    s.wait_established(Duration::from_secs(3));
    let with_pref = |pref| RouteIntent {
        local_pref: pref,
        ..intent(0, 100)
    };
    s.speaker
        .set_route(p("10.152.1.1/32"), Some(with_pref(200)));
    let block = s.wait_route("10.152.1.1/32", |b| {
        attr(b, "local_pref").as_deref() == Some("200")
    });
    assert_eq!(attr(&block, "as_path").as_deref(), Some(""), "{block}");
    let before = s.updates_out();
    s.speaker.set_route(p("10.152.1.1/32"), Some(with_pref(50)));
    s.wait_route("10.152.1.1/32", |b| {
        attr(b, "local_pref").as_deref() == Some("50")
    });
    assert_eq!(s.updates_out(), before + 1, "one UPDATE, no withdraw first");
}

#[test]
fn ipv6_host_route_over_ipv4_session_with_configured_next_hop() {
    let s = setup(
        13,
        |_| {},
        |c| {
            c.router.local_address_ipv6 = Some("2001:db8:13::1".parse().unwrap());
        },
    );
    s.wait_established(Duration::from_secs(3));
    s.speaker
        .set_route(p("2001:db8:113::1/128"), Some(intent(1, 113)));
    let block = s.wait_route("2001:db8:113::1/128", |_| true);
    assert_eq!(
        attr(&block, "next_hop").as_deref(),
        Some("2001:db8:13::1"),
        "{block}"
    );
    assert_eq!(
        attr(&block, "as_path").as_deref(),
        Some("65001 65001"),
        "{block}"
    );
    assert_eq!(
        attr(&block, "community").as_deref(),
        Some("(65001,113)"),
        "{block}"
    );
}

#[test]
fn md5_session_establishes_with_the_right_password() {
    let s = setup(
        14,
        |b| b.password = Some("s3cret-14".into()),
        |c| c.bgp.neighbors[0].auth_password = Some("s3cret-14".into()),
    );
    s.wait_established(Duration::from_secs(4));
    s.speaker
        .set_route(p("10.114.1.1/32"), Some(intent(0, 114)));
    s.wait_route("10.114.1.1/32", |_| true);
}

#[test]
fn md5_session_never_establishes_with_a_wrong_password() {
    let s = setup(
        15,
        |b| b.password = Some("right".into()),
        |c| c.bgp.neighbors[0].auth_password = Some("wrong".into()),
    );
    // Both sides keep trying (BIRD every second): none may get through.
    let end = Instant::now() + Duration::from_secs(4);
    while Instant::now() < end {
        assert_ne!(s.bird.bgp_state().as_deref(), Some("Established"));
        assert_ne!(s.speaker.peers()[0].summary.state, "established");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(s.speaker.peers()[0].summary.messages_in.open, 0);
}

#[test]
fn bird_restart_reestablishes_and_resends() {
    let mut s = setup(17, |_| {}, |_| {});
    s.wait_established(Duration::from_secs(3));
    s.speaker
        .set_route(p("10.117.1.1/32"), Some(intent(2, 117)));
    s.wait_route("10.117.1.1/32", |_| true);
    s.bird.restart();
    s.wait_established(Duration::from_secs(10));
    let block = s.wait_route("10.117.1.1/32", |_| true);
    assert_eq!(
        attr(&block, "as_path").as_deref(),
        Some("65001 65001 65001"),
        "{block}"
    );
    assert!(s.speaker.peers()[0].summary.established_count >= 2);
}

#[test]
fn ten_thousand_prefixes_in_at_most_13_updates() {
    let s = setup(18, |_| {}, |_| {});
    s.wait_established(Duration::from_secs(3));
    let before = s.updates_out();
    let routes = (0..10_000u32).map(|i| {
        let ip = std::net::Ipv4Addr::from(0x0a80_0000u32 + i);
        (
            Prefix::new(IpAddr::V4(ip), 32).unwrap(),
            Some(intent(0, 118)),
        )
    });
    s.speaker.set_routes(routes.collect());
    let all = poll(Duration::from_secs(10), || {
        (s.bird.route_count("master4") == Some(10_000)).then_some(())
    });
    assert!(
        all.is_some(),
        "BIRD has {:?} routes",
        s.bird.route_count("master4")
    );
    let sent = s.updates_out() - before;
    assert!(sent <= 13, "{sent} UPDATEs for 10,000 prefixes");
    assert_eq!(s.speaker.peers()[0].summary.advertised, 10_000);
}

#[test]
fn graceful_shutdown_withdraws_then_ceases_with_the_message() {
    let s = setup(19, |_| {}, |_| {});
    s.wait_established(Duration::from_secs(3));
    s.speaker
        .set_route(p("10.119.1.1/32"), Some(intent(0, 119)));
    s.wait_route("10.119.1.1/32", |_| true);
    s.speaker
        .shutdown("pathosd test shutdown", Duration::from_millis(300));
    s.wait_gone("10.119.1.1/32");
    let seen = poll(Duration::from_secs(3), || {
        let out = s.bird.birdc(&["show", "protocols", "all", "pathosd"])?;
        out.contains("Administrative shutdown").then_some(out)
    });
    assert!(
        seen.is_some(),
        "{:?}",
        s.bird.birdc(&["show", "protocols", "all", "pathosd"])
    );
    assert_eq!(s.speaker.peers()[0].summary.messages_out.notification, 1);
}

/// The start of a stop with `bgp.graceful_shutdown`: every route gets
/// GRACEFUL_SHUTDOWN (65535:0) after its own communities, in place: one
/// UPDATE per distinct attribute set, no withdraw; the stop then withdraws
/// them.
#[test]
fn graceful_shutdown_community_is_added_to_every_route_in_place() {
    let s = setup(50, |_| {}, |_| {});
    s.wait_established(Duration::from_secs(3));
    let (a, b, c) = ("10.150.1.1/32", "10.150.1.2/32", "10.150.1.3/32");
    s.speaker.set_routes(vec![
        (p(a), Some(intent(0, 100))),
        (p(b), Some(intent(0, 100))),
        (p(c), Some(intent(3, 666))),
    ]);
    for x in [a, b, c] {
        s.wait_route(x, |_| true);
    }
    let before = s.updates_out();
    s.speaker.announce_graceful_shutdown();
    for (x, own) in [(a, 100), (b, 100), (c, 666)] {
        let block = s.wait_route(x, |bl| {
            attr(bl, "community").is_some_and(|c| c.contains("(65535,0)"))
        });
        assert_eq!(
            attr(&block, "community"),
            Some(format!("(65001,{own}) (65535,0)")),
            "{block}"
        );
        assert_eq!(
            attr(&block, "large_community"),
            Some(format!("(65001, 1, {own})")),
            "{block}"
        );
    }
    // a and b share their attributes, so one UPDATE; c one more.
    assert_eq!(s.updates_out(), before + 2);
    assert_eq!(s.speaker.peers()[0].summary.advertised, 3);
    s.speaker.shutdown("pathosd test shutdown", Duration::ZERO);
    for x in [a, b, c] {
        s.wait_gone(x);
    }
}

#[test]
fn passive_md5_peer_accepts_birds_connection() {
    // We never dial: BIRD's SYN must pass the MD5 key set on our listener.
    let s = setup(
        20,
        |b| b.password = Some("listener-20".into()),
        |c| {
            c.bgp.neighbors[0].passive = true;
            c.bgp.neighbors[0].auth_password = Some("listener-20".into());
        },
    );
    s.wait_established(Duration::from_secs(5));
    s.speaker
        .set_route(p("10.120.1.1/32"), Some(intent(0, 120)));
    s.wait_route("10.120.1.1/32", |_| true);
}

#[test]
fn reload_restarts_only_a_changed_neighbor() {
    let s = setup(21, |b| b.hold_time = 9, |_| {});
    s.wait_established(Duration::from_secs(3));
    s.speaker
        .set_route(p("10.121.1.1/32"), Some(intent(0, 121)));
    s.wait_route("10.121.1.1/32", |_| true);
    let mut cfg = support::config(s.addrs);
    let run = support::run_config;
    let plan = pathosd::daemon::reload::diff(&run(&cfg), &run(&cfg));
    assert!(plan.is_empty(), "{plan:?}");
    s.speaker.reconfigure(&cfg, &[]);
    std::thread::sleep(Duration::from_millis(500));
    let st = &s.speaker.peers()[0];
    assert_eq!(
        (st.summary.established_count, st.summary.flaps),
        (1, 0),
        "{st:?}"
    );
    assert!(s.bird.established());

    let old = cfg.clone();
    cfg.bgp.hold_time = pathosd::config::Dur::secs(6);
    // The daemon's one reload rule names the session to restart.
    let plan = pathosd::daemon::reload::diff(&run(&old), &run(&cfg));
    let restart: Vec<&str> = plan
        .neighbors
        .iter()
        .filter(|(_, c)| *c == pathosd::daemon::reload::NeighborChange::Restarted)
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(restart.len(), 1, "{plan:?}");
    s.speaker.reconfigure(&cfg, &restart);
    let restarted = poll(Duration::from_secs(8), || {
        let out = s.bird.birdc(&["show", "protocols", "all", "pathosd"])?;
        (out.contains("Established") && out.contains("/6")).then_some(out)
    });
    assert!(
        restarted.is_some(),
        "{:?}",
        s.bird.birdc(&["show", "protocols", "all", "pathosd"])
    );
    s.wait_route("10.121.1.1/32", |_| true);
}

#[test]
fn gtsm_session_establishes_when_both_sides_use_it() {
    let s = setup(
        22,
        |b| b.ttl_security = true,
        |c| {
            c.bgp.neighbors[0].enable_multihop = false;
            c.bgp.neighbors[0].ttl_security = true;
        },
    );
    s.wait_established(Duration::from_secs(4));
}

#[test]
fn gtsm_drops_a_peer_that_sends_a_low_ttl() {
    // BIRD multihop without GTSM sends TTL 64; our IP_MINTTL 255 drops it.
    let s = setup(
        23,
        |_| {},
        |c| {
            c.bgp.neighbors[0].enable_multihop = false;
            c.bgp.neighbors[0].ttl_security = true;
        },
    );
    let end = Instant::now() + Duration::from_secs(3);
    while Instant::now() < end {
        assert_ne!(s.bird.bgp_state().as_deref(), Some("Established"));
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(s.speaker.peers()[0].summary.messages_in.open, 0);
}

#[test]
fn ipv6_transport_over_the_ipv6_loopback() {
    // ::1 is the only IPv6 loopback address: ports tell the sides apart.
    let ours = 20_000 + (std::process::id() % 10_000) as u16 * 2;
    let theirs = ours + 1;
    let lo6: IpAddr = "::1".parse().unwrap();
    let s = setup(
        24,
        |b| {
            b.local = lo6;
            b.local_port = theirs;
            b.neighbor = lo6;
            b.neighbor_port = ours;
        },
        |c| {
            c.bgp.listen_address = Some(lo6);
            c.bgp.listen_port = i32::from(ours);
            c.router.local_address_ipv6 = Some("2001:db8:24::1".parse().unwrap());
            let n = &mut c.bgp.neighbors[0];
            n.address = Some(lo6);
            n.port = theirs;
            // With one loopback address on both sides, pathosd dialing from
            // ::1 to ::1 is what validation refuses (a self-dial): BIRD
            // dials pathosd's port instead.
            n.passive = true;
        },
    );
    s.wait_established(Duration::from_secs(4));
    s.speaker
        .set_route(p("2001:db8:124::1/128"), Some(intent(0, 124)));
    s.speaker
        .set_route(p("10.124.1.1/32"), Some(intent(0, 124)));
    let block = s.wait_route("2001:db8:124::1/128", |_| true);
    assert_eq!(
        attr(&block, "next_hop").as_deref(),
        Some("2001:db8:24::1"),
        "{block}"
    );
    // IPv4 routes over the IPv6 session carry the IPv4 next hop (RFC 4760).
    let block = s.wait_route("10.124.1.1/32", |_| true);
    assert_eq!(
        attr(&block, "next_hop"),
        Some(s.addrs.ours.to_string()),
        "{block}"
    );
}

/// RFC 8950 with BIRD's `extended next hop on` over ::1: an IPv4 route goes
/// with the IPv6 next hop (MP_REACH_NLRI, AFI 1) when both sides offer it;
/// it is withdrawn again over the same session.
#[test]
fn ipv4_routes_with_an_ipv6_next_hop_over_an_ipv6_session() {
    let ours = 20_000 + (std::process::id() % 10_000) as u16 * 2;
    let theirs = ours + 1;
    let lo6: IpAddr = "::1".parse().unwrap();
    let s = setup(
        43,
        |b| {
            b.local = lo6;
            b.local_port = theirs;
            b.neighbor = lo6;
            b.neighbor_port = ours;
            b.extended_next_hop = true;
        },
        |c| {
            c.bgp.listen_address = Some(lo6);
            c.bgp.listen_port = i32::from(ours);
            c.router.local_address_ipv6 = Some("2001:db8:43::1".parse().unwrap());
            let n = &mut c.bgp.neighbors[0];
            n.address = Some(lo6);
            n.port = theirs;
            // As ipv6_transport_over_the_ipv6_loopback: BIRD dials.
            n.passive = true;
            n.extended_next_hop = true;
        },
    );
    s.wait_established(Duration::from_secs(4));
    s.speaker
        .set_route(p("10.143.1.1/32"), Some(intent(0, 143)));
    let block = s.wait_route("10.143.1.1/32", |_| true);
    assert_eq!(
        attr(&block, "next_hop").as_deref(),
        Some("2001:db8:43::1"),
        "{block}"
    );
    s.speaker.set_route(p("10.143.1.1/32"), None);
    s.wait_gone("10.143.1.1/32");
    assert!(s.bird.established());
}

#[test]
fn route_refresh_from_bird_resends_the_adj_rib_out() {
    let s = setup(25, |_| {}, |_| {});
    s.wait_established(Duration::from_secs(3));
    s.speaker
        .set_route(p("10.125.1.1/32"), Some(intent(0, 125)));
    s.wait_route("10.125.1.1/32", |_| true);
    let before = s.updates_out();
    // `reload in` makes BIRD send ROUTE-REFRESH (RFC 2918) for its channels.
    assert!(s.bird.birdc(&["reload", "in", "pathosd"]).is_some());
    let refreshed = poll(Duration::from_secs(3), || {
        let st = s.speaker.peers().remove(0);
        (st.summary.messages_in.route_refresh >= 1 && st.summary.messages_out.update > before)
            .then_some(st)
    });
    assert!(refreshed.is_some(), "{:?}", s.speaker.peers());
    s.wait_route("10.125.1.1/32", |_| true);
    assert!(s.bird.established());
}

#[test]
fn frozen_bird_is_redialled_at_once_after_a_stable_session() {
    // error_wait_max 2s: a session up for 2 s is stable. BIRD waits 0 s
    // after an error too, so its own damping adds nothing to the figures.
    // Measured: the redial follows the hold timer expiry within a
    // millisecond (it was error_wait_min × 0.75–1.0, about 1 s, before).
    // Established again 3.8-4.0 s after SIGCONT (4.6 s before): the redial sits in the
    // frozen BIRD's backlog and BIRD, reading it before our NOTIFICATION on
    // the old connection, takes it for a graceful restart (RFC 4724) with
    // restart time 0 and closes it after about its hold time.
    let s = setup(
        26,
        |b| b.error_wait = (0, 0),
        |c| {
            let n = &mut c.bgp.neighbors[0];
            n.error_wait_min = pathosd::config::Dur::secs(1);
            n.error_wait_max = pathosd::config::Dur::secs(2);
        },
    );
    s.wait_established(Duration::from_secs(3));
    s.wait_event("openconfirm", "established", Duration::from_secs(3));
    s.speaker
        .set_route(p("10.126.1.1/32"), Some(intent(0, 126)));
    s.wait_route("10.126.1.1/32", |_| true);
    // Frozen, BIRD sends no KEEPALIVE: our HoldTimer (3 s) expires after the
    // session has been up for at least 3 s, longer than error_wait_max.
    s.bird.signal("STOP");
    let (down, down_at) = s.wait_event("established", "idle", Duration::from_secs(6));
    let reason = down.reason.clone().unwrap_or_default();
    assert!(
        reason.to_lowercase().contains("hold timer"),
        "went down for another reason: {reason}"
    );
    // The reconnect attempt is due at once, not after error_wait_min.
    let (_, connect_at) = s.wait_event("idle", "connect", Duration::from_secs(3));
    let redial = connect_at.duration_since(down_at);
    eprintln!("hold timer expired -> reconnect attempt: {redial:?}");
    assert!(
        redial <= Duration::from_millis(100),
        "reconnect attempt {redial:?} after the stable session went down"
    );
    let resumed = Instant::now();
    s.bird.signal("CONT");
    let (_, up_at) = s.wait_event("openconfirm", "established", Duration::from_secs(10));
    eprintln!(
        "SIGCONT -> Established again: {:?}",
        up_at.duration_since(resumed)
    );
    s.wait_established(Duration::from_secs(5));
    s.wait_route("10.126.1.1/32", |_| true);
}

#[test]
fn a_route_that_cannot_be_encoded_is_not_advertised_nor_withdrawn() {
    let s = setup(27, |_| {}, |_| {});
    s.wait_established(Duration::from_secs(3));
    // 1,100 communities take 4,400 octets: no room for a prefix in a
    // 4,096-octet UPDATE, so the encoder skips the route.
    let huge = RouteIntent {
        as_path_prepend: 0,
        communities: (0..1100u16).map(|i| Community(65001, i)).collect(),
        large_communities: Vec::new(),
        ..RouteIntent::default()
    };
    s.speaker.set_route(p("10.127.9.9/32"), Some(huge));
    // A sendable route after it: once BIRD has it, the pass with the
    // unencodable one is written.
    s.speaker
        .set_route(p("10.127.1.1/32"), Some(intent(0, 127)));
    s.wait_route("10.127.1.1/32", |_| true);
    assert!(s.bird.route("10.127.9.9/32").is_none());
    let st = s.speaker.peers().remove(0);
    let routes = s.speaker.routes(0);
    let routes: Vec<String> = routes.iter().map(|(p, _)| p.to_string()).collect();
    assert_eq!(
        (st.summary.advertised, routes),
        (1, vec!["10.127.1.1/32".to_string()])
    );
    // Withdrawing it sends nothing: the peer never had it.
    let before = s.updates_out();
    s.speaker.set_route(p("10.127.9.9/32"), None);
    // A marker withdraw after it, so we know the first was handled.
    s.speaker.set_route(p("10.127.1.1/32"), None);
    s.wait_gone("10.127.1.1/32");
    let sent = s.updates_out() - before;
    assert_eq!(sent, 1, "UPDATEs for the two withdrawals");
    assert_eq!(s.speaker.peers()[0].summary.advertised, 0);
}

/// RFC 9234 roles with BIRD's `local role` and `require roles` (both
/// sides strict): matching roles establish, and routes we send to our
/// customer carry ONLY_TO_CUSTOMER with our AS; mismatching ones never
/// establish, our side sending Role Mismatch (2/11), which BIRD reports.
#[test]
fn roles_establish_when_they_match_and_get_role_mismatch_when_not() {
    use pathosd::config::schema::BgpRole;
    let s = setup(
        37,
        |b| {
            b.role = Some("customer");
            b.require_roles = true;
        },
        |c| {
            c.bgp.neighbors[0].role = Some(BgpRole::Provider);
            c.bgp.neighbors[0].require_role = true;
        },
    );
    s.wait_established(Duration::from_secs(3));
    s.speaker.set_route(p("10.37.0.1/32"), Some(intent(0, 100)));
    let block = s.wait_route("10.37.0.1/32", |_| true);
    // BIRD shows the attribute as BGP.otc (RFC 9234 §5: "equal to the AS
    // number of the local AS").
    assert_eq!(attr(&block, "otc").as_deref(), Some("65001"), "{block}");

    // A customer towards a customer: no Table 2 pair.
    let s = setup(
        38,
        |b| {
            b.role = Some("customer");
            b.require_roles = true;
        },
        |c| c.bgp.neighbors[0].role = Some(BgpRole::Customer),
    );
    let (down, _) = s.wait_event("opensent", "idle", Duration::from_secs(5));
    let last = s.speaker.peers()[0].summary.last_notification_sent.clone();
    assert!(
        last.as_deref().is_some_and(|n| n.contains("Role Mismatch")),
        "{last:?} ({down:?})"
    );
    let logged = poll(Duration::from_secs(3), || {
        let st = s.bird.birdc(&["show", "protocols", "all", "pathosd"])?;
        st.contains("Role mismatch").then_some(st)
    });
    assert!(
        logged.is_some(),
        "BIRD: {:?}\n{}",
        s.bird.birdc(&["show", "protocols", "all", "pathosd"]),
        s.bird.log()
    );
    assert!(!s.bird.established());

    // Strict on our side, none on BIRD's: refused as well.
    let s = setup(
        39,
        |_| {},
        |c| {
            c.bgp.neighbors[0].role = Some(BgpRole::Peer);
            c.bgp.neighbors[0].require_role = true;
        },
    );
    s.wait_event("opensent", "idle", Duration::from_secs(5));
    let last = s.speaker.peers()[0].summary.last_notification_sent.clone();
    assert!(
        last.as_deref().is_some_and(|n| n.contains("Role Mismatch")),
        "{last:?}"
    );
}
