//! Unit tests of the RIB-out: shaping, minimal diffs, End-of-RIB, route
//! refresh, and proptests against a peer's view built from the changes.

use super::*;
use crate::bgp::types::{Community, LargeCommunity};

const AS: u32 = 65001;

fn p(s: &str) -> Prefix {
    s.parse().unwrap()
}

fn nh4() -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 0, 1)
}

fn nh6() -> Ipv6Addr {
    "2001:db8::1".parse().unwrap()
}

fn shape(ebgp: bool) -> PeerShape {
    PeerShape {
        ebgp,
        local_as: AS,
        next_hop_v4: Some(nh4()),
        next_hop_v6: Some(nh6()),
        families: Vec::new(),
        ipv4_next_hop_v6: false,
        otc: None,
    }
}

fn announced() -> RouteIntent {
    RouteIntent::default()
}

fn pessimized() -> RouteIntent {
    RouteIntent {
        as_path_prepend: 6,
        communities: vec![Community(65001, 666)],
        large_communities: vec![LargeCommunity(65001, 1, 2)],
        ..RouteIntent::default()
    }
}

fn ebgp_attrs(copies: usize, intent: &RouteIntent, nh: IpAddr) -> Arc<PathAttrs> {
    Arc::new(PathAttrs {
        origin: Origin::Igp,
        as_path: vec![AS; copies],
        next_hop: nh,
        med: None,
        local_pref: None,
        communities: intent.communities.clone(),
        large_communities: intent.large_communities.clone(),
        otc: None,
    })
}

fn v4() -> IpAddr {
    IpAddr::V4(nh4())
}

/// A RibOut with the initial evaluation done and `routes` desired.
fn rib(routes: &[(&str, RouteIntent)]) -> RibOut {
    let mut r = RibOut::new();
    for (prefix, intent) in routes {
        r.set_desired(p(prefix), Some(intent.clone()));
    }
    r.mark_initial_done();
    r
}

/// A batch into an empty table (built in bulk) and into a filled one
/// (one by one) leave the table a route at a time would, in prefix
/// order, and report each prefix that changed with its new route.
#[test]
fn a_batch_is_the_changes_one_by_one() {
    let (a, pz) = (Arc::new(announced()), Arc::new(pessimized()));
    let batch = |items: &[(&str, Option<&Arc<RouteIntent>>)]| -> Vec<_> {
        items.iter().map(|(s, i)| (p(s), i.cloned())).collect()
    };
    // Out of order and a prefix replaced in the batch: built in bulk.
    let first = batch(&[
        ("10.0.0.3/32", Some(&a)),
        ("2001:db8::1/128", Some(&a)),
        ("10.0.0.1/32", Some(&a)),
        ("10.0.0.3/32", Some(&pz)),
    ]);
    let mut bulk = RibOut::new();
    let mut changed = Vec::new();
    bulk.set_desired_batch(first.clone(), |p, i| changed.push((p, i.cloned())));
    let mut one = RibOut::new();
    for (prefix, intent) in first {
        one.set_desired_shared(prefix, intent);
    }
    assert_eq!(bulk, one);
    let table: Vec<_> = bulk
        .desired()
        .iter()
        .map(|(p, i)| (*p, (**i).clone()))
        .collect();
    assert_eq!(
        table,
        [
            (p("10.0.0.1/32"), announced()),
            (p("10.0.0.3/32"), pessimized()),
            (p("2001:db8::1/128"), announced()),
        ]
    );
    assert_eq!(
        changed,
        [
            (p("10.0.0.1/32"), Some(a.clone())),
            (p("10.0.0.3/32"), Some(pz.clone())),
            (p("2001:db8::1/128"), Some(a.clone())),
        ]
    );
    // Into an empty table with withdraws (one set and removed again, one
    // the table never had): one by one.
    let mut empty = RibOut::new();
    changed.clear();
    empty.set_desired_batch(
        batch(&[
            ("10.0.0.2/32", Some(&a)),
            ("10.0.0.2/32", None),
            ("10.0.0.9/32", None),
            ("10.0.0.4/32", Some(&pz)),
        ]),
        |p, i| changed.push((p, i.cloned())),
    );
    assert_eq!(
        changed,
        [
            (p("10.0.0.2/32"), Some(a.clone())),
            (p("10.0.0.2/32"), None),
            (p("10.0.0.4/32"), Some(pz.clone())),
        ]
    );
    assert_eq!(
        empty.desired().keys().copied().collect::<Vec<_>>(),
        [p("10.0.0.4/32")]
    );
    // Into a filled table: replace, withdraw, withdraw of an absent
    // prefix (no change), the same route again (no change), a new one.
    let second = batch(&[
        ("10.0.0.1/32", Some(&pz)),
        ("10.0.0.3/32", None),
        ("10.0.0.7/32", None),
        ("2001:db8::1/128", Some(&a)),
        ("10.0.0.0/24", Some(&a)),
    ]);
    changed.clear();
    bulk.set_desired_batch(second.clone(), |p, i| changed.push((p, i.cloned())));
    for (prefix, intent) in second {
        one.set_desired_shared(prefix, intent);
    }
    assert_eq!(bulk, one);
    assert_eq!(
        changed,
        [
            (p("10.0.0.1/32"), Some(pz.clone())),
            (p("10.0.0.3/32"), None),
            (p("10.0.0.0/24"), Some(a.clone())),
        ]
    );
    assert_eq!(
        bulk.desired().keys().copied().collect::<Vec<_>>(),
        [p("10.0.0.0/24"), p("10.0.0.1/32"), p("2001:db8::1/128")]
    );
}

#[test]
fn announce_pessimize_in_place_and_withdraw() {
    let mut rib = rib(&[]);
    let mut peer = AdjRibOut::new(shape(true));
    let up = peer.on_established(&[Afi::Ipv4], &rib);
    assert_eq!(
        up,
        Changes {
            end_of_rib: vec![Afi::Ipv4],
            ..Changes::default()
        }
    );

    assert!(rib.set_desired(p("10.100.1.1/32"), Some(announced())));
    let c = peer.sync(&rib);
    assert_eq!(
        c.announce,
        vec![(p("10.100.1.1/32"), ebgp_attrs(1, &announced(), v4()))]
    );
    assert!(c.withdraw.is_empty() && c.end_of_rib.is_empty());

    // Pessimize: one replacing announcement, no withdraw in between.
    rib.set_desired(p("10.100.1.1/32"), Some(pessimized()));
    let c = peer.sync(&rib);
    assert_eq!(
        c,
        Changes {
            announce: vec![(p("10.100.1.1/32"), ebgp_attrs(7, &pessimized(), v4()))],
            ..Changes::default()
        }
    );

    rib.set_desired(p("10.100.1.1/32"), None);
    let c = peer.sync(&rib);
    assert_eq!(
        c,
        Changes {
            withdraw: vec![p("10.100.1.1/32")],
            ..Changes::default()
        }
    );
    assert!(peer.advertised().is_empty());
}

#[test]
fn sync_without_changes_emits_nothing() {
    let mut rib = rib(&[
        ("10.100.1.1/32", announced()),
        ("10.100.2.0/24", pessimized()),
    ]);
    let mut peer = AdjRibOut::new(shape(true));
    let up = peer.on_established(&[Afi::Ipv4], &rib);
    assert_eq!(up.announce.len(), 2);
    assert!(peer.sync(&rib).is_empty());
    assert_eq!(peer.sync(&rib), Changes::default());
    // Setting the same intent again is not a change either.
    assert!(!rib.set_desired(p("10.100.1.1/32"), Some(announced())));
    assert!(!rib.set_desired(p("10.9.9.9/32"), None));
    assert_eq!(peer.sync(&rib), Changes::default());
}

#[test]
fn session_loss_forgets_and_resends_everything() {
    let mut rib = rib(&[("10.100.1.1/32", announced())]);
    let mut peer = AdjRibOut::new(shape(true));
    peer.on_established(&[Afi::Ipv4], &rib);
    peer.on_session_down();
    assert!(peer.advertised().is_empty());
    // Changes while down are not sent ...
    rib.set_desired(p("10.100.1.1/32"), Some(pessimized()));
    rib.set_desired(p("10.100.3.3/32"), Some(announced()));
    assert_eq!(peer.sync(&rib), Changes::default());
    // ... the next session gets the whole current table, then EoR.
    let up = peer.on_established(&[Afi::Ipv4], &rib);
    assert_eq!(
        up,
        Changes {
            announce: vec![
                (p("10.100.1.1/32"), ebgp_attrs(7, &pessimized(), v4())),
                (p("10.100.3.3/32"), ebgp_attrs(1, &announced(), v4())),
            ],
            end_of_rib: vec![Afi::Ipv4],
            ..Changes::default()
        }
    );
}

#[test]
fn ibgp_gets_empty_as_path_and_local_pref_and_one_prepend_warning() {
    let rib = rib(&[
        ("10.100.1.1/32", pessimized()),
        ("10.100.2.2/32", pessimized()),
    ]);
    let mut peer = AdjRibOut::new(shape(false));
    let up = peer.on_established(&[Afi::Ipv4], &rib);
    let want = Arc::new(PathAttrs {
        origin: Origin::Igp,
        as_path: Vec::new(),
        next_hop: v4(),
        med: None,
        local_pref: Some(100),
        communities: vec![Community(65001, 666)],
        large_communities: vec![LargeCommunity(65001, 1, 2)],
        otc: None,
    });
    assert_eq!(
        up.announce,
        vec![
            (p("10.100.1.1/32"), want.clone()),
            (p("10.100.2.2/32"), want)
        ]
    );
    assert_eq!(
        up.warnings,
        vec![Warning::PrependIgnoredOnIbgp {
            prefix: p("10.100.1.1/32"),
            prepend: 6
        }]
    );
    // Once per peer, even across sessions.
    peer.on_session_down();
    let up = peer.on_established(&[Afi::Ipv4], &rib);
    assert!(up.warnings.is_empty());
}

#[test]
fn ibgp_pessimize_changes_only_communities() {
    let mut rib = rib(&[("10.100.1.1/32", announced())]);
    let mut peer = AdjRibOut::new(shape(false));
    peer.on_established(&[Afi::Ipv4], &rib);
    rib.set_desired(p("10.100.1.1/32"), Some(pessimized()));
    let c = peer.sync(&rib);
    assert_eq!(c.announce.len(), 1);
    assert!(c.announce[0].1.as_path.is_empty());
    assert_eq!(c.announce[0].1.communities, vec![Community(65001, 666)]);
}

#[test]
fn ipv6_uses_the_ipv6_next_hop_and_needs_the_family() {
    let rib = rib(&[
        ("2001:db8:100::1/128", announced()),
        ("10.100.1.1/32", announced()),
    ]);
    let mut peer = AdjRibOut::new(shape(true));
    let up = peer.on_established(&[Afi::Ipv4, Afi::Ipv6], &rib);
    assert_eq!(
        up.announce,
        vec![
            (p("10.100.1.1/32"), ebgp_attrs(1, &announced(), v4())),
            (
                p("2001:db8:100::1/128"),
                ebgp_attrs(1, &announced(), IpAddr::V6(nh6()))
            ),
        ]
    );
    assert_eq!(up.end_of_rib, vec![Afi::Ipv4, Afi::Ipv6]);

    // Session without IPv6: the v6 route is not sent, reported once.
    peer.on_session_down();
    let up = peer.on_established(&[Afi::Ipv4], &rib);
    assert_eq!(up.announce.len(), 1);
    assert_eq!(
        up.warnings,
        vec![Warning::FamilyNotNegotiated {
            prefix: p("2001:db8:100::1/128")
        }]
    );
    assert_eq!(up.end_of_rib, vec![Afi::Ipv4]);
    assert_eq!(peer.sync(&rib), Changes::default());
}

/// The incremental pass (`plan`) keeps the "reported once" set as the
/// full one does: each unsendable prefix is reported once while it is
/// desired, again after it left and came back; the set's changes of a
/// pass are applied at its end.
#[test]
fn plan_reports_unsendable_prefixes_once_while_desired() {
    let v6 = [
        "2001:db8:100::3/128",
        "2001:db8:100::1/128",
        "2001:db8:100::2/128",
    ];
    let mut rib = RibOut::new();
    rib.mark_initial_done();
    let mut peer = AdjRibOut::new(shape(true));
    let up = peer.on_established(&[Afi::Ipv4], &rib);
    assert_eq!(up.end_of_rib, vec![Afi::Ipv4]);
    let not_negotiated = |ps: &[&str]| -> Vec<Warning> {
        ps.iter()
            .map(|s| Warning::FamilyNotNegotiated { prefix: p(s) })
            .collect()
    };
    for s in v6 {
        rib.set_desired(p(s), Some(announced()));
    }
    rib.set_desired(p("10.100.1.1/32"), Some(announced()));
    let all: PrefixSet = v6
        .iter()
        .map(|s| p(s))
        .chain([p("10.100.1.1/32")])
        .collect();
    let c = peer.plan(&rib, &all);
    peer.commit(&c);
    assert_eq!(c.announce.len(), 1);
    // In prefix order, each once.
    assert_eq!(c.warnings, not_negotiated(&[v6[1], v6[2], v6[0]]));
    // Planned again: not reported again.
    let c = peer.plan(&rib, &all);
    assert!(c.warnings.is_empty(), "{c:?}");
    // Two leave, one of them comes back: only that one is reported.
    rib.set_desired(p(v6[0]), None);
    rib.set_desired(p(v6[1]), None);
    let gone: PrefixSet = [p(v6[0]), p(v6[1])].into_iter().collect();
    let c = peer.plan(&rib, &gone);
    assert!(c.warnings.is_empty() && c.withdraw.is_empty(), "{c:?}");
    rib.set_desired(p(v6[1]), Some(announced()));
    let c = peer.plan(&rib, &all);
    assert_eq!(c.warnings, not_negotiated(&[v6[1]]));
    let c = peer.plan(&rib, &all);
    assert!(c.warnings.is_empty(), "{c:?}");
}

#[test]
fn prefix_set_is_sorted_without_repeats() {
    let mut s: PrefixSet = [p("10.0.0.2/32"), p("10.0.0.1/32"), p("10.0.0.2/32")]
        .into_iter()
        .collect();
    s.extend([p("2001:db8::1/128"), p("10.0.0.0/8")]);
    let v: Vec<Prefix> = s.iter().copied().collect();
    assert_eq!(
        v,
        vec![
            p("10.0.0.0/8"),
            p("10.0.0.1/32"),
            p("10.0.0.2/32"),
            p("2001:db8::1/128")
        ]
    );
    assert!(s.contains(&p("10.0.0.1/32")) && !s.contains(&p("10.0.0.3/32")));
    s.retain(|x| x.afi() == Afi::Ipv6);
    assert_eq!(s.len(), 1);
    s.clear();
    assert!(s.is_empty());
}

/// RFC 8950 negotiated: IPv4 routes take the IPv6 next hop; without one
/// they are not sent (reported once).
#[test]
fn extended_next_hop_gives_ipv4_routes_the_ipv6_next_hop() {
    let rib = rib(&[("10.100.1.1/32", announced())]);
    let mut s = shape(true);
    s.ipv4_next_hop_v6 = true;
    let mut peer = AdjRibOut::new(s.clone());
    let up = peer.on_established(&[Afi::Ipv4], &rib);
    assert_eq!(
        up.announce,
        vec![(
            p("10.100.1.1/32"),
            ebgp_attrs(1, &announced(), IpAddr::V6(nh6()))
        )]
    );
    s.next_hop_v6 = None;
    let mut peer = AdjRibOut::new(s);
    let up = peer.on_established(&[Afi::Ipv4], &rib);
    assert!(up.announce.is_empty());
    assert_eq!(
        up.warnings,
        vec![Warning::NoNextHop {
            prefix: p("10.100.1.1/32")
        }]
    );
}

/// RFC 9234 §5: with `otc` set (our role is provider, peer or rs) every
/// route carries it.
#[test]
fn otc_is_added_to_every_route_when_the_shape_says_so() {
    let rib = rib(&[("10.100.1.1/32", announced())]);
    let mut s = shape(true);
    s.otc = Some(AS);
    let mut peer = AdjRibOut::new(s);
    let up = peer.on_established(&[Afi::Ipv4], &rib);
    assert_eq!(up.announce[0].1.otc, Some(AS));
}

#[test]
fn no_next_hop_of_the_family_means_not_sent() {
    let rib = rib(&[("2001:db8:100::1/128", announced())]);
    let mut s = shape(true);
    s.next_hop_v6 = None;
    let mut peer = AdjRibOut::new(s);
    let up = peer.on_established(&[Afi::Ipv4, Afi::Ipv6], &rib);
    assert!(up.announce.is_empty());
    assert_eq!(
        up.warnings,
        vec![Warning::NoNextHop {
            prefix: p("2001:db8:100::1/128")
        }]
    );
}

#[test]
fn end_of_rib_waits_for_the_initial_evaluation() {
    let mut rib = RibOut::new();
    let mut peer = AdjRibOut::new(shape(true));
    let up = peer.on_established(&[Afi::Ipv4, Afi::Ipv6], &rib);
    assert_eq!(up, Changes::default());
    // First results arrive: routes go out, still no EoR.
    rib.set_desired(p("10.100.1.1/32"), Some(announced()));
    let c = peer.sync(&rib);
    assert_eq!(c.announce.len(), 1);
    assert!(c.end_of_rib.is_empty());
    // Evaluation complete: the next sync carries only the EoRs ...
    rib.mark_initial_done();
    assert_eq!(
        peer.sync(&rib),
        Changes {
            end_of_rib: vec![Afi::Ipv4, Afi::Ipv6],
            ..Changes::default()
        }
    );
    // ... once per session.
    assert_eq!(peer.sync(&rib), Changes::default());
    peer.on_session_down();
    let up = peer.on_established(&[Afi::Ipv4], &rib);
    assert_eq!(up.end_of_rib, vec![Afi::Ipv4]);
}

#[test]
fn next_hop_change_reannounces() {
    let rib = rib(&[("10.100.1.1/32", announced())]);
    let mut peer = AdjRibOut::new(shape(true));
    peer.on_established(&[Afi::Ipv4], &rib);
    let mut s = shape(true);
    s.next_hop_v4 = Some(Ipv4Addr::new(127, 0, 0, 9));
    peer.set_shape(s);
    assert_eq!(peer.shape().families, vec![Afi::Ipv4]);
    let c = peer.sync(&rib);
    assert_eq!(
        c.announce,
        vec![(
            p("10.100.1.1/32"),
            ebgp_attrs(1, &announced(), IpAddr::V4(Ipv4Addr::new(127, 0, 0, 9)))
        )]
    );
    assert!(c.withdraw.is_empty());
}

#[test]
fn route_refresh_resends_the_family() {
    let rib = rib(&[
        ("2001:db8:100::1/128", announced()),
        ("10.100.1.1/32", announced()),
    ]);
    let mut peer = AdjRibOut::new(shape(true));
    peer.on_established(&[Afi::Ipv4, Afi::Ipv6], &rib);
    let c = peer.route_refresh(Afi::Ipv6);
    assert_eq!(c.announce.len(), 1);
    assert_eq!(c.announce[0].0, p("2001:db8:100::1/128"));
    assert!(c.end_of_rib.is_empty());
}

mod random {
    //! Random desired-table edits, syncs and session flaps: what the peer
    //! holds after applying every `Changes` always equals the shaped
    //! desired table, and nothing is ever withdrawn then re-announced in
    //! one sync.
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        Set(usize, Option<u8>),
        Sync,
        Down,
        Up(bool),
        InitialDone,
    }

    const PREFIXES: [&str; 4] = [
        "10.0.0.1/32",
        "10.0.0.2/32",
        "2001:db8::1/128",
        "10.1.0.0/16",
    ];

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0..PREFIXES.len(), proptest::option::of(0u8..3)).prop_map(|(i, v)| Op::Set(i, v)),
            3 => Just(Op::Sync),
            1 => Just(Op::Down),
            1 => any::<bool>().prop_map(Op::Up),
            1 => Just(Op::InitialDone),
        ]
    }

    proptest! {
        #[test]
        fn peer_view_tracks_desired(ebgp in any::<bool>(), ops in proptest::collection::vec(op(), 1..60)) {
            let mut rib = RibOut::new();
            let mut peer = AdjRibOut::new(shape(ebgp));
            // The peer's view, built only from the Changes we emitted.
            let mut view: BTreeMap<Prefix, Arc<PathAttrs>> = BTreeMap::new();
            let mut up = false;
            let mut eor_seen = false;
            for op in ops {
                let changes = match op {
                    Op::Set(i, v) => {
                        let intent = v.map(|prepend| RouteIntent {
                            as_path_prepend: prepend,
                            communities: vec![Community(1, u16::from(prepend))],
                            large_communities: Vec::new(),
                            ..RouteIntent::default()
                        });
                        rib.set_desired(p(PREFIXES[i]), intent);
                        continue;
                    }
                    Op::InitialDone => {
                        rib.mark_initial_done();
                        continue;
                    }
                    Op::Sync => peer.sync(&rib),
                    Op::Down => {
                        peer.on_session_down();
                        view.clear();
                        up = false;
                        continue;
                    }
                    Op::Up(with_v6) => {
                        if up {
                            peer.on_session_down();
                            view.clear();
                        }
                        up = true;
                        eor_seen = false;
                        let fams: &[Afi] = if with_v6 { &[Afi::Ipv4, Afi::Ipv6] } else { &[Afi::Ipv4] };
                        peer.on_established(fams, &rib)
                    }
                };
                if !up {
                    prop_assert!(changes.is_empty());
                    continue;
                }
                for w in &changes.withdraw {
                    prop_assert!(view.remove(w).is_some(), "withdrew unsent {}", w);
                    prop_assert!(!changes.announce.iter().any(|(a, _)| a == w));
                }
                for (prefix, attrs) in &changes.announce {
                    prop_assert!(view.get(prefix) != Some(attrs), "re-announced unchanged {}", prefix);
                    view.insert(*prefix, attrs.clone());
                }
                if !changes.end_of_rib.is_empty() {
                    prop_assert!(rib.initial_done() && !eor_seen);
                    eor_seen = true;
                }
                prop_assert_eq!(&view, peer.advertised());
                for (prefix, attrs) in &view {
                    let intent = &rib.desired()[prefix];
                    prop_assert!(peer.shape().families.contains(&prefix.afi()));
                    if ebgp {
                        prop_assert_eq!(attrs.as_path.len(), 1 + usize::from(intent.as_path_prepend));
                        prop_assert_eq!(attrs.local_pref, None);
                    } else {
                        prop_assert!(attrs.as_path.is_empty());
                        prop_assert_eq!(attrs.local_pref, Some(crate::bgp::types::DEFAULT_LOCAL_PREF));
                    }
                    prop_assert_eq!(&attrs.communities, &intent.communities);
                }
                // Every sendable desired route is in the view.
                for prefix in rib.desired().keys() {
                    if peer.shape().families.contains(&prefix.afi()) {
                        prop_assert!(view.contains_key(prefix), "missing {}", prefix);
                    }
                }
            }
        }

        /// A pass over only the prefixes changed since the last one
        /// (`Scope::Changed`, a session between batches) sends what a
        /// pass over the whole table (`Scope::All`) sends, and leaves
        /// the same Adj-RIB-Out and the same unsendable prefixes
        /// reported.
        #[test]
        fn a_pass_over_the_changed_prefixes_equals_one_over_the_table(
            ebgp in any::<bool>(),
            ops in proptest::collection::vec(op(), 1..60),
        ) {
            let mut rib = RibOut::new();
            let mut whole = AdjRibOut::new(shape(ebgp));
            let mut changed = AdjRibOut::new(shape(ebgp));
            let mut dirty = PrefixSet::new();
            for op in ops {
                let (a, b) = match op {
                    Op::Set(i, v) => {
                        let intent = v.map(|prepend| RouteIntent {
                            as_path_prepend: prepend,
                            ..RouteIntent::default()
                        });
                        if rib.set_desired(p(PREFIXES[i]), intent) {
                            dirty.extend([p(PREFIXES[i])]);
                        }
                        continue;
                    }
                    Op::InitialDone => {
                        rib.mark_initial_done();
                        continue;
                    }
                    Op::Down => {
                        whole.on_session_down();
                        changed.on_session_down();
                        continue;
                    }
                    Op::Up(with_v6) => {
                        let fams: &[Afi] = if with_v6 { &[Afi::Ipv4, Afi::Ipv6] } else { &[Afi::Ipv4] };
                        // A session that comes up plans the whole table.
                        whole.establish(fams);
                        changed.establish(fams);
                        dirty.clear();
                        (whole.plan_all(&rib), changed.plan_all(&rib))
                    }
                    Op::Sync => {
                        let a = whole.plan_all(&rib);
                        let b = changed.plan(&rib, &dirty);
                        dirty.clear();
                        (a, b)
                    }
                };
                whole.commit(&a);
                changed.commit(&b);
                let sorted = |c: &Changes| {
                    let mut w = c.withdraw.clone();
                    w.sort_unstable();
                    (c.announce.clone(), w, c.end_of_rib.clone(), c.warnings.len())
                };
                prop_assert_eq!(sorted(&a), sorted(&b));
                prop_assert_eq!(whole.advertised(), changed.advertised());
                prop_assert_eq!(&whole.reported, &changed.reported);
            }
        }
    }
}

/// The stop's GRACEFUL_SHUTDOWN: every route re-announced in place with
/// the community added (once), nothing withdrawn, equal routes sharing
/// their attributes (so their UPDATEs) as before.
#[test]
fn a_community_added_to_every_route_is_one_replacing_announcement_each() {
    let gshut = crate::bgp::types::GRACEFUL_SHUTDOWN;
    let mut rib = rib(&[
        ("10.0.0.1/32", announced()),
        ("10.0.0.2/32", announced()),
        ("10.0.0.3/32", pessimized()),
    ]);
    let mut peer = AdjRibOut::new(shape(true));
    peer.on_established(&[Afi::Ipv4], &rib);
    rib.add_community(gshut);
    let marked = |mut i: RouteIntent| {
        i.communities.push(gshut);
        i
    };
    let c = peer.sync(&rib);
    assert_eq!(
        c,
        Changes {
            announce: vec![
                (p("10.0.0.1/32"), ebgp_attrs(1, &marked(announced()), v4())),
                (p("10.0.0.2/32"), ebgp_attrs(1, &marked(announced()), v4())),
                (p("10.0.0.3/32"), ebgp_attrs(7, &marked(pessimized()), v4())),
            ],
            ..Changes::default()
        }
    );
    assert!(Arc::ptr_eq(&c.announce[0].1, &c.announce[1].1));
    let d = rib.desired();
    assert!(Arc::ptr_eq(&d[&p("10.0.0.1/32")], &d[&p("10.0.0.2/32")]));
    // Already there: nothing changes.
    rib.add_community(gshut);
    assert!(peer.sync(&rib).is_empty());
    assert_eq!(
        rib.desired()[&p("10.0.0.3/32")].communities,
        vec![Community(65001, 666), gshut]
    );
}
