//! Replays of the pure per-session core (`bgp::session`): route batches,
//! coalescing, routes the encoder skips, status bookkeeping, connection
//! collisions and retry jitter. No socket, no clock, no sleep: every event
//! is fed with its time and the UPDATE bytes are decoded and checked.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pathosd::bgp::fsm::{
    Action, ConnectionOrigin, DownReason, Event, Notification, OpenInfo, PeerConfig, State, Timer,
    Timestamp, OPEN_SENT_HOLD_TIME,
};
use pathosd::bgp::rib_out::PeerShape;
use pathosd::bgp::session::{
    keepalive_window, Conn, MessageKind, Pass, PeerFsm, Refusal, SessionCore, Step, Transition,
};
use pathosd::bgp::types::{Afi, Community, Prefix, RouteIntent};
use pathosd::bgp::wire::{self, CeaseSubcode, DecodeCtx, Message, PathAttr, SkipReason};

const AS: u32 = 65001;

fn p(s: &str) -> Prefix {
    s.parse().unwrap()
}

fn shape() -> PeerShape {
    PeerShape {
        ebgp: true,
        local_as: AS,
        next_hop_v4: Some(Ipv4Addr::new(127, 0, 0, 1)),
        next_hop_v6: None,
        families: Vec::new(),
        ipv4_next_hop_v6: false,
        otc: None,
    }
}

fn host(i: u32) -> Prefix {
    Prefix::new(IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + i)), 32).unwrap()
}

fn announced() -> Option<Arc<RouteIntent>> {
    Some(Arc::new(RouteIntent::default()))
}

/// 1,100 communities: 4,400 octets of attributes, no room for a prefix in
/// a 4,096-octet UPDATE.
fn unencodable() -> Option<Arc<RouteIntent>> {
    Some(Arc::new(RouteIntent {
        as_path_prepend: 0,
        communities: (0..1100u16).map(|i| Community(65001, i)).collect(),
        large_communities: Vec::new(),
        ..RouteIntent::default()
    }))
}

/// A core whose session is Established (IPv4) with the initial evaluation
/// done and the (empty) first pass written.
fn established(t0: Instant) -> SessionCore {
    let mut c = SessionCore::new(shape(), 7);
    c.on_initial_done();
    c.on_established(&[Afi::Ipv4], true, shape(), t0);
    let first = c.next_pass().expect("End-of-RIB");
    assert_eq!(decode(&first).eor, 1);
    c.write_done();
    c
}

#[derive(Debug, Default)]
struct Decoded {
    messages: u32,
    announced: Vec<Prefix>,
    withdrawn: Vec<Prefix>,
    eor: u32,
}

/// Splits a pass's buffer into its UPDATEs and reads them back.
fn decode(pass: &Pass) -> Decoded {
    let ctx = DecodeCtx {
        four_octet_as: true,
        ebgp: true,
    };
    let mut out = Decoded::default();
    let mut buf = &pass.bytes[..];
    for _ in 0..10_000 {
        if buf.is_empty() {
            break;
        }
        let len = wire::frame(buf).expect("framed").expect("whole message");
        let Message::Update(u) = wire::decode(&buf[..len], &ctx).expect("decodes") else {
            panic!("not an UPDATE");
        };
        out.messages += 1;
        let mp = u.attrs.iter().any(|a| matches!(a, PathAttr::MpUnreach(_)));
        if u.nlri.is_empty() && u.withdrawn.is_empty() && (u.attrs.is_empty() || mp) {
            out.eor += 1;
        }
        out.announced.extend(u.nlri);
        out.withdrawn.extend(u.withdrawn);
        buf = &buf[len..];
    }
    assert!(buf.is_empty());
    assert_eq!(out.messages, pass.updates);
    out
}

/// The daemon's sessions plan from the owner's table instead of
/// a copy each. The owner changes the table first and the batch only names
/// the prefixes; a table filled from empty is one message, not a list;
/// End-of-RIB waits for the session's own InitialDone (in order with the
/// batches), not the owner's flag.
#[test]
fn a_session_plans_from_the_owners_table() {
    use pathosd::bgp::rib_out::RibOut;
    use std::cell::RefCell;
    use std::rc::Rc;
    let t0 = Instant::now();
    let rib = Rc::new(RefCell::new(RibOut::new()));
    let mut c = SessionCore::with_shared_rib(shape(), 1, rib.clone());
    let set = |prefix, intent| {
        rib.borrow_mut().set_desired_shared(prefix, intent);
        vec![(prefix, intent_of(&rib, prefix))]
    };
    for i in 0..1000 {
        rib.borrow_mut().set_desired_shared(host(i), announced());
    }
    c.on_table_replaced();
    // The owner's first evaluation is in, but this session has not been
    // told yet.
    rib.borrow_mut().mark_initial_done();
    assert!(c.next_pass().is_none(), "not Established");
    c.on_established(&[Afi::Ipv4], true, shape(), t0);
    let pass = c.next_pass().expect("the table");
    let d = decode(&pass);
    assert_eq!((d.announced.len(), d.eor), (1000, 0));
    // In the order BIRD's table walk will free them, each once.
    let mut want: Vec<_> = (0..1000).map(host).collect();
    want.sort_by_key(|p| p.bird_walk_key());
    assert_eq!(d.announced, want);
    c.write_done();
    c.on_initial_done();
    let d = decode(&c.next_pass().expect("End-of-RIB"));
    assert_eq!((d.messages, d.eor), (1, 1));
    c.write_done();
    // A change: the table first, then the batch naming it.
    let batch = set(host(5), None);
    c.on_routes(&batch);
    let batch2 = set(host(2000), announced());
    c.on_routes(&batch2);
    let d = decode(&c.next_pass().expect("the changes"));
    assert_eq!(
        (d.withdrawn, d.announced),
        (vec![host(5)], vec![host(2000)])
    );
    c.write_done();
    assert_eq!(c.adj_rib_out().advertised().len(), 1000);
    // A batch whose change the table already undid sends nothing.
    rib.borrow_mut().set_desired_shared(host(7), None);
    rib.borrow_mut().set_desired_shared(host(7), announced());
    c.on_routes(&[(host(7), None)]);
    assert!(c.next_pass().is_none());
    // All withdrawn at once (the stop): one message, every route goes.
    rib.borrow_mut().clear();
    c.on_table_replaced();
    let d = decode(&c.next_pass().expect("withdraw all"));
    let mut expect: Vec<Prefix> = (0..1000).filter(|i| *i != 5).map(host).collect();
    expect.push(host(2000));
    assert_eq!((d.withdrawn, d.announced.len()), (expect, 0));
    c.write_done();
    assert!(c.adj_rib_out().advertised().is_empty());
    // Filled from empty while Established: the whole table is planned.
    rib.borrow_mut().set_desired_shared(host(1), announced());
    c.on_table_replaced();
    let d = decode(&c.next_pass().expect("the new table"));
    assert_eq!(d.announced, vec![host(1)]);
}

fn intent_of(
    rib: &std::cell::RefCell<pathosd::bgp::rib_out::RibOut>,
    prefix: Prefix,
) -> Option<Arc<RouteIntent>> {
    rib.borrow().desired().get(&prefix).cloned()
}

#[test]
fn full_table_on_established_then_end_of_rib_after_the_initial_evaluation() {
    let t0 = Instant::now();
    let mut c = SessionCore::new(shape(), 1);
    // Batches before the session is up are only remembered.
    let batch: Vec<_> = (0..3).map(|i| (host(i), announced())).collect();
    c.on_routes(&batch);
    assert!(c.next_pass().is_none());
    c.on_established(&[Afi::Ipv4], true, shape(), t0);
    let pass = c.next_pass().expect("the table");
    let d = decode(&pass);
    assert_eq!((d.messages, d.announced.len(), d.eor), (1, 3, 0));
    c.write_done();
    assert!(c.next_pass().is_none());
    // The owner's initial evaluation completes: End-of-RIB alone.
    c.on_initial_done();
    let d = decode(&c.next_pass().expect("End-of-RIB"));
    assert_eq!((d.messages, d.eor), (1, 1));
    c.write_done();
    assert!(c.next_pass().is_none());
    assert_eq!(c.adj_rib_out().advertised().len(), 3);
}

#[test]
fn batches_that_arrive_while_a_pass_is_written_go_out_in_one_pass() {
    let t0 = Instant::now();
    let mut c = established(t0);
    c.on_routes(&[(host(0), announced())]);
    let first = c.next_pass().expect("first batch");
    assert_eq!(decode(&first).announced, vec![host(0)]);
    assert!(c.writing());
    // 1,000 single-route batches while the first pass is in flight ...
    for i in 1..=1000 {
        c.on_routes(&[(host(i), announced())]);
        assert!(c.next_pass().is_none(), "a pass while one is written");
    }
    // ... and one that withdraws the first route again.
    c.on_routes(&[(host(0), None)]);
    c.write_done();
    let pass = c.next_pass().expect("the coalesced pass");
    let d = decode(&pass);
    assert_eq!(d.announced.len(), 1000);
    assert_eq!(d.withdrawn, vec![host(0)]);
    // 1,000 /32s with one attribute set fit in two UPDATEs, plus the
    // withdrawal.
    assert!(d.messages <= 3, "{} UPDATEs", d.messages);
    c.write_done();
    assert!(c.next_pass().is_none());
    assert_eq!(c.adj_rib_out().advertised().len(), 1000);
}

#[test]
fn ten_thousand_routes_in_at_most_13_updates() {
    let t0 = Instant::now();
    let mut c = established(t0);
    let batch: Vec<_> = (0..10_000).map(|i| (host(i), announced())).collect();
    c.on_routes(&batch);
    let d = decode(&c.next_pass().expect("pass"));
    assert_eq!(d.announced.len(), 10_000);
    assert!(d.messages <= 13, "{} UPDATEs", d.messages);
}

#[test]
fn a_route_the_encoder_skips_is_reported_and_not_advertised() {
    let t0 = Instant::now();
    let mut c = established(t0);
    c.on_routes(&[(p("10.9.9.9/32"), unencodable()), (host(1), announced())]);
    let pass = c.next_pass().expect("pass");
    assert_eq!(pass.skipped.len(), 1, "{:?}", pass.skipped);
    assert_eq!(pass.skipped[0].prefixes, vec![p("10.9.9.9/32")]);
    assert!(matches!(
        pass.skipped[0].reason,
        SkipReason::AttributesTooLong(_)
    ));
    assert_eq!(decode(&pass).announced, vec![host(1)]);
    c.write_done();
    assert!(!c.adj_rib_out().advertised().contains_key(&p("10.9.9.9/32")));
    assert_eq!(c.summary().advertised, 1);
    // What /metrics reads (the Adj-RIB-Out itself) does not have it either.
    let routes: Vec<Prefix> = c.adj_rib_out().advertised().keys().copied().collect();
    assert_eq!(routes, vec![host(1)]);
    // Its withdrawal sends nothing: the peer never had it.
    c.on_routes(&[(p("10.9.9.9/32"), None)]);
    assert!(c.next_pass().is_none());
}

#[test]
fn a_sent_route_that_becomes_unencodable_is_withdrawn() {
    let t0 = Instant::now();
    let mut c = established(t0);
    c.on_routes(&[(host(5), announced())]);
    c.next_pass().expect("pass");
    c.write_done();
    // Its new attributes cannot be encoded: the peer must not keep the old.
    c.on_routes(&[(host(5), unencodable())]);
    let pass = c.next_pass().expect("pass");
    assert_eq!(pass.skipped.len(), 1);
    let d = decode(&pass);
    assert_eq!((d.announced.len(), d.withdrawn.clone()), (0, vec![host(5)]));
    c.write_done();
    assert!(c.adj_rib_out().advertised().is_empty());
}

#[test]
fn status_reports_state_counters_and_adj_rib_out_changes() {
    let t0 = Instant::now();
    let mut c = SessionCore::new(shape(), 3);
    // The first report is the initial summary.
    let first = c.take_summary();
    assert!(matches!(&first, Some(s) if s.state == "idle" && s.running));
    assert!(c.take_summary().is_none(), "nothing changed");

    // Retries that fail the same way are not worth an info line each.
    assert!(!c.on_transition(State::Idle, State::Connect, None));
    assert!(c.on_transition(State::Connect, State::Idle, Some("connection refused")));
    assert!(!c.on_transition(State::Idle, State::Connect, None));
    assert!(!c.on_transition(State::Connect, State::Idle, Some("connection refused")));
    assert!(c.on_transition(State::Connect, State::Idle, Some("hold timer expired")));
    assert_eq!(
        c.summary().last_error.as_deref(),
        Some("hold timer expired")
    );

    c.on_message_in(MessageKind::Open);
    c.on_message_out(MessageKind::Update, 13);
    assert!(c.on_transition(State::OpenConfirm, State::Established, None));
    let up = t0 + Duration::from_secs(5);
    c.on_established(&[Afi::Ipv4], true, shape(), up);
    c.on_routes(&[(host(1), announced())]);
    c.next_pass().expect("pass");
    c.write_done();
    let s = c.summary();
    assert_eq!(s.state, "established");
    assert_eq!(s.established_at, Some(up));
    assert_eq!((s.established_count, s.flaps, s.advertised), (1, 0, 1));
    assert_eq!((s.messages_in.open, s.messages_out.update), (1, 13));
    assert_eq!(s.last_error, None, "cleared on Established");
    // The summary that counts the routes; the routes themselves stay in
    // the session, where the owner reads them.
    let u = c.take_summary();
    assert!(matches!(&u, Some(s) if s.advertised == 1));
    assert_eq!(c.adj_rib_out().advertised().len(), 1);

    // Down: the owner drops the peer's routes, the flap is counted.
    assert!(c.on_transition(State::Established, State::Idle, Some("hold timer expired")));
    c.on_session_down();
    let u = c.take_summary();
    assert!(matches!(&u, Some(s)
        if s.flaps == 1 && s.advertised == 0 && s.established_at.is_none()));
    assert!(c.adj_rib_out().advertised().is_empty());
    c.on_stopped_for_good("cannot set the TCP MD5 key".into());
    assert!(!c.summary().running);
}

// ---- connection collisions (RFC 4271 §6.8) --------------------------------
//
// The peer's two FSMs replayed: every step the driver carries out, in
// order, for each connection.

const PEER_AS: u32 = 65000;

fn our_id() -> Ipv4Addr {
    Ipv4Addr::new(192, 0, 2, 5)
}

fn peer_config() -> PeerConfig {
    PeerConfig::new(AS, PEER_AS, our_id())
}

fn open_from(id: Ipv4Addr, asn: u32) -> OpenInfo {
    OpenInfo {
        asn,
        hold_time: 90,
        bgp_id: id,
        capabilities: peer_config().capabilities,
    }
}

/// Cease / Connection Collision Resolution: RFC 4486 §4, subcode 7.
fn cease_7() -> Notification {
    Notification::cease(CeaseSubcode::ConnectionCollisionResolution)
}

fn ms(n: u64) -> Timestamp {
    Timestamp(n)
}

/// A peer that dialled the peer (our connection) and is in `state`:
/// OpenSent (our OPEN sent), OpenConfirm (its OPEN in) or Established.
fn peer_in(state: State, peer: &OpenInfo) -> PeerFsm {
    let mut p = PeerFsm::new(peer_config());
    p.handle(Conn::Main, Event::ManualStart, ms(0));
    p.handle(Conn::Main, Event::TcpCrAcked, ms(1));
    if state != State::OpenSent {
        p.handle(Conn::Main, Event::BGPOpen(peer.clone()), ms(2));
    }
    if state == State::Established {
        p.handle(Conn::Main, Event::KeepAliveMsg, ms(3));
    }
    assert_eq!(p.state(Conn::Main), Some(state));
    assert_eq!(p.main_connection(), Some(ConnectionOrigin::Local));
    p
}

/// The steps of an inbound connection tracked as the candidate: our OPEN
/// on it, and its HoldTimer.
fn candidate_opened() -> Vec<Step> {
    vec![
        Step::AcceptCandidate,
        Step::Fsm(Conn::Candidate, Action::SendOpen(peer_config().open())),
        Step::Fsm(
            Conn::Candidate,
            Action::StartTimer(Timer::Hold, OPEN_SENT_HOLD_TIME),
        ),
    ]
}

/// The losing FSM's OpenCollisionDump (RFC 4271 §8.2.2, Event 23): the
/// Cease, its timers stopped, the connection dropped, the IdleHoldTimer.
fn dumped(conn: Conn, timers: &[Timer]) -> Vec<Step> {
    let mut v = vec![Step::Fsm(conn, Action::SendNotification(cease_7()))];
    v.extend(
        timers
            .iter()
            .map(|t| Step::Fsm(conn, Action::StopTimer(*t))),
    );
    v.push(Step::Fsm(conn, Action::DropConnection));
    v.push(Step::Fsm(
        conn,
        Action::StartTimer(Timer::IdleHold, Duration::from_secs(1)),
    ));
    v
}

#[test]
fn inbound_connections_by_state() {
    // RFC 4271 §8.2.2 Connect, Event 17: the peer's connection is the
    // session's, our attempt is aborted.
    let mut p = PeerFsm::new(peer_config());
    p.handle(Conn::Main, Event::ManualStart, ms(0));
    let steps = p.inbound(ms(1));
    assert_eq!(steps[0], Step::AcceptMain);
    assert!(steps.contains(&Step::Fsm(
        Conn::Main,
        Action::SendOpen(peer_config().open())
    )));
    assert_eq!(p.state(Conn::Main), Some(State::OpenSent));
    assert_eq!(p.main_connection(), Some(ConnectionOrigin::Remote));
    // §8.2.2 Idle "refuses all incoming BGP connections".
    let mut idle = PeerFsm::new(peer_config());
    assert_eq!(idle.inbound(ms(0)), vec![Step::Refuse(Refusal::Idle)]);
    // From OpenSent on a second connection is tracked (§6.8) ...
    assert_eq!(p.inbound(ms(2)), candidate_opened());
    assert_eq!(p.state(Conn::Candidate), Some(State::OpenSent));
    // ... one at a time.
    assert_eq!(
        p.inbound(ms(3)),
        vec![Step::Refuse(Refusal::CandidateTracked)]
    );
}

/// RFC 4271 §6.8: "a connection collision with an existing BGP connection
/// that is in the Established state causes closing of the newly created
/// connection": it gets Cease 6/7 at once, the session stays up.
#[test]
fn a_collision_with_an_established_session_closes_the_new_connection() {
    // The peer's identifier is the larger: it would win if not Established.
    let peer = open_from(Ipv4Addr::new(192, 0, 2, 9), PEER_AS);
    let mut p = peer_in(State::Established, &peer);
    let mut want = candidate_opened();
    want.extend(dumped(Conn::Candidate, &[Timer::Hold]));
    want.push(Step::ForgetCandidate);
    assert_eq!(p.inbound(ms(10)), want);
    assert_eq!(p.state(Conn::Main), Some(State::Established));
    assert!(p.state(Conn::Candidate).is_none());
}

/// RFC 4271 §6.8: "If the value of the local BGP Identifier is less than
/// the remote one, the local system closes the BGP connection that already
/// exists (the one that is already in the OpenConfirm state), and accepts
/// the BGP connection initiated by the remote system."
#[test]
fn collision_in_open_confirm_keeps_the_peers_connection_when_its_identifier_is_larger() {
    let peer = open_from(Ipv4Addr::new(192, 0, 2, 9), PEER_AS);
    let mut p = peer_in(State::OpenConfirm, &peer);
    assert_eq!(p.inbound(ms(10)), candidate_opened());
    let steps = p.handle(Conn::Candidate, Event::BGPOpen(peer.clone()), ms(11));
    let mut want = vec![Step::Collision {
        kept: Conn::Candidate,
    }];
    want.extend(dumped(Conn::Main, &[Timer::Hold, Timer::Keepalive]));
    want.push(Step::Transition(Transition {
        from: State::OpenConfirm,
        to: State::Idle,
        reason: Some(DownReason::CollisionDump),
        stalled: None,
    }));
    // The candidate is the session now, and its OPEN is handled there.
    want.extend([
        Step::Promote,
        Step::Fsm(Conn::Main, Action::SendKeepalive),
        Step::Fsm(
            Conn::Main,
            Action::StartTimer(Timer::Keepalive, Duration::from_secs(30)),
        ),
        Step::Fsm(
            Conn::Main,
            Action::StartTimer(Timer::Hold, Duration::from_secs(90)),
        ),
        Step::Transition(Transition {
            from: State::OpenSent,
            to: State::OpenConfirm,
            reason: None,
            stalled: None,
        }),
    ]);
    assert_eq!(steps, want);
    assert!(p.state(Conn::Candidate).is_none());
    assert_eq!(p.main_connection(), Some(ConnectionOrigin::Remote));
    // The peer's KEEPALIVE on the surviving connection: Established.
    let up = p.handle(Conn::Main, Event::KeepAliveMsg, ms(12));
    assert!(up
        .iter()
        .any(|s| matches!(s, Step::Fsm(Conn::Main, Action::SessionEstablished(_)))));
    assert_eq!(p.state(Conn::Main), Some(State::Established));
}

/// RFC 4271 §6.8: "Otherwise, the local system closes the newly created
/// BGP connection (the one associated with the newly received OPEN
/// message), and continues to use the existing one (the one that is
/// already in the OpenConfirm state)."
#[test]
fn collision_in_open_confirm_keeps_our_connection_when_our_identifier_is_larger() {
    let peer = open_from(Ipv4Addr::new(192, 0, 2, 1), PEER_AS);
    let mut p = peer_in(State::OpenConfirm, &peer);
    p.inbound(ms(10));
    let steps = p.handle(Conn::Candidate, Event::BGPOpen(peer), ms(11));
    let mut want = vec![Step::Collision { kept: Conn::Main }];
    want.extend(dumped(Conn::Candidate, &[Timer::Hold]));
    want.push(Step::ForgetCandidate);
    assert_eq!(steps, want);
    // The session did not move.
    assert_eq!(p.state(Conn::Main), Some(State::OpenConfirm));
    assert_eq!(p.main_connection(), Some(ConnectionOrigin::Local));
}

/// Our OPEN is out but the peer's is not in yet on our connection when
/// the candidate's OPEN arrives (what the raw interop test does on the
/// wire): decided at once, by the same rule.
#[test]
fn collision_in_open_sent_is_decided_at_the_candidates_open() {
    let larger = open_from(Ipv4Addr::new(192, 0, 2, 9), PEER_AS);
    let mut p = peer_in(State::OpenSent, &larger);
    p.inbound(ms(10));
    let steps = p.handle(Conn::Candidate, Event::BGPOpen(larger.clone()), ms(11));
    assert_eq!(
        steps[..2],
        [
            Step::Collision {
                kept: Conn::Candidate
            },
            Step::Fsm(Conn::Main, Action::SendNotification(cease_7())),
        ]
    );
    assert_eq!(p.state(Conn::Main), Some(State::OpenConfirm));
    let smaller = open_from(Ipv4Addr::new(192, 0, 2, 1), PEER_AS);
    let mut p = peer_in(State::OpenSent, &smaller);
    p.inbound(ms(10));
    let steps = p.handle(Conn::Candidate, Event::BGPOpen(smaller), ms(11));
    assert_eq!(steps[0], Step::Collision { kept: Conn::Main });
    assert!(steps.contains(&Step::Fsm(
        Conn::Candidate,
        Action::SendNotification(cease_7())
    )));
    // Our connection still waits for the peer's OPEN.
    assert_eq!(p.state(Conn::Main), Some(State::OpenSent));
}

/// RFC 6286 §2.3: "If the BGP Identifiers of the peers involved in the
/// connection collision are identical, then the connection initiated by
/// the BGP speaker with the larger AS number is preserved."
#[test]
fn collision_with_equal_identifiers_keeps_the_larger_as_connection() {
    // Ours (65001) is the larger AS: our connection stays.
    let same = open_from(our_id(), PEER_AS);
    let mut p = peer_in(State::OpenConfirm, &same);
    p.inbound(ms(10));
    let steps = p.handle(Conn::Candidate, Event::BGPOpen(same), ms(11));
    assert_eq!(steps[0], Step::Collision { kept: Conn::Main });
    // A peer in a larger AS: its connection stays.
    let cfg = PeerConfig::new(AS, 65100, our_id());
    let same = open_from(our_id(), 65100);
    let mut p = PeerFsm::new(cfg);
    p.handle(Conn::Main, Event::ManualStart, ms(0));
    p.handle(Conn::Main, Event::TcpCrAcked, ms(1));
    p.inbound(ms(10));
    let steps = p.handle(Conn::Candidate, Event::BGPOpen(same), ms(11));
    assert_eq!(
        steps[0],
        Step::Collision {
            kept: Conn::Candidate
        }
    );
}

/// The session's connection failed while the candidate waited for its
/// OPEN: no collision is left, the candidate carries on as the session.
#[test]
fn a_candidate_outliving_the_session_becomes_it_without_a_collision() {
    let peer = open_from(Ipv4Addr::new(192, 0, 2, 1), PEER_AS);
    let mut p = peer_in(State::OpenConfirm, &peer);
    p.inbound(ms(10));
    p.handle(Conn::Main, Event::TcpConnectionFails, ms(11));
    assert_eq!(p.state(Conn::Main), Some(State::Idle));
    assert_eq!(p.state(Conn::Candidate), Some(State::OpenSent));
    let steps = p.handle(Conn::Candidate, Event::BGPOpen(peer), ms(12));
    assert_eq!(steps[0], Step::Promote);
    assert!(!steps.iter().any(|s| matches!(s, Step::Collision { .. })
        || *s == Step::Fsm(Conn::Main, Action::SendNotification(cease_7()))));
    assert_eq!(p.state(Conn::Main), Some(State::OpenConfirm));
}

/// A candidate that fails is forgotten; the session goes on. A stop
/// forgets the candidate before the session's Cease.
#[test]
fn a_failed_candidate_is_forgotten_and_a_stop_forgets_it() {
    let peer = open_from(Ipv4Addr::new(192, 0, 2, 9), PEER_AS);
    let mut p = peer_in(State::OpenConfirm, &peer);
    p.inbound(ms(10));
    let steps = p.handle(Conn::Candidate, Event::TcpConnectionFails, ms(11));
    assert_eq!(steps.last(), Some(&Step::ForgetCandidate));
    assert!(!steps.iter().any(|s| matches!(s, Step::Fsm(Conn::Main, _))));
    assert_eq!(p.state(Conn::Main), Some(State::OpenConfirm));
    p.inbound(ms(12));
    let steps = p.handle(
        Conn::Main,
        Event::ManualStop {
            shutdown_message: None,
        },
        ms(13),
    );
    assert_eq!(steps[0], Step::ForgetCandidate);
    assert!(p.state(Conn::Candidate).is_none());
    assert_eq!(p.state(Conn::Main), Some(State::Idle));
    // Events for a candidate that is gone change nothing.
    assert!(p
        .handle(Conn::Candidate, Event::KeepAliveMsg, ms(14))
        .is_empty());
}

#[test]
fn retry_jitter_stays_within_three_quarters_and_one() {
    let mut c = SessionCore::new(shape(), 42);
    let base = Duration::from_secs(30);
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..1000 {
        let d = c.jitter(base);
        assert!(d >= base * 3 / 4 && d <= base, "{d:?}");
        seen.insert(d.as_millis() / 1000);
    }
    // Spread over the whole range, not one value.
    assert!(seen.len() >= 7, "{seen:?}");
}

/// RFC 4271 §10: a KEEPALIVE may leave anywhere in 0.75 .. 1.0 of the
/// KeepaliveTimer; §4.4: never more often than once a second. The window
/// the driver rides on other wake-ups with stays inside both.
#[test]
fn keepalive_window_is_three_quarters_to_one_and_never_under_a_second() {
    let s = Duration::from_secs;
    // Hold time 90 s: keepalive 30 s, window 22.5 .. 30 s.
    assert_eq!(
        keepalive_window(s(30)),
        (Duration::from_millis(22_500), s(30))
    );
    // Hold time 6 s: keepalive 2 s, window 1.5 .. 2 s.
    assert_eq!(keepalive_window(s(2)), (Duration::from_millis(1_500), s(2)));
    // 4/3 s would allow 1 s exactly: the §4.4 floor.
    assert_eq!(keepalive_window(Duration::from_millis(1_333)).0, s(1));
    // Hold time 3 s: keepalive 1 s, 0.75 s would break §4.4: no window.
    assert_eq!(keepalive_window(s(1)), (s(1), s(1)));
    for ms in (1_000..=120_000).step_by(997) {
        let d = Duration::from_millis(ms);
        let (earliest, latest) = keepalive_window(d);
        assert_eq!(latest, d);
        assert!(
            earliest >= s(1) && earliest <= latest,
            "{d:?}: {earliest:?}"
        );
        assert!(earliest >= d * 3 / 4, "{d:?}: {earliest:?}");
    }
}
