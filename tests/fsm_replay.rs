//! Replay tests of the BGP FSM: a script of (time, event) steps, each with the
//! exact actions and state expected, run without sockets or clocks. Plus a
//! proptest that random event sequences never panic and never reach an
//! impossible state.

use std::net::Ipv4Addr;
use std::time::Duration;

use pathosd::bgp::fsm::{
    resolve_collision, Action, Capabilities, ConnectionOrigin, DownReason, Event, Fsm, Negotiated,
    Notification, OpenInfo, PeerConfig, Role, State, Timer, Timestamp, OPEN_SENT_HOLD_TIME,
    OWN_STALL,
};
use pathosd::bgp::types::Afi;
use pathosd::bgp::wire::{CeaseSubcode, ErrorCode, OpenError};

const LOCAL_AS: u32 = 65001;
const PEER_AS: u32 = 65000;

fn local_id() -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, 1)
}

fn peer_id() -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, 2)
}

fn config() -> PeerConfig {
    PeerConfig::new(LOCAL_AS, PEER_AS, local_id())
}

fn peer_caps() -> Capabilities {
    Capabilities {
        four_octet_as: true,
        mp_ipv4: true,
        mp_ipv6: true,
        route_refresh: true,
        graceful_restart: true,
        extended_next_hop: false,
        role: None,
    }
}

fn peer_open(hold_time: u16) -> OpenInfo {
    OpenInfo {
        asn: PEER_AS,
        hold_time,
        bgp_id: peer_id(),
        capabilities: peer_caps(),
    }
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn notif(code: u8, subcode: u8) -> Notification {
    Notification {
        code,
        subcode,
        data: Vec::new(),
    }
}

/// One replay step: at `at_ms` feed `event`; expect exactly `actions` and
/// then `state`.
struct Step {
    at_ms: u64,
    event: Event,
    actions: Vec<Action>,
    state: State,
}

fn step(at_ms: u64, event: Event, actions: Vec<Action>, state: State) -> Step {
    Step {
        at_ms,
        event,
        actions,
        state,
    }
}

fn replay(fsm: &mut Fsm, steps: Vec<Step>) {
    for (i, s) in steps.into_iter().enumerate() {
        let desc = format!("step {i} at {} ms: {:?}", s.at_ms, s.event);
        let got = fsm.handle(s.event, Timestamp(s.at_ms));
        assert_eq!(got, s.actions, "{desc}");
        assert_eq!(fsm.state(), s.state, "{desc}");
    }
}

/// The steps from Idle to Established for an active peer, starting at `t`.
fn establish_steps(cfg: &PeerConfig, t: u64) -> Vec<Step> {
    vec![
        step(
            t,
            Event::ManualStart,
            vec![
                Action::StartTimer(Timer::ConnectRetry, cfg.connect_retry_time),
                Action::Connect,
            ],
            State::Connect,
        ),
        step(
            t + 3,
            Event::TcpCrAcked,
            vec![
                Action::StopTimer(Timer::ConnectRetry),
                Action::SendOpen(cfg.open()),
                Action::StartTimer(Timer::Hold, OPEN_SENT_HOLD_TIME),
            ],
            State::OpenSent,
        ),
        step(
            t + 5,
            Event::BGPOpen(peer_open(180)),
            vec![
                Action::SendKeepalive,
                Action::StartTimer(Timer::Keepalive, secs(30)),
                Action::StartTimer(Timer::Hold, secs(90)),
            ],
            State::OpenConfirm,
        ),
        step(
            t + 7,
            Event::KeepAliveMsg,
            vec![
                Action::StartTimer(Timer::Hold, secs(90)),
                Action::SessionEstablished(negotiated_default()),
            ],
            State::Established,
        ),
    ]
}

fn negotiated_default() -> Negotiated {
    Negotiated {
        hold_time: 90,
        keepalive: 30,
        four_octet_as: true,
        families: vec![Afi::Ipv4],
        route_refresh: true,
        peer_graceful_restart: true,
        extended_next_hop: false,
        peer_as: PEER_AS,
        peer_id: peer_id(),
        ebgp: true,
    }
}

/// The steps to OpenSent (connect + TCP up), starting at `t`.
fn open_sent_steps(cfg: &PeerConfig, t: u64) -> Vec<Step> {
    establish_steps(cfg, t).into_iter().take(2).collect()
}

#[test]
fn happy_path_reaches_established_with_one_connect() {
    let cfg = config();
    let mut fsm = Fsm::new(cfg.clone());
    let mut steps = establish_steps(&cfg, 0);
    steps.extend([
        step(
            30_007,
            Event::KeepaliveTimerExpires,
            vec![
                Action::SendKeepalive,
                Action::StartTimer(Timer::Keepalive, secs(30)),
            ],
            State::Established,
        ),
        step(
            31_000,
            Event::UpdateMsg,
            vec![Action::StartTimer(Timer::Hold, secs(90))],
            State::Established,
        ),
        step(
            32_000,
            Event::KeepAliveMsg,
            vec![Action::StartTimer(Timer::Hold, secs(90))],
            State::Established,
        ),
    ]);
    replay(&mut fsm, steps);
    assert_eq!(fsm.peer_open(), Some(&peer_open(180)));
    assert_eq!(fsm.negotiated(), Some(&negotiated_default()));
}

#[test]
fn the_open_we_send_comes_from_the_config() {
    let mut cfg = config();
    cfg.local_as = 4_200_000_001;
    cfg.hold_time = 9;
    cfg.capabilities.mp_ipv6 = true;
    cfg.capabilities.graceful_restart = true;
    let open = cfg.open();
    assert_eq!(open.asn, 4_200_000_001);
    assert_eq!(open.hold_time, 9);
    assert_eq!(open.bgp_id, local_id());
    assert_eq!(open.capabilities, cfg.capabilities);
    // RFC 4271 §4.2: a configured 1 or 2 would be rejected by the peer.
    cfg.hold_time = 2;
    assert_eq!(cfg.open().hold_time, 3);
}

#[test]
fn hold_timer_expiry_sends_notification_4_0_and_goes_idle() {
    let cfg = config();
    let mut fsm = Fsm::new(cfg.clone());
    let mut steps = establish_steps(&cfg, 0);
    steps.extend([
        step(
            90_007,
            Event::HoldTimerExpires,
            vec![
                Action::SendNotification(notif(4, 0)),
                Action::StopTimer(Timer::Keepalive),
                Action::DropConnection,
                Action::SessionDown(DownReason::NotificationSent(notif(4, 0))),
                // Established for 90 s, longer than stable_time (60 s): the
                // IdleHoldTimer is zero, the restart is due at once.
                Action::StartTimer(Timer::IdleHold, Duration::ZERO),
            ],
            State::Idle,
        ),
        // Restart after the IdleHoldTimer: connect again at once.
        step(
            90_007,
            Event::IdleHoldTimerExpires,
            vec![
                Action::StartTimer(Timer::ConnectRetry, cfg.connect_retry_time),
                Action::Connect,
            ],
            State::Connect,
        ),
    ]);
    replay(&mut fsm, steps);
    assert_eq!(
        fsm.last_down_reason(),
        Some(&DownReason::NotificationSent(notif(4, 0)))
    );
}

#[test]
fn hold_timer_expiry_in_open_sent_uses_the_large_timer() {
    let cfg = config();
    let mut fsm = Fsm::new(cfg.clone());
    let mut steps = open_sent_steps(&cfg, 0);
    steps.push(step(
        240_003,
        Event::HoldTimerExpires,
        vec![
            Action::SendNotification(notif(4, 0)),
            Action::DropConnection,
            Action::StartTimer(Timer::IdleHold, secs(1)),
        ],
        State::Idle,
    ));
    replay(&mut fsm, steps);
}

/// RFC 9687: bytes that wait to be written start the SendHoldTimer, a
/// write that moves some restarts it, one that empties the buffer stops it.
#[test]
fn send_hold_timer_runs_only_while_bytes_wait_and_progress_restarts_it() {
    let mut cfg = config();
    cfg.send_hold_time = secs(2);
    let mut fsm = Fsm::new(cfg.clone());
    let mut steps = establish_steps(&cfg, 0);
    steps.extend([
        // A pass the socket did not take: the timer starts.
        step(
            100,
            Event::WriteBlocked,
            vec![Action::StartTimer(Timer::SendHold, secs(2))],
            State::Established,
        ),
        // Still blocked later (another write queued): it keeps running
        // from the first blocked byte, not restarted.
        step(1_500, Event::WriteBlocked, vec![], State::Established),
        // Bytes moved, some still wait: restarted.
        step(
            1_900,
            Event::WriteProgress { waiting: true },
            vec![Action::StartTimer(Timer::SendHold, secs(2))],
            State::Established,
        ),
        // Everything written: stopped.
        step(
            2_500,
            Event::WriteProgress { waiting: false },
            vec![Action::StopTimer(Timer::SendHold)],
            State::Established,
        ),
        // A stale fire after the stop does nothing.
        step(
            3_900,
            Event::SendHoldTimerExpires,
            vec![],
            State::Established,
        ),
    ]);
    replay(&mut fsm, steps);
    assert!(!fsm.is_running(Timer::SendHold));
}

/// RFC 9687: no progress for the send hold time closes the session
/// without a NOTIFICATION (it could only queue behind the bytes the peer
/// does not take), down reason "send hold timer expired", and the
/// back-off applies as after any error.
#[test]
fn send_hold_timer_expiry_closes_without_notification() {
    let mut cfg = config();
    cfg.send_hold_time = secs(2);
    let mut fsm = Fsm::new(cfg.clone());
    let mut steps = establish_steps(&cfg, 0);
    steps.extend([
        step(
            100,
            Event::WriteBlocked,
            vec![Action::StartTimer(Timer::SendHold, secs(2))],
            State::Established,
        ),
        step(
            2_100,
            Event::SendHoldTimerExpires,
            vec![
                Action::StopTimer(Timer::Hold),
                Action::StopTimer(Timer::Keepalive),
                Action::DropConnection,
                Action::SessionDown(DownReason::SendHoldTimerExpired),
                Action::StartTimer(Timer::IdleHold, secs(1)),
            ],
            State::Idle,
        ),
    ]);
    replay(&mut fsm, steps);
    assert_eq!(
        fsm.last_down_reason(),
        Some(&DownReason::SendHoldTimerExpired)
    );
}

/// The timer also guards our OPEN in OpenSent; a zero send hold time
/// (configured off) never starts it; without a connection the write
/// reports are ignored.
#[test]
fn send_hold_timer_in_open_sent_off_and_without_connection() {
    let mut cfg = config();
    // Shorter than OpenSent's 4-minute HoldTimer, which would fire first.
    cfg.send_hold_time = secs(200);
    let mut fsm = Fsm::new(cfg.clone());
    let mut steps = open_sent_steps(&cfg, 0);
    steps.extend([
        step(
            10,
            Event::WriteBlocked,
            vec![Action::StartTimer(Timer::SendHold, secs(200))],
            State::OpenSent,
        ),
        step(
            200_010,
            Event::SendHoldTimerExpires,
            vec![
                Action::StopTimer(Timer::Hold),
                Action::DropConnection,
                Action::StartTimer(Timer::IdleHold, secs(1)),
            ],
            State::Idle,
        ),
    ]);
    replay(&mut fsm, steps);

    cfg.send_hold_time = Duration::ZERO;
    let mut fsm = Fsm::new(cfg.clone());
    let mut steps = establish_steps(&cfg, 0);
    steps.push(step(100, Event::WriteBlocked, vec![], State::Established));
    replay(&mut fsm, steps);

    let mut fsm = Fsm::new(config());
    replay(
        &mut fsm,
        vec![
            step(
                0,
                Event::ManualStart,
                vec![
                    Action::StartTimer(Timer::ConnectRetry, config().connect_retry_time),
                    Action::Connect,
                ],
                State::Connect,
            ),
            step(1, Event::WriteBlocked, vec![], State::Connect),
            step(
                2,
                Event::WriteProgress { waiting: true },
                vec![],
                State::Connect,
            ),
        ],
    );
}

/// RFC 9687 §3.4's default: the greater of 8 minutes and twice the hold
/// time.
#[test]
fn send_hold_time_default_is_the_greater_of_8_minutes_and_twice_hold() {
    use pathosd::bgp::fsm::default_send_hold_time;
    assert_eq!(default_send_hold_time(90), secs(480));
    assert_eq!(default_send_hold_time(0), secs(480));
    assert_eq!(default_send_hold_time(240), secs(480));
    assert_eq!(default_send_hold_time(241), secs(482));
    assert_eq!(default_send_hold_time(u16::MAX), secs(131_070));
    assert_eq!(config().send_hold_time, secs(480));
}

/// Feeds `open` in OpenSent and expects the NOTIFICATION `n` and Idle.
fn open_rejected(cfg: PeerConfig, open: OpenInfo, n: Notification) {
    let mut fsm = Fsm::new(cfg.clone());
    let mut steps = open_sent_steps(&cfg, 0);
    steps.push(step(
        10,
        Event::BGPOpen(open),
        vec![
            Action::SendNotification(n.clone()),
            Action::StopTimer(Timer::Hold),
            Action::DropConnection,
            Action::StartTimer(Timer::IdleHold, secs(1)),
        ],
        State::Idle,
    ));
    replay(&mut fsm, steps);
    assert_eq!(
        fsm.last_down_reason(),
        Some(&DownReason::NotificationSent(n))
    );
    assert_eq!(fsm.peer_open(), None);
}

/// Whether an OPEN with the peer's Role capability `theirs` is accepted
/// by an FSM with our `role` (and strict mode `require`).
fn role_accepted(role: Option<Role>, require: bool, theirs: Option<u8>) -> bool {
    let mut cfg = config();
    cfg.role = role;
    cfg.require_role = require;
    cfg.capabilities.role = role.map(|r| r as u8);
    let mut fsm = Fsm::new(cfg.clone());
    replay(&mut fsm, open_sent_steps(&cfg, 0));
    let mut open = peer_open(90);
    open.capabilities.role = theirs;
    let actions = fsm.handle(Event::BGPOpen(open), Timestamp(10));
    match fsm.state() {
        State::OpenConfirm => true,
        State::Idle => {
            // RFC 9234 §4.2: "the BGP speaker MUST reject the connection
            // using the Role Mismatch Notification (code 2, subcode 11)".
            assert_eq!(actions[0], Action::SendNotification(notif(2, 11)));
            false
        }
        s => panic!("{s:?}"),
    }
}

/// RFC 9234 §4.2, Table 2: the allowed pairs (Provider-Customer,
/// Customer-Provider, RS-RS-Client, RS-Client-RS, Peer-Peer); every other
/// value, assigned or not, is a Role Mismatch, as are differing duplicate
/// capabilities (`ROLE_CONFLICT`).
#[test]
fn role_pairs_follow_table_2_and_others_get_role_mismatch() {
    use Role::*;
    let roles = [Provider, Rs, RsClient, Customer, Peer];
    let allowed = [
        (Provider, Customer),
        (Customer, Provider),
        (Rs, RsClient),
        (RsClient, Rs),
        (Peer, Peer),
    ];
    for ours in roles {
        assert_eq!(ours.expected_peer().expected_peer(), ours);
        for theirs in 0..=u8::MAX {
            let want = allowed.contains(&(ours, ours.expected_peer()))
                && theirs == ours.expected_peer() as u8;
            for require in [false, true] {
                assert_eq!(
                    role_accepted(Some(ours), require, Some(theirs)),
                    want,
                    "{ours:?} vs {theirs} (strict {require})"
                );
            }
        }
    }
    assert!(!role_accepted(
        Some(Peer),
        false,
        Some(pathosd::bgp::wire::ROLE_CONFLICT)
    ));
}

/// RFC 9234 §4.2: a peer without the capability is accepted unless strict
/// mode is on; without a role of ours the peer's is not looked at.
#[test]
fn a_missing_role_is_refused_only_in_strict_mode() {
    assert!(role_accepted(Some(Role::Customer), false, None));
    assert!(!role_accepted(Some(Role::Customer), true, None));
    assert!(role_accepted(None, false, Some(Role::Customer as u8)));
    assert!(role_accepted(None, false, Some(200)));
    assert!(role_accepted(None, false, None));
}

/// RFC 8950: IPv4 routes take the IPv6 next hop only when both sides
/// offered Extended Next Hop Encoding.
#[test]
fn extended_next_hop_is_negotiated_only_when_both_offer_it() {
    for (ours, theirs) in [(false, false), (true, false), (false, true), (true, true)] {
        let mut cfg = config();
        cfg.capabilities.extended_next_hop = ours;
        let mut fsm = Fsm::new(cfg.clone());
        replay(&mut fsm, open_sent_steps(&cfg, 0));
        let mut open = peer_open(90);
        open.capabilities.extended_next_hop = theirs;
        fsm.handle(Event::BGPOpen(open), Timestamp(10));
        let n = fsm.negotiated().unwrap();
        assert_eq!(n.extended_next_hop, ours && theirs, "{ours} {theirs}");
    }
}

#[test]
fn open_with_wrong_peer_as_is_bad_peer_as() {
    let mut open = peer_open(90);
    open.asn = 65099;
    open_rejected(
        config(),
        open,
        notif(ErrorCode::OpenMessage as u8, OpenError::BadPeerAs as u8),
    );
}

#[test]
fn open_with_hold_time_one_or_two_is_unacceptable() {
    for hold in [1, 2] {
        open_rejected(
            config(),
            peer_open(hold),
            notif(
                ErrorCode::OpenMessage as u8,
                OpenError::UnacceptableHoldTime as u8,
            ),
        );
    }
}

#[test]
fn open_with_zero_identifier_is_bad_bgp_identifier() {
    let mut open = peer_open(90);
    open.bgp_id = Ipv4Addr::UNSPECIFIED;
    open_rejected(
        config(),
        open,
        notif(
            ErrorCode::OpenMessage as u8,
            OpenError::BadBgpIdentifier as u8,
        ),
    );
}

#[test]
fn ibgp_open_with_our_identifier_is_bad_bgp_identifier() {
    let cfg = PeerConfig::new(LOCAL_AS, LOCAL_AS, local_id());
    let mut open = peer_open(90);
    open.asn = LOCAL_AS;
    open.bgp_id = local_id();
    open_rejected(
        cfg,
        open,
        notif(
            ErrorCode::OpenMessage as u8,
            OpenError::BadBgpIdentifier as u8,
        ),
    );
}

#[test]
fn ebgp_open_with_our_identifier_is_accepted() {
    // RFC 6286 §2.2 only forbids a shared identifier on internal sessions.
    let cfg = config();
    let mut fsm = Fsm::new(cfg.clone());
    replay(&mut fsm, open_sent_steps(&cfg, 0));
    let mut open = peer_open(90);
    open.bgp_id = local_id();
    fsm.handle(Event::BGPOpen(open), Timestamp(10));
    assert_eq!(fsm.state(), State::OpenConfirm);
    assert_eq!(fsm.negotiated().map(|n| n.ebgp), Some(true));
}

/// Negotiates `ours`/`theirs` hold times (and our keepalive) and returns
/// the OpenSent → OpenConfirm actions.
fn negotiate(hold: u16, keepalive: Option<u16>, theirs: u16) -> (Vec<Action>, Negotiated) {
    let mut cfg = config();
    cfg.hold_time = hold;
    cfg.keepalive_time = keepalive;
    let mut fsm = Fsm::new(cfg.clone());
    replay(&mut fsm, open_sent_steps(&cfg, 0));
    let actions = fsm.handle(Event::BGPOpen(peer_open(theirs)), Timestamp(10));
    assert_eq!(fsm.state(), State::OpenConfirm);
    let n = fsm.negotiated().cloned().unwrap();
    (actions, n)
}

#[test]
fn hold_time_is_the_smaller_of_both_and_keepalive_a_third() {
    let (actions, n) = negotiate(90, None, 9);
    assert_eq!((n.hold_time, n.keepalive), (9, 3));
    assert_eq!(
        actions,
        vec![
            Action::SendKeepalive,
            Action::StartTimer(Timer::Keepalive, secs(3)),
            Action::StartTimer(Timer::Hold, secs(9)),
        ]
    );
    let (_, n) = negotiate(30, Some(10), 90);
    assert_eq!((n.hold_time, n.keepalive), (30, 10));
    // A configured keepalive smaller than hold/3 is kept ...
    let (_, n) = negotiate(90, Some(5), 90);
    assert_eq!((n.hold_time, n.keepalive), (90, 5));
    // ... a larger one is capped at hold/3 of the negotiated hold time.
    let (_, n) = negotiate(90, Some(30), 9);
    assert_eq!((n.hold_time, n.keepalive), (9, 3));
    // Hold 3: keepalive every second, never more often.
    let (_, n) = negotiate(3, None, 90);
    assert_eq!((n.hold_time, n.keepalive), (3, 1));
}

#[test]
fn hold_time_zero_runs_no_hold_or_keepalive_timer() {
    let (actions, n) = negotiate(90, None, 0);
    assert_eq!((n.hold_time, n.keepalive), (0, 0));
    assert_eq!(
        actions,
        vec![Action::SendKeepalive, Action::StopTimer(Timer::Hold)]
    );
    // Ours 0: the same, whatever the peer proposes.
    let mut cfg = config();
    cfg.hold_time = 0;
    let mut fsm = Fsm::new(cfg.clone());
    replay(&mut fsm, open_sent_steps(&cfg, 0));
    fsm.handle(Event::BGPOpen(peer_open(90)), Timestamp(5));
    let est = fsm.handle(Event::KeepAliveMsg, Timestamp(6));
    assert_eq!(fsm.state(), State::Established);
    assert!(matches!(est.as_slice(), [Action::SessionEstablished(n)] if n.hold_time == 0));
    assert!(!fsm.is_running(Timer::Hold));
    assert!(!fsm.is_running(Timer::Keepalive));
    // A hold-timer fire that raced with the stop is ignored.
    assert_eq!(fsm.handle(Event::HoldTimerExpires, Timestamp(7)), vec![]);
    assert_eq!(fsm.state(), State::Established);
}

#[test]
fn families_are_those_both_sides_carry() {
    let mut cfg = config();
    cfg.capabilities.mp_ipv6 = true;
    let mut fsm = Fsm::new(cfg.clone());
    replay(&mut fsm, open_sent_steps(&cfg, 0));
    fsm.handle(Event::BGPOpen(peer_open(90)), Timestamp(5));
    assert_eq!(
        fsm.negotiated().map(|n| n.families.clone()),
        Some(vec![Afi::Ipv4, Afi::Ipv6])
    );
    // A peer with no Multiprotocol capability carries IPv4 only (RFC 4760).
    let mut fsm = Fsm::new(cfg.clone());
    replay(&mut fsm, open_sent_steps(&cfg, 0));
    let mut open = peer_open(90);
    open.capabilities = Capabilities::default();
    fsm.handle(Event::BGPOpen(open), Timestamp(5));
    let n = fsm.negotiated().cloned().unwrap();
    assert_eq!(n.families, vec![Afi::Ipv4]);
    assert!(!n.four_octet_as);
    assert!(!n.route_refresh);
}

#[test]
fn codec_errors_send_their_notification() {
    let cfg = config();
    let bad_header = notif(ErrorCode::MessageHeader as u8, 2);
    let mut fsm = Fsm::new(cfg.clone());
    let mut steps = open_sent_steps(&cfg, 0);
    steps.push(step(
        10,
        Event::BGPHeaderErr(bad_header.clone()),
        vec![
            Action::SendNotification(bad_header),
            Action::StopTimer(Timer::Hold),
            Action::DropConnection,
            Action::StartTimer(Timer::IdleHold, secs(1)),
        ],
        State::Idle,
    ));
    replay(&mut fsm, steps);

    let bad_update = notif(ErrorCode::UpdateMessage as u8, 1);
    let mut fsm = Fsm::new(cfg.clone());
    let mut steps = establish_steps(&cfg, 0);
    steps.push(step(
        1_000,
        Event::UpdateMsgErr(bad_update.clone()),
        vec![
            Action::SendNotification(bad_update.clone()),
            Action::StopTimer(Timer::Hold),
            Action::StopTimer(Timer::Keepalive),
            Action::DropConnection,
            Action::SessionDown(DownReason::NotificationSent(bad_update)),
            Action::StartTimer(Timer::IdleHold, secs(1)),
        ],
        State::Idle,
    ));
    replay(&mut fsm, steps);
}

#[test]
fn unexpected_messages_are_fsm_errors_with_rfc6608_subcodes() {
    let cfg = config();
    // KEEPALIVE before OPEN: FSM error 5/1.
    let mut fsm = Fsm::new(cfg.clone());
    replay(&mut fsm, open_sent_steps(&cfg, 0));
    let a = fsm.handle(Event::KeepAliveMsg, Timestamp(5));
    assert_eq!(a[0], Action::SendNotification(notif(5, 1)));
    assert_eq!(fsm.state(), State::Idle);
    // UPDATE in OpenConfirm: 5/2.
    let mut fsm = Fsm::new(cfg.clone());
    replay(
        &mut fsm,
        establish_steps(&cfg, 0).into_iter().take(3).collect(),
    );
    let a = fsm.handle(Event::UpdateMsg, Timestamp(6));
    assert_eq!(a[0], Action::SendNotification(notif(5, 2)));
    // OPEN in Established: 5/3.
    let mut fsm = Fsm::new(cfg.clone());
    replay(&mut fsm, establish_steps(&cfg, 0));
    let a = fsm.handle(Event::BGPOpen(peer_open(90)), Timestamp(9));
    assert_eq!(a[0], Action::SendNotification(notif(5, 3)));
    assert!(
        a.contains(&Action::SessionDown(DownReason::NotificationSent(notif(
            5, 3
        ))))
    );
}

#[test]
fn peer_notification_ends_the_session_without_answering() {
    let cfg = config();
    let mut fsm = Fsm::new(cfg.clone());
    let cease = Notification {
        code: 6,
        subcode: 2,
        data: b"\x03bye".to_vec(),
    };
    let mut steps = establish_steps(&cfg, 0);
    steps.push(step(
        100,
        Event::NotifMsg(cease.clone()),
        vec![
            Action::StopTimer(Timer::Hold),
            Action::StopTimer(Timer::Keepalive),
            Action::DropConnection,
            Action::SessionDown(DownReason::NotificationReceived(cease)),
            Action::StartTimer(Timer::IdleHold, secs(1)),
        ],
        State::Idle,
    ));
    replay(&mut fsm, steps);
}

#[test]
fn collision_loser_sends_cease_7() {
    let cfg = config();
    let mut fsm = Fsm::new(cfg.clone());
    let mut steps = establish_steps(&cfg, 0)
        .into_iter()
        .take(3)
        .collect::<Vec<_>>();
    // The driver has a second (inbound) connection whose OPEN carries the
    // same identifier; we are 10.0.0.1 < 10.0.0.2, so the peer's wins.
    assert_eq!(
        resolve_collision(
            ConnectionOrigin::Local,
            false,
            local_id(),
            LOCAL_AS,
            peer_id(),
            PEER_AS
        ),
        ConnectionOrigin::Remote
    );
    steps.push(step(
        20,
        Event::OpenCollisionDump,
        vec![
            Action::SendNotification(notif(
                ErrorCode::Cease as u8,
                CeaseSubcode::ConnectionCollisionResolution as u8,
            )),
            Action::StopTimer(Timer::Hold),
            Action::StopTimer(Timer::Keepalive),
            Action::DropConnection,
            Action::StartTimer(Timer::IdleHold, secs(1)),
        ],
        State::Idle,
    ));
    replay(&mut fsm, steps);
    assert_eq!(fsm.last_down_reason(), Some(&DownReason::CollisionDump));
    // An Established session is never given up for a new connection.
    assert_eq!(
        resolve_collision(
            ConnectionOrigin::Local,
            true,
            local_id(),
            LOCAL_AS,
            peer_id(),
            PEER_AS
        ),
        ConnectionOrigin::Local
    );
}

#[test]
fn collision_between_two_fsms_keeps_the_peers_connection() {
    // We dialled and are in OpenConfirm; the peer (higher identifier) dialled
    // us too. Its connection wins.
    let cfg = config();
    let mut outbound = Fsm::new(cfg.clone());
    replay(
        &mut outbound,
        establish_steps(&cfg, 0).into_iter().take(3).collect(),
    );
    let (mut inbound, actions) = Fsm::collision_candidate(cfg.clone(), Timestamp(6));
    assert_eq!(
        actions,
        vec![
            Action::SendOpen(cfg.open()),
            Action::StartTimer(Timer::Hold, OPEN_SENT_HOLD_TIME),
        ]
    );
    assert_eq!(inbound.state(), State::OpenSent);
    let open = peer_open(180);
    let keep = resolve_collision(
        ConnectionOrigin::Local,
        outbound.state() == State::Established,
        cfg.router_id,
        cfg.local_as,
        open.bgp_id,
        open.asn,
    );
    assert_eq!(keep, ConnectionOrigin::Remote);
    let dumped = outbound.handle(Event::OpenCollisionDump, Timestamp(7));
    assert_eq!(
        dumped[0],
        Action::SendNotification(notif(
            ErrorCode::Cease as u8,
            CeaseSubcode::ConnectionCollisionResolution as u8
        ))
    );
    assert_eq!(outbound.state(), State::Idle);
    inbound.handle(Event::BGPOpen(open), Timestamp(7));
    let up = inbound.handle(Event::KeepAliveMsg, Timestamp(8));
    assert_eq!(
        up,
        vec![
            Action::StartTimer(Timer::Hold, secs(90)),
            Action::SessionEstablished(negotiated_default()),
        ]
    );
    // The winner behaves like an active peer afterwards: it redials.
    assert!(!inbound.config().passive);
    inbound.handle(Event::TcpConnectionFails, Timestamp(9));
    let again = inbound.handle(Event::IdleHoldTimerExpires, Timestamp(1_009));
    assert!(again.contains(&Action::Connect));
}

#[test]
fn inbound_connection_during_connect_is_used() {
    let cfg = config();
    let mut fsm = Fsm::new(cfg.clone());
    fsm.handle(Event::ManualStart, Timestamp(0));
    assert!(fsm.accepts_connection());
    let a = fsm.handle(Event::TcpConnectionConfirmed, Timestamp(1));
    assert_eq!(a[1], Action::SendOpen(cfg.open()));
    assert_eq!(fsm.state(), State::OpenSent);
    assert!(!fsm.accepts_connection());
}

#[test]
fn connect_retry_timer_retries_a_hung_connect() {
    let cfg = config();
    let mut fsm = Fsm::new(cfg.clone());
    let mut steps = establish_steps(&cfg, 0)
        .into_iter()
        .take(1)
        .collect::<Vec<_>>();
    steps.push(step(
        30_000,
        Event::ConnectRetryTimerExpires,
        vec![
            Action::DropConnection,
            Action::StartTimer(Timer::ConnectRetry, secs(30)),
            Action::Connect,
        ],
        State::Connect,
    ));
    replay(&mut fsm, steps);
}

/// The IdleHoldTimer that `actions` start, if any.
fn idle_hold(actions: &[Action]) -> Option<Duration> {
    actions.iter().find_map(|a| match a {
        Action::StartTimer(Timer::IdleHold, d) => Some(*d),
        _ => None,
    })
}

#[test]
fn backoff_doubles_up_to_the_cap() {
    let cfg = config();
    let mut fsm = Fsm::new(cfg.clone());
    let mut t = 0;
    let first = fsm.handle(Event::ManualStart, Timestamp(t));
    assert!(
        first.contains(&Action::Connect),
        "first connect is immediate"
    );
    let mut holds = Vec::new();
    for _ in 0..9 {
        t += 10;
        let a = fsm.handle(Event::TcpConnectionFails, Timestamp(t));
        assert_eq!(fsm.state(), State::Idle);
        let d = idle_hold(&a).unwrap();
        holds.push(d.as_secs());
        // Nothing happens before the timer fires: AutomaticStart waits too.
        assert_eq!(fsm.handle(Event::AutomaticStart, Timestamp(t)), vec![]);
        t += d.as_millis() as u64;
        let a = fsm.handle(Event::IdleHoldTimerExpires, Timestamp(t));
        assert!(a.contains(&Action::Connect));
    }
    assert_eq!(holds, vec![1, 2, 4, 8, 16, 32, 60, 60, 60]);
    // ManualStart resets the back-off.
    fsm.handle(
        Event::ManualStop {
            shutdown_message: None,
        },
        Timestamp(t),
    );
    fsm.handle(Event::ManualStart, Timestamp(t));
    let a = fsm.handle(Event::TcpConnectionFails, Timestamp(t + 1));
    assert_eq!(idle_hold(&a), Some(secs(1)));
}

#[test]
fn backoff_resets_only_after_a_stable_established_period() {
    let cfg = config();
    let mut fsm = Fsm::new(cfg.clone());
    // Three failed attempts: next back-off 8 s.
    fsm.handle(Event::ManualStart, Timestamp(0));
    for t in [1, 2, 3] {
        fsm.handle(Event::TcpConnectionFails, Timestamp(t * 100_000));
        fsm.handle(Event::IdleHoldTimerExpires, Timestamp(t * 100_000 + 50_000));
    }
    assert_eq!(fsm.next_idle_hold(), secs(8));
    // Established for 59 s, then lost: no reset, the back-off keeps growing.
    for s in establish_steps(&cfg, 0).into_iter().skip(1) {
        fsm.handle(s.event, Timestamp(400_000));
    }
    assert_eq!(fsm.state(), State::Established);
    // Our KEEPALIVE leaves on time (keepalive 30 s): the failure is the
    // peer's, not a stall of ours.
    fsm.handle(Event::KeepaliveTimerExpires, Timestamp(430_000));
    let a = fsm.handle(Event::TcpConnectionFails, Timestamp(459_000));
    assert_eq!(idle_hold(&a), Some(secs(8)));
    fsm.handle(Event::IdleHoldTimerExpires, Timestamp(467_000));
    // Established for 60 s: the session was stable. It restarts at once
    // (IdleHoldTimer 0) and the back-off is back to 1 s.
    for s in establish_steps(&cfg, 0).into_iter().skip(1) {
        fsm.handle(s.event, Timestamp(500_000));
    }
    let a = fsm.handle(Event::TcpConnectionFails, Timestamp(560_000));
    assert!(a.contains(&Action::SessionDown(DownReason::ConnectionFailed)));
    assert_eq!(idle_hold(&a), Some(Duration::ZERO));
    assert_eq!(fsm.state(), State::Idle);
    assert_eq!(fsm.next_idle_hold(), secs(1));
    let a = fsm.handle(Event::IdleHoldTimerExpires, Timestamp(560_000));
    assert!(a.contains(&Action::Connect), "{a:?}");
    // The reconnect fails (the peer is still away): 1 s, then 2 s.
    let a = fsm.handle(Event::TcpConnectionFails, Timestamp(560_010));
    assert_eq!(idle_hold(&a), Some(secs(1)));
    fsm.handle(Event::IdleHoldTimerExpires, Timestamp(561_010));
    let a = fsm.handle(Event::TcpConnectionFails, Timestamp(561_020));
    assert_eq!(idle_hold(&a), Some(secs(2)));
}

#[test]
fn configured_error_wait_bounds_and_immediate_restart_after_a_stable_session() {
    // error_wait_min 250ms, error_wait_max 2s (stable after 2 s, as the
    // driver sets it).
    let mut cfg = config();
    cfg.idle_hold_time = Duration::from_millis(250);
    cfg.idle_hold_time_max = secs(2);
    cfg.stable_time = secs(2);
    let mut fsm = Fsm::new(cfg.clone());
    let mut t = 0;
    fsm.handle(Event::ManualStart, Timestamp(t));
    let mut holds = Vec::new();
    for _ in 0..6 {
        t += 10;
        let a = fsm.handle(Event::TcpConnectionFails, Timestamp(t));
        let d = idle_hold(&a).unwrap();
        holds.push(d.as_millis());
        t += d.as_millis() as u64;
        assert!(fsm
            .handle(Event::IdleHoldTimerExpires, Timestamp(t))
            .contains(&Action::Connect));
    }
    assert_eq!(holds, vec![250, 500, 1000, 2000, 2000, 2000]);
    // Established for 1.999 s: not stable, the capped back-off applies.
    let up = t + 100;
    for s in establish_steps(&cfg, 0).into_iter().skip(1) {
        fsm.handle(s.event, Timestamp(up));
    }
    assert_eq!(fsm.state(), State::Established);
    let a = fsm.handle(Event::HoldTimerExpires, Timestamp(up + 1_999));
    assert_eq!(idle_hold(&a), Some(secs(2)));
    t = up + 1_999 + 2_000;
    fsm.handle(Event::IdleHoldTimerExpires, Timestamp(t));
    // Established for 2 s, then the peer froze and our HoldTimer expired:
    // NOTIFICATION 4/0, Idle, and the reconnect is due at once.
    let up = t + 100;
    for s in establish_steps(&cfg, 0).into_iter().skip(1) {
        fsm.handle(s.event, Timestamp(up));
    }
    let a = fsm.handle(Event::HoldTimerExpires, Timestamp(up + 2_000));
    assert_eq!(
        a,
        vec![
            Action::SendNotification(Notification::hold_timer_expired()),
            Action::StopTimer(Timer::Keepalive),
            Action::DropConnection,
            Action::SessionDown(DownReason::NotificationSent(
                Notification::hold_timer_expired()
            )),
            Action::StartTimer(Timer::IdleHold, Duration::ZERO),
        ]
    );
    let a = fsm.handle(Event::IdleHoldTimerExpires, Timestamp(up + 2_000));
    assert_eq!(
        a,
        vec![
            Action::StartTimer(Timer::ConnectRetry, cfg.connect_retry_time),
            Action::Connect,
        ]
    );
    // A failure right after that reconnect waits error_wait_min again.
    let a = fsm.handle(Event::TcpConnectionFails, Timestamp(up + 2_001));
    assert_eq!(idle_hold(&a), Some(Duration::from_millis(250)));
}

#[test]
fn manual_stop_of_a_stable_session_does_not_restart() {
    let cfg = config();
    let mut fsm = Fsm::new(cfg.clone());
    replay(&mut fsm, establish_steps(&cfg, 0));
    let a = fsm.handle(
        Event::ManualStop {
            shutdown_message: None,
        },
        Timestamp(120_000),
    );
    assert_eq!(idle_hold(&a), None);
    assert!(!fsm.is_running(Timer::IdleHold));
}

#[test]
fn passive_peer_waits_in_active_and_never_connects() {
    let mut cfg = config();
    cfg.passive = true;
    let mut fsm = Fsm::new(cfg.clone());
    replay(
        &mut fsm,
        vec![
            step(0, Event::ManualStart, vec![], State::Active),
            step(
                5_000,
                Event::TcpConnectionConfirmed,
                vec![
                    Action::SendOpen(cfg.open()),
                    Action::StartTimer(Timer::Hold, OPEN_SENT_HOLD_TIME),
                ],
                State::OpenSent,
            ),
            step(
                5_010,
                Event::TcpConnectionFails,
                vec![
                    Action::StopTimer(Timer::Hold),
                    Action::DropConnection,
                    Action::StartTimer(Timer::IdleHold, secs(1)),
                ],
                State::Idle,
            ),
            // Inbound connections are refused while backing off ...
            step(5_500, Event::TcpConnectionConfirmed, vec![], State::Idle),
            // ... and accepted again afterwards, still without dialling.
            step(6_010, Event::IdleHoldTimerExpires, vec![], State::Active),
            step(
                7_000,
                Event::TcpConnectionConfirmed,
                vec![
                    Action::SendOpen(cfg.open()),
                    Action::StartTimer(Timer::Hold, OPEN_SENT_HOLD_TIME),
                ],
                State::OpenSent,
            ),
        ],
    );
}

#[test]
fn manual_stop_in_established_sends_administrative_shutdown() {
    let cfg = config();
    let mut fsm = Fsm::new(cfg.clone());
    let mut steps = establish_steps(&cfg, 0);
    let shutdown = Notification {
        code: 6,
        subcode: 2,
        data: b"\x0fpathosd stopped".to_vec(),
    };
    steps.extend([
        step(
            1_000,
            Event::ManualStop {
                shutdown_message: Some("pathosd stopped".into()),
            },
            vec![
                Action::SendNotification(shutdown),
                Action::StopTimer(Timer::Hold),
                Action::StopTimer(Timer::Keepalive),
                Action::DropConnection,
                Action::SessionDown(DownReason::ManualStop),
            ],
            State::Idle,
        ),
        // Stopped: no IdleHoldTimer, and no automatic restart.
        step(2_000, Event::AutomaticStart, vec![], State::Idle),
        step(2_000, Event::IdleHoldTimerExpires, vec![], State::Idle),
        step(
            3_000,
            Event::ManualStart,
            vec![
                Action::StartTimer(Timer::ConnectRetry, secs(30)),
                Action::Connect,
            ],
            State::Connect,
        ),
        step(
            3_001,
            Event::ManualStop {
                shutdown_message: None,
            },
            vec![
                Action::StopTimer(Timer::ConnectRetry),
                Action::DropConnection,
            ],
            State::Idle,
        ),
    ]);
    replay(&mut fsm, steps);
}

#[test]
fn manual_stop_cancels_a_pending_restart() {
    let cfg = config();
    let mut fsm = Fsm::new(cfg.clone());
    fsm.handle(Event::AutomaticStart, Timestamp(0));
    fsm.handle(Event::TcpConnectionFails, Timestamp(1));
    assert!(fsm.is_running(Timer::IdleHold));
    let a = fsm.handle(
        Event::ManualStop {
            shutdown_message: None,
        },
        Timestamp(2),
    );
    assert_eq!(a, vec![Action::StopTimer(Timer::IdleHold)]);
    assert_eq!(
        fsm.handle(Event::IdleHoldTimerExpires, Timestamp(1_001)),
        vec![]
    );
    assert_eq!(fsm.state(), State::Idle);
}

#[test]
fn route_refresh_asks_for_a_resend_of_negotiated_families_only() {
    let cfg = config();
    let mut fsm = Fsm::new(cfg.clone());
    replay(&mut fsm, establish_steps(&cfg, 0));
    assert_eq!(
        fsm.handle(Event::RouteRefreshMsg(Afi::Ipv4), Timestamp(10)),
        vec![
            Action::StartTimer(Timer::Hold, secs(90)),
            Action::ResendRoutes(Afi::Ipv4)
        ]
    );
    // IPv6 was not negotiated (we did not advertise it): ignored.
    assert_eq!(
        fsm.handle(Event::RouteRefreshMsg(Afi::Ipv6), Timestamp(11)),
        vec![Action::StartTimer(Timer::Hold, secs(90))]
    );
}

/// A young session with the router recipe's timers (hold 9 s, keepalive
/// 3 s), Established at 6 ms; our KEEPALIVE leaves on time at 3,005 ms
/// (next due 6,005 ms) and the peer's arrives at 3,006 ms (our HoldTimer
/// due 12,006 ms).
fn young_recipe_session() -> Fsm {
    let mut cfg = config();
    cfg.hold_time = 9;
    let mut fsm = Fsm::new(cfg.clone());
    fsm.handle(Event::ManualStart, Timestamp(0));
    fsm.handle(Event::TcpCrAcked, Timestamp(3));
    let a = fsm.handle(Event::BGPOpen(peer_open(9)), Timestamp(5));
    assert!(a.contains(&Action::StartTimer(Timer::Keepalive, secs(3))));
    fsm.handle(Event::KeepAliveMsg, Timestamp(6));
    assert_eq!(fsm.state(), State::Established);
    let a = fsm.handle(Event::KeepaliveTimerExpires, Timestamp(3_005));
    assert_eq!(
        a,
        vec![
            Action::SendKeepalive,
            Action::StartTimer(Timer::Keepalive, secs(3))
        ]
    );
    fsm.handle(Event::KeepAliveMsg, Timestamp(3_006));
    fsm
}

/// pathosd frozen (SIGSTOP) from 4 s on: the router's HoldTimer drops the
/// session at 12,005 ms and its NOTIFICATION is the first thing pathosd
/// reads after SIGCONT at 12,100 ms, when our KEEPALIVE is 6 s overdue.
/// The failure is our stall, not the peer's: redial at once (no
/// error_wait_min), and the back-off stays where it was.
#[test]
fn after_a_stall_of_our_own_the_session_redials_at_once() {
    let mut fsm = young_recipe_session();
    let hold_expired = notif(4, 0);
    let steps = vec![
        step(
            12_100,
            Event::NotifMsg(hold_expired.clone()),
            vec![
                Action::StopTimer(Timer::Hold),
                Action::StopTimer(Timer::Keepalive),
                Action::DropConnection,
                Action::SessionDown(DownReason::NotificationReceived(hold_expired)),
                Action::StartTimer(Timer::IdleHold, Duration::ZERO),
            ],
            State::Idle,
        ),
        step(
            12_100,
            Event::IdleHoldTimerExpires,
            vec![
                Action::StartTimer(Timer::ConnectRetry, secs(30)),
                Action::Connect,
            ],
            State::Connect,
        ),
    ];
    let mut probe = fsm.clone();
    probe.handle(Event::KeepAliveMsg, Timestamp(12_100));
    assert_eq!(probe.stalled(), Some(Duration::from_millis(6_095)));
    replay(&mut fsm, steps);
    assert_eq!(fsm.next_idle_hold(), secs(1), "back-off unchanged");

    // The same when our own HoldTimer fires first after SIGCONT (it was
    // due at 12,006 ms): NOTIFICATION 4/0 to the peer, then at once.
    let mut fsm = young_recipe_session();
    let a = fsm.handle(Event::HoldTimerExpires, Timestamp(12_100));
    assert_eq!(
        a,
        vec![
            Action::SendNotification(notif(4, 0)),
            Action::StopTimer(Timer::Keepalive),
            Action::DropConnection,
            Action::SessionDown(DownReason::NotificationSent(notif(4, 0))),
            Action::StartTimer(Timer::IdleHold, Duration::ZERO),
        ]
    );
    // Or the connection's end is read first: at once too.
    let mut fsm = young_recipe_session();
    let a = fsm.handle(Event::TcpConnectionFails, Timestamp(12_100));
    assert_eq!(idle_hold(&a), Some(Duration::ZERO));
}

/// The same NOTIFICATION from a peer while pathosd ran and sent its
/// KEEPALIVEs on time is the peer's doing: error_wait_min, doubling.
#[test]
fn a_peer_error_while_we_ran_keeps_the_back_off() {
    let mut fsm = young_recipe_session();
    for t in [6_005, 9_005] {
        fsm.handle(Event::KeepaliveTimerExpires, Timestamp(t));
    }
    fsm.handle(Event::KeepAliveMsg, Timestamp(9_006));
    let a = fsm.handle(Event::NotifMsg(notif(4, 0)), Timestamp(12_100));
    assert_eq!(fsm.stalled(), None);
    assert_eq!(idle_hold(&a), Some(secs(1)));
    assert_eq!(fsm.next_idle_hold(), secs(2));
}

/// OWN_STALL is the line: a KEEPALIVE 999 ms late is a slow wake-up, 1 s
/// late a stall.
#[test]
fn own_stall_starts_at_one_second_late() {
    assert_eq!(OWN_STALL, secs(1));
    // Our KEEPALIVE was due at 6,005 ms.
    let mut fsm = young_recipe_session();
    let a = fsm.handle(Event::TcpConnectionFails, Timestamp(7_004));
    assert_eq!(idle_hold(&a), Some(secs(1)));
    let mut fsm = young_recipe_session();
    let a = fsm.handle(Event::TcpConnectionFails, Timestamp(7_005));
    assert_eq!(idle_hold(&a), Some(Duration::ZERO));
}

#[test]
fn stale_timer_events_are_ignored() {
    let cfg = config();
    let mut fsm = Fsm::new(cfg.clone());
    replay(&mut fsm, establish_steps(&cfg, 0));
    for e in [Event::ConnectRetryTimerExpires, Event::IdleHoldTimerExpires] {
        assert_eq!(fsm.handle(e, Timestamp(20)), vec![]);
        assert_eq!(fsm.state(), State::Established);
    }
    let mut fsm = Fsm::new(cfg);
    for e in [
        Event::ConnectRetryTimerExpires,
        Event::HoldTimerExpires,
        Event::KeepaliveTimerExpires,
        Event::IdleHoldTimerExpires,
        Event::KeepAliveMsg,
    ] {
        assert_eq!(fsm.handle(e, Timestamp(0)), vec![]);
        assert_eq!(fsm.state(), State::Idle);
    }
}

mod random {
    //! Random event sequences: the FSM never panics and every state it
    //! reaches is one the RFC allows, checked against a model the test builds
    //! only from the actions the FSM emitted.
    use super::*;
    use proptest::prelude::*;
    use proptest::strategy::ValueTree;

    fn notification() -> impl Strategy<Value = Notification> {
        (
            1u8..=6,
            0u8..=8,
            proptest::collection::vec(any::<u8>(), 0..4),
        )
            .prop_map(|(code, subcode, data)| Notification {
                code,
                subcode,
                data,
            })
    }

    fn open() -> impl Strategy<Value = OpenInfo> {
        (
            prop_oneof![Just(PEER_AS), Just(LOCAL_AS), any::<u32>()],
            prop_oneof![
                Just(0u16),
                Just(1),
                Just(2),
                Just(3),
                Just(90),
                any::<u16>()
            ],
            prop_oneof![
                Just(peer_id()),
                Just(local_id()),
                Just(Ipv4Addr::UNSPECIFIED)
            ],
            any::<(bool, bool, bool, bool, bool, bool)>(),
            proptest::option::of(0u8..=5),
        )
            .prop_map(|(asn, hold_time, bgp_id, c, role)| OpenInfo {
                asn,
                hold_time,
                bgp_id,
                capabilities: Capabilities {
                    four_octet_as: c.0,
                    mp_ipv4: c.1,
                    mp_ipv6: c.2,
                    route_refresh: c.3,
                    graceful_restart: c.4,
                    extended_next_hop: c.5,
                    role,
                },
            })
    }

    fn event() -> impl Strategy<Value = Event> {
        prop_oneof![
            1 => Just(Event::ManualStart),
            1 => Just(Event::AutomaticStart),
            1 => proptest::option::of("[a-zé]{0,300}")
                .prop_map(|shutdown_message| Event::ManualStop { shutdown_message }),
            1 => Just(Event::ConnectRetryTimerExpires),
            1 => Just(Event::HoldTimerExpires),
            1 => Just(Event::KeepaliveTimerExpires),
            1 => Just(Event::IdleHoldTimerExpires),
            1 => Just(Event::SendHoldTimerExpires),
            1 => Just(Event::WriteBlocked),
            1 => any::<bool>().prop_map(|waiting| Event::WriteProgress { waiting }),
            1 => Just(Event::TcpConnectionConfirmed),
            1 => Just(Event::TcpCrAcked),
            1 => Just(Event::TcpConnectionFails),
            // OPENs and KEEPALIVEs are weighted up so that sequences often
            // reach Established.
            4 => open().prop_map(Event::BGPOpen),
            1 => notification().prop_map(Event::BGPHeaderErr),
            1 => notification().prop_map(Event::BGPOpenMsgErr),
            1 => Just(Event::OpenCollisionDump),
            1 => Just(Event::NotifMsgVerErr),
            1 => notification().prop_map(Event::NotifMsg),
            4 => Just(Event::KeepAliveMsg),
            1 => Just(Event::UpdateMsg),
            1 => notification().prop_map(Event::UpdateMsgErr),
            1 => prop_oneof![Just(Afi::Ipv4), Just(Afi::Ipv6)].prop_map(Event::RouteRefreshMsg),
        ]
    }

    fn peer_config() -> impl Strategy<Value = PeerConfig> {
        (
            any::<bool>(),
            any::<bool>(),
            prop_oneof![Just(0u16), Just(3), Just(9), Just(90), any::<u16>()],
            proptest::option::of(any::<u16>()),
            // error_wait_min and error_wait_max (ms), within the config's bounds.
            (100u64..5_000, 0u64..120_000),
            // Our role (mostly none, so that plausible OPENs establish),
            // strict mode, and the send hold time (0: off).
            (
                prop_oneof![
                    4 => Just(None),
                    1 => prop_oneof![Just(Role::Provider), Just(Role::Customer), Just(Role::Peer)]
                        .prop_map(Some),
                ],
                any::<bool>(),
                prop_oneof![Just(0u64), Just(2_000), Just(480_000)],
            ),
        )
            .prop_map(
                |(
                    passive,
                    ibgp,
                    hold_time,
                    keepalive_time,
                    (wait_min, extra),
                    (role, require_role, send_hold),
                )| {
                    let peer_as = if ibgp { LOCAL_AS } else { PEER_AS };
                    let mut cfg = PeerConfig::new(LOCAL_AS, peer_as, local_id());
                    cfg.passive = passive;
                    cfg.hold_time = hold_time;
                    cfg.keepalive_time = keepalive_time;
                    cfg.idle_hold_time = Duration::from_millis(wait_min);
                    cfg.idle_hold_time_max = Duration::from_millis(wait_min + extra);
                    // As the driver sets it.
                    cfg.stable_time = cfg.idle_hold_time_max;
                    cfg.capabilities.mp_ipv6 = ibgp;
                    cfg.role = role;
                    cfg.require_role = require_role && role.is_some();
                    cfg.capabilities.role = role.map(|r| r as u8);
                    cfg.send_hold_time = Duration::from_millis(send_hold);
                    cfg
                },
            )
    }

    /// What the test knows from the actions alone.
    #[derive(Default)]
    struct Model {
        running: [Option<Duration>; 5],
        /// When each running timer is due (ms).
        due: [Option<u64>; 5],
        connected: bool,
        sent_open: bool,
        got_open: bool,
        sent_keepalive: bool,
        got_keepalive: bool,
        established: bool,
        /// When the current (or last) session reached Established.
        established_at: Option<u64>,
    }

    fn ix(t: Timer) -> usize {
        Timer::ALL.iter().position(|x| *x == t).unwrap()
    }

    fn check(
        cfg: &PeerConfig,
        m: &mut Model,
        before: State,
        event: &Event,
        actions: &[Action],
        fsm: &Fsm,
        now: u64,
    ) -> Result<(), TestCaseError> {
        let after = fsm.state();
        // This process stood still: the KeepaliveTimer or HoldTimer was
        // overdue by OWN_STALL or more when the event came.
        let own_stall = [Timer::Keepalive, Timer::Hold]
            .iter()
            .any(|t| m.due[ix(*t)].is_some_and(|due| now >= due + OWN_STALL.as_millis() as u64));
        prop_assert_eq!(fsm.stalled().is_some(), own_stall);
        // A timer event for a running timer consumes it.
        let fired = match event {
            Event::ConnectRetryTimerExpires => Some(Timer::ConnectRetry),
            Event::HoldTimerExpires => Some(Timer::Hold),
            Event::KeepaliveTimerExpires => Some(Timer::Keepalive),
            Event::IdleHoldTimerExpires => Some(Timer::IdleHold),
            Event::SendHoldTimerExpires => Some(Timer::SendHold),
            _ => None,
        };
        if let Some(t) = fired {
            if m.running[ix(t)].is_none() {
                prop_assert!(actions.is_empty(), "stale {t:?} acted: {actions:?}");
                prop_assert_eq!(before, after);
            }
            m.running[ix(t)] = None;
            m.due[ix(t)] = None;
        }
        if matches!(before, State::Connect | State::Active)
            && matches!(event, Event::TcpConnectionConfirmed | Event::TcpCrAcked)
        {
            m.connected = true;
            m.sent_open = false;
            m.got_open = false;
            m.sent_keepalive = false;
            m.got_keepalive = false;
        }
        if before == State::OpenSent && after == State::OpenConfirm {
            m.got_open = matches!(event, Event::BGPOpen(_));
        }
        if before == State::OpenConfirm && after == State::Established {
            m.got_keepalive = matches!(event, Event::KeepAliveMsg);
        }
        let mut sent_notification = false;
        for a in actions {
            match a {
                Action::Connect => prop_assert!(!cfg.passive, "passive peer dialled"),
                Action::DropConnection => {
                    m.connected = false;
                }
                Action::SendOpen(o) => {
                    prop_assert!(m.connected);
                    prop_assert_eq!(o, &cfg.open());
                    m.sent_open = true;
                }
                Action::SendKeepalive => {
                    prop_assert!(m.connected);
                    m.sent_keepalive = true;
                }
                Action::SendNotification(n) => {
                    prop_assert!(m.connected, "NOTIFICATION without a connection");
                    prop_assert!(n.data.len() <= 256);
                    sent_notification = true;
                }
                Action::StartTimer(t, d) => {
                    check_timer_start(cfg, m, actions, (*t, *d), now, own_stall)?;
                }
                Action::StopTimer(t) => {
                    prop_assert!(m.running[ix(*t)].is_some(), "stopping idle {t:?}");
                    m.running[ix(*t)] = None;
                    m.due[ix(*t)] = None;
                }
                Action::SessionEstablished(n) => {
                    prop_assert!(!m.established);
                    prop_assert_eq!(after, State::Established);
                    prop_assert!(n.hold_time == 0 || n.hold_time >= 3);
                    prop_assert!(n.hold_time <= cfg.effective_hold_time());
                    if n.hold_time > 0 {
                        prop_assert!(n.keepalive >= 1 && n.keepalive <= n.hold_time / 3);
                    } else {
                        prop_assert_eq!(n.keepalive, 0);
                    }
                    prop_assert_eq!(n.peer_as, cfg.peer_as);
                    m.established = true;
                    m.established_at = Some(now);
                }
                Action::SessionDown(_) => {
                    prop_assert!(m.established);
                    prop_assert_eq!(before, State::Established);
                    m.established = false;
                }
                Action::ResendRoutes(_) => prop_assert_eq!(after, State::Established),
            }
        }
        if sent_notification {
            prop_assert!(actions.contains(&Action::DropConnection));
        }
        check_send_hold(m, (before, after), event, actions, fsm)?;
        // The FSM's own view of its timers matches what it told the driver.
        for t in Timer::ALL {
            prop_assert_eq!(fsm.is_running(t), m.running[ix(t)].is_some(), "{:?}", t);
        }
        prop_assert_eq!(m.established, after == State::Established);
        check_state(cfg, m, fsm)
    }

    /// RFC 9687: the SendHoldTimer runs only on a connection, and its
    /// expiry closes without a NOTIFICATION.
    fn check_send_hold(
        m: &Model,
        (before, after): (State, State),
        event: &Event,
        actions: &[Action],
        fsm: &Fsm,
    ) -> Result<(), TestCaseError> {
        if m.running[ix(Timer::SendHold)].is_some() {
            prop_assert!(m.connected, "SendHoldTimer without a connection");
        }
        if matches!(event, Event::SendHoldTimerExpires) && before != after {
            let notified = actions
                .iter()
                .any(|a| matches!(a, Action::SendNotification(_)));
            prop_assert!(!notified);
            prop_assert!(actions.contains(&Action::DropConnection));
            prop_assert_eq!(
                fsm.last_down_reason(),
                Some(&DownReason::SendHoldTimerExpired)
            );
        }
        Ok(())
    }

    /// A timer the FSM started: its length is what the back-off and the
    /// restart-at-once rules allow.
    fn check_timer_start(
        cfg: &PeerConfig,
        m: &mut Model,
        actions: &[Action],
        (t, d): (Timer, Duration),
        now: u64,
        own_stall: bool,
    ) -> Result<(), TestCaseError> {
        // Zero only for the restart right after a stable session or a
        // stall of our own.
        let stable_down = m
            .established_at
            .is_some_and(|at| now.saturating_sub(at) >= cfg.stable_time.as_millis() as u64)
            && actions.iter().any(|a| matches!(a, Action::SessionDown(_)));
        let at_once = stable_down || own_stall;
        if t == Timer::IdleHold && at_once {
            prop_assert_eq!(d, Duration::ZERO, "not restarted at once");
        } else {
            prop_assert!(d > Duration::ZERO, "zero-length {t:?}");
        }
        if t == Timer::IdleHold && !at_once {
            prop_assert!(d >= cfg.idle_hold_time && d <= cfg.idle_hold_time_max);
        }
        m.running[ix(t)] = Some(d);
        m.due[ix(t)] = Some(now + d.as_millis() as u64);
        Ok(())
    }

    /// What must hold in the state the FSM is in now: the connection,
    /// the messages exchanged, the timers running.
    fn check_state(cfg: &PeerConfig, m: &Model, fsm: &Fsm) -> Result<(), TestCaseError> {
        let after = fsm.state();
        let running = |t: Timer| m.running[ix(t)].is_some();
        match after {
            State::Idle => {
                prop_assert!(!m.connected);
                for t in [
                    Timer::ConnectRetry,
                    Timer::Hold,
                    Timer::Keepalive,
                    Timer::SendHold,
                ] {
                    prop_assert!(!running(t), "{t:?} running in Idle");
                }
            }
            State::Connect => {
                prop_assert!(!cfg.passive);
                prop_assert!(running(Timer::ConnectRetry));
                prop_assert!(!running(Timer::Hold) && !running(Timer::Keepalive));
                prop_assert!(!running(Timer::IdleHold));
            }
            State::Active => {
                // Only passive peers wait in Active; they run no
                // ConnectRetryTimer since they never dial.
                prop_assert!(cfg.passive && !m.connected);
                prop_assert!(!running(Timer::ConnectRetry));
                prop_assert!(!running(Timer::Hold) && !running(Timer::Keepalive));
                prop_assert!(!running(Timer::IdleHold));
            }
            State::OpenSent => {
                prop_assert!(m.connected && m.sent_open);
                prop_assert_eq!(m.running[ix(Timer::Hold)], Some(OPEN_SENT_HOLD_TIME));
                prop_assert!(!running(Timer::ConnectRetry) && !running(Timer::Keepalive));
                prop_assert!(!running(Timer::IdleHold));
            }
            State::OpenConfirm | State::Established => {
                prop_assert!(m.connected && m.sent_open && m.got_open && m.sent_keepalive);
                prop_assert!(fsm.peer_open().is_some());
                let n = fsm.negotiated().unwrap();
                prop_assert_eq!(running(Timer::Hold), n.hold_time > 0);
                prop_assert_eq!(running(Timer::Keepalive), n.hold_time > 0);
                prop_assert!(!running(Timer::ConnectRetry) && !running(Timer::IdleHold));
                if after == State::Established {
                    prop_assert!(m.got_keepalive);
                }
            }
        }
        Ok(())
    }

    /// A script step: any event at all, or what a well-behaved driver and
    /// peer would most likely feed next (so that sequences reach
    /// Established and stay there for a while).
    #[derive(Debug, Clone)]
    enum Step {
        Random(Event),
        Driver(u8),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            event().prop_map(Step::Random),
            any::<u8>().prop_map(Step::Driver),
        ]
    }

    fn plausible(cfg: &PeerConfig, fsm: &Fsm, pick: u8) -> Event {
        match fsm.state() {
            State::Idle if fsm.is_running(Timer::IdleHold) => Event::IdleHoldTimerExpires,
            State::Idle => Event::ManualStart,
            State::Connect => Event::TcpCrAcked,
            State::Active => Event::TcpConnectionConfirmed,
            State::OpenSent => Event::BGPOpen(OpenInfo {
                asn: cfg.peer_as,
                hold_time: [0, 3, 9, 90, 180][usize::from(pick % 5)],
                bgp_id: peer_id(),
                capabilities: peer_caps(),
            }),
            State::OpenConfirm => Event::KeepAliveMsg,
            State::Established => match pick % 8 {
                0..=2 => Event::KeepAliveMsg,
                3 | 4 => Event::UpdateMsg,
                5 if fsm.is_running(Timer::Keepalive) => Event::KeepaliveTimerExpires,
                6 => Event::RouteRefreshMsg(Afi::Ipv6),
                _ => Event::RouteRefreshMsg(Afi::Ipv4),
            },
        }
    }

    /// Guards against a generator that never reaches Established (which
    /// would make the checks above vacuous).
    #[test]
    fn random_scripts_reach_established() {
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let mut steps = 0;
        for _ in 0..64 {
            let cfg = peer_config().new_tree(&mut runner).unwrap().current();
            let script = proptest::collection::vec(step(), 80)
                .new_tree(&mut runner)
                .unwrap()
                .current();
            let mut fsm = Fsm::new(cfg.clone());
            for (i, s) in script.into_iter().enumerate() {
                let event = match s {
                    Step::Random(e) => e,
                    Step::Driver(pick) => plausible(&cfg, &fsm, pick),
                };
                fsm.handle(event, Timestamp(i as u64 * 1000));
                if fsm.state() == State::Established {
                    steps += 1;
                }
            }
        }
        eprintln!("{steps} Established steps");
        assert!(steps > 64 * 80 / 10, "only {steps} Established steps");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn random_events_keep_the_fsm_consistent(
            cfg in peer_config(),
            script in proptest::collection::vec((step(), 0u64..200_000), 1..80),
        ) {
            let mut fsm = Fsm::new(cfg.clone());
            let mut model = Model::default();
            let mut now = 0u64;
            for (step, dt) in script {
                now += dt;
                let before = fsm.state();
                let event = match step {
                    Step::Random(e) => e,
                    Step::Driver(pick) => plausible(&cfg, &fsm, pick),
                };
                let actions = fsm.handle(event.clone(), Timestamp(now));
                check(&cfg, &mut model, before, &event, &actions, &fsm, now)?;
            }
        }
    }
}

/// RFC 5882 §4.2.1 with RFC 9384's subcode: a BFD session that goes down
/// ends an Established session with Cease / BFD Down (6/10), as an error
/// that the back-off counts; with no connection up it changes nothing.
#[test]
fn bfd_down_ends_an_established_session_with_cease_10() {
    let cfg = config();
    let mut fsm = Fsm::new(cfg.clone());
    let mut steps = establish_steps(&cfg, 0);
    steps.push(step(
        5_000,
        Event::BfdDown,
        vec![
            Action::SendNotification(notif(6, 10)),
            Action::StopTimer(Timer::Hold),
            Action::StopTimer(Timer::Keepalive),
            Action::DropConnection,
            Action::SessionDown(DownReason::NotificationSent(notif(6, 10))),
            // Up for 5 s, less than stable_time: the back-off's first wait.
            Action::StartTimer(Timer::IdleHold, cfg.idle_hold_time),
        ],
        State::Idle,
    ));
    replay(&mut fsm, steps);
    // Idle: no connection for BFD to take down.
    assert_eq!(fsm.handle(Event::BfdDown, Timestamp(5_001)), vec![]);
    assert_eq!(fsm.state(), State::Idle);

    let mut connecting = Fsm::new(cfg.clone());
    connecting.handle(Event::ManualStart, Timestamp(0));
    assert_eq!(connecting.state(), State::Connect);
    assert_eq!(connecting.handle(Event::BfdDown, Timestamp(1)), vec![]);
    assert_eq!(connecting.state(), State::Connect);
}
