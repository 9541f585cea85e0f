//! The owner's side of the speaker: peer summaries from the tasks'
//! reports, the Adj-RIB-Out read from the session.

use super::*;

#[test]
fn reports_update_the_owners_summary_and_stale_tasks_are_ignored() {
    let mut owner = OwnerSide::default();
    owner.views.push(View {
        id: 2,
        name: "n".into(),
        address: "192.0.2.2".parse().unwrap(),
        asn: 65000,
        required: true,
        summary: Summary::idle(true),
        session: Weak::new(),
    });
    let report = |id, summary| SessionReport { id, summary };
    let mut up = Summary::idle(true);
    up.state = "established";
    up.advertised = 2;
    apply_report(&mut owner, report(2, up.clone()));
    // The task this one replaced (id 1) reports late: ignored.
    apply_report(&mut owner, report(1, Summary::idle(false)));
    assert_eq!(owner.views[0].summary, up);
}

/// The owner keeps no copy of a peer's Adj-RIB-Out; /metrics
/// reads the session's own, as it is now, a few routes at a time.
#[test]
fn the_peers_routes_are_read_from_its_session() {
    let advertised = |s: &Weak<RefCell<SessionCore>>| {
        let mut out = Vec::new();
        advertised(s, None, usize::MAX, &mut out);
        out
    };
    use crate::bgp::rib_out::PeerShape;
    use crate::bgp::types::Afi;
    let p = |s: &str| -> Prefix { s.parse().unwrap() };
    let shape = PeerShape {
        ebgp: true,
        local_as: 65001,
        next_hop_v4: Some("192.0.2.1".parse().unwrap()),
        next_hop_v6: None,
        families: Vec::new(),
        ipv4_next_hop_v6: false,
        otc: None,
    };
    let core = Rc::new(RefCell::new(SessionCore::new(shape.clone(), 1)));
    let session = Rc::downgrade(&core);
    let intent = Some(Arc::new(RouteIntent::default()));
    core.borrow_mut().on_routes(&[
        (p("10.0.0.1/32"), intent.clone()),
        (p("10.0.0.2/32"), intent.clone()),
    ]);
    // Not Established: the peer has nothing from us.
    assert!(advertised(&session).is_empty());
    core.borrow_mut()
        .on_established(&[Afi::Ipv4], true, shape, Instant::now());
    core.borrow_mut().next_pass().expect("the table");
    core.borrow_mut().write_done();
    core.borrow_mut()
        .on_routes(&[(p("10.0.0.1/32"), None), (p("10.0.0.3/32"), intent)]);
    core.borrow_mut().next_pass().expect("the change");
    let routes = advertised(&session);
    assert_eq!(
        routes.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
        vec![p("10.0.0.2/32"), p("10.0.0.3/32")]
    );
    assert_eq!(routes[0].1.as_path, vec![65001]);
    // From the first after a prefix, at most so many.
    let mut some = Vec::new();
    super::advertised(&session, Some(&p("10.0.0.2/32")), 1, &mut some);
    assert_eq!(some.len(), 1);
    assert_eq!(some[0].0, p("10.0.0.3/32"));
    some.clear();
    super::advertised(&session, None, 1, &mut some);
    assert_eq!(some[0].0, p("10.0.0.2/32"));
    // Session down: the peer dropped everything.
    core.borrow_mut().on_session_down();
    assert!(advertised(&session).is_empty());
    // The task is gone: nothing, and no panic.
    drop(core);
    assert!(advertised(&session).is_empty());
}
