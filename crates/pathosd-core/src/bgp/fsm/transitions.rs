//! The state machine's transitions: what each RFC 4271 §8.2.2 state does
//! with each event, and the steps they share (leaving Idle, the connection
//! coming up, the OPEN's checks, going to Idle, the NOTIFICATIONs).

use super::timers::secs;
use super::{
    Action, DownReason, Event, Fsm, Negotiated, Notification, OpenInfo, State, Timer, Timestamp,
    OPEN_SENT_HOLD_TIME,
};
use crate::bgp::types::Afi;
use crate::bgp::wire::{CeaseSubcode, FsmError, OpenError};

impl Fsm {
    /// Leaves Idle towards the peer: Connect at once, or Active for a
    /// passive peer.
    pub(super) fn start(&mut self, out: &mut Vec<Action>) {
        self.stop_timer(Timer::IdleHold, out);
        if self.config.passive {
            // RFC 4271 §8.1.1 PassiveTcpEstablishment: "the BGP FSM will
            // passively wait for the remote BGP peer to establish the BGP TCP
            // connection"; no ConnectRetryTimer since it never dials.
            self.state = State::Active;
        } else {
            // RFC 4271 §8.2.2 Idle, ManualStart/AutomaticStart: "starts the
            // ConnectRetryTimer with the initial value, initiates a TCP
            // connection to the other BGP peer, ... changes its state to
            // Connect."
            self.start_timer(Timer::ConnectRetry, self.config.connect_retry_time, out);
            out.push(Action::Connect);
            self.state = State::Connect;
        }
    }

    /// The connection came up (RFC 4271 §8.2.2 Connect and Active, Event 16
    /// or 17 without DelayOpen): "sends an OPEN message to its peer, sets the
    /// HoldTimer to a large value, and changes its state to OpenSent."
    pub(super) fn connection_up(&mut self, out: &mut Vec<Action>) {
        self.stop_timer(Timer::ConnectRetry, out);
        out.push(Action::SendOpen(self.config.open()));
        self.start_timer(Timer::Hold, OPEN_SENT_HOLD_TIME, out);
        self.state = State::OpenSent;
    }

    /// Drops the connection and goes to Idle. Returns whether a stable
    /// session (Established for at least `stable_time`) just ended.
    pub(super) fn enter_idle(
        &mut self,
        reason: DownReason,
        now: Timestamp,
        out: &mut Vec<Action>,
    ) -> bool {
        self.stop_all_timers(out);
        out.push(Action::DropConnection);
        let mut stable = false;
        if self.state == State::Established {
            stable = self
                .established_at
                .is_some_and(|t| now.elapsed_since(t) >= self.config.stable_time);
            out.push(Action::SessionDown(reason.clone()));
        }
        self.last_down = Some(reason);
        self.established_at = None;
        self.peer_open = None;
        self.negotiated = None;
        self.state = State::Idle;
        stable
    }

    pub(super) fn manual_stop(
        &mut self,
        message: Option<String>,
        now: Timestamp,
        out: &mut Vec<Action>,
    ) {
        self.stopped = true;
        if matches!(
            self.state,
            State::OpenSent | State::OpenConfirm | State::Established
        ) {
            // RFC 4271 §8.2.2 OpenSent/OpenConfirm/Established, ManualStop:
            // "sends the NOTIFICATION message with a Cease"; RFC 4486 §4
            // names the subcode Administrative Shutdown.
            out.push(Action::SendNotification(
                Notification::administrative_shutdown(message.as_deref().unwrap_or("")),
            ));
        }
        // ManualStop never restarts, stable session or not.
        let _ = self.enter_idle(DownReason::ManualStop, now, out);
        // RFC 4271 §8.2.2: ManualStop "sets ConnectRetryCounter to zero".
        self.backoff = self.config.idle_hold_time;
    }

    pub(super) fn idle(&mut self, event: Event, out: &mut Vec<Action>) {
        match event {
            Event::ManualStart => {
                self.stopped = false;
                self.backoff = self.config.idle_hold_time;
                self.start(out);
            }
            // While backing off the IdleHoldTimer decides when to restart;
            // after ManualStop only ManualStart does.
            Event::AutomaticStart if !self.stopped && !self.is_running(Timer::IdleHold) => {
                self.start(out)
            }
            Event::IdleHoldTimerExpires if !self.stopped => self.start(out),
            Event::ManualStop { .. } => {
                self.stopped = true;
                self.stop_timer(Timer::IdleHold, out);
            }
            // RFC 4271 §8.2.2 Idle: "Any other event ... received in the Idle
            // state does not cause change in the state of the local system."
            _ => {}
        }
    }

    pub(super) fn connect(&mut self, event: Event, now: Timestamp, out: &mut Vec<Action>) {
        match event {
            Event::ManualStart | Event::AutomaticStart => {}
            Event::ManualStop { shutdown_message } => self.manual_stop(shutdown_message, now, out),
            Event::ConnectRetryTimerExpires => {
                // RFC 4271 §8.2.2 Connect, Event 9: "drops the TCP connection,
                // restarts the ConnectRetryTimer, ... initiates a TCP
                // connection to the other BGP peer, ... stays in the Connect
                // state."
                out.push(Action::DropConnection);
                self.start_timer(Timer::ConnectRetry, self.config.connect_retry_time, out);
                out.push(Action::Connect);
            }
            Event::TcpCrAcked | Event::TcpConnectionConfirmed => self.connection_up(out),
            Event::TcpConnectionFails => self.fail(DownReason::ConnectionFailed, now, out),
            // No connection is up for BFD to take down, nor one to write on.
            Event::BfdDown | Event::WriteBlocked | Event::WriteProgress { .. } => {}
            // RFC 4271 §8.2.2 Connect: "In response to any other events ...
            // drops the TCP connection, ... changes its state to Idle."
            other => self.fail(unexpected_without_connection(other), now, out),
        }
    }

    pub(super) fn active(&mut self, event: Event, now: Timestamp, out: &mut Vec<Action>) {
        match event {
            Event::ManualStart | Event::AutomaticStart => {}
            Event::ManualStop { shutdown_message } => self.manual_stop(shutdown_message, now, out),
            Event::ConnectRetryTimerExpires => {
                // RFC 4271 §8.2.2 Active, Event 9: "restarts the
                // ConnectRetryTimer (with initial value), initiates a TCP
                // connection ..., changes its state to Connect." Passive
                // peers never run this timer.
                self.start_timer(Timer::ConnectRetry, self.config.connect_retry_time, out);
                out.push(Action::Connect);
                self.state = State::Connect;
            }
            Event::TcpCrAcked | Event::TcpConnectionConfirmed => self.connection_up(out),
            Event::TcpConnectionFails => self.fail(DownReason::ConnectionFailed, now, out),
            Event::BfdDown | Event::WriteBlocked | Event::WriteProgress { .. } => {}
            other => self.fail(unexpected_without_connection(other), now, out),
        }
    }

    /// The events OpenSent, OpenConfirm and Established answer alike (RFC
    /// 4271 §8.2.2 gives each of the three the same reaction to them).
    /// Returns any other event, for the state's own reactions.
    fn on_connection(
        &mut self,
        event: Event,
        now: Timestamp,
        out: &mut Vec<Action>,
    ) -> Option<Event> {
        match event {
            Event::ManualStart | Event::AutomaticStart => {}
            // A second connection is the session's PeerFsm's: RFC 4271
            // §8.2.2, it "SHALL be tracked until it sends an OPEN message"
            // (§6.8).
            Event::TcpCrAcked | Event::TcpConnectionConfirmed => {}
            Event::ManualStop { shutdown_message } => self.manual_stop(shutdown_message, now, out),
            Event::HoldTimerExpires => self.hold_timer_expired(now, out),
            Event::WriteBlocked | Event::WriteProgress { .. } => self.send_hold(&event, out),
            // RFC 9687 §3.3, Established, SendHoldTimer_Expires: the local
            // system "logs an error message in the local system with the BGP
            // Error Code "Send Hold Timer Expired", releases all BGP
            // resources, ... drops the TCP connection, ... (optionally)
            // performs peer oscillation damping ... and changes its state to
            // Idle" (the log is the driver's, from the down reason). The
            // timer also runs in OpenSent and OpenConfirm: an OPEN or
            // KEEPALIVE the peer does not take is as stuck. The RFC also has
            // a NOTIFICATION "Send Hold Timer Expired" sent, and §5 expects
            // that the peer will likely not get it: the timer only runs while
            // bytes wait, so ours would queue behind the bytes the peer does
            // not read and never leave; none is sent.
            Event::SendHoldTimerExpires => self.fail(DownReason::SendHoldTimerExpired, now, out),
            // RFC 9384 assigns Cease subcode 10, BFD Down, to a connection
            // closed because its BFD session went down; RFC 5882 §4.2.1:
            // "action SHOULD be taken in the control protocol".
            Event::BfdDown => self.fail(
                DownReason::NotificationSent(Notification::cease(CeaseSubcode::BfdDown)),
                now,
                out,
            ),
            Event::TcpConnectionFails => self.fail(DownReason::ConnectionFailed, now, out),
            Event::BGPHeaderErr(n) | Event::BGPOpenMsgErr(n) | Event::UpdateMsgErr(n) => {
                self.fail(DownReason::NotificationSent(n), now, out)
            }
            Event::OpenCollisionDump => self.collision_dump(now, out),
            Event::NotifMsgVerErr => self.version_error_received(now, out),
            Event::NotifMsg(n) => self.fail(DownReason::NotificationReceived(n), now, out),
            other => return Some(other),
        }
        None
    }

    pub(super) fn open_sent(&mut self, event: Event, now: Timestamp, out: &mut Vec<Action>) {
        let Some(event) = self.on_connection(event, now, out) else {
            return;
        };
        match event {
            Event::BGPOpen(open) => match self.check_open(&open) {
                Ok(negotiated) => self.open_accepted(open, negotiated, out),
                Err(n) => self.fail(DownReason::NotificationSent(n), now, out),
            },
            // RFC 4271 §8.2.2 OpenSent: "In response to any other event ...
            // sends the NOTIFICATION with the Error Code Finite State Machine
            // Error" (a timer other than the HoldTimer, a KEEPALIVE, UPDATE or
            // ROUTE-REFRESH); RFC 6608 §3 gives the subcode.
            _ => self.fsm_error(FsmError::UnexpectedMessageInOpenSent, now, out),
        }
    }

    pub(super) fn open_confirm(&mut self, event: Event, now: Timestamp, out: &mut Vec<Action>) {
        let Some(event) = self.on_connection(event, now, out) else {
            return;
        };
        match event {
            Event::KeepaliveTimerExpires => self.send_keepalive(out),
            Event::KeepAliveMsg => {
                // RFC 4271 §8.2.2 OpenConfirm, Event 26: "restarts the
                // HoldTimer and changes its state to Established."
                self.restart_hold_timer(out);
                self.state = State::Established;
                self.established_at = Some(now);
                if let Some(n) = &self.negotiated {
                    out.push(Action::SessionEstablished(n.clone()));
                }
            }
            // A second OPEN on the same connection, an UPDATE or ROUTE-REFRESH
            // before the session is up, the ConnectRetryTimer or IdleHoldTimer:
            // RFC 4271 §8.2.2 OpenConfirm "any other event".
            _ => self.fsm_error(FsmError::UnexpectedMessageInOpenConfirm, now, out),
        }
    }

    pub(super) fn established(&mut self, event: Event, now: Timestamp, out: &mut Vec<Action>) {
        let Some(event) = self.on_connection(event, now, out) else {
            return;
        };
        match event {
            Event::KeepaliveTimerExpires => self.send_keepalive(out),
            // RFC 4271 §8.2.2 Established, Events 26 and 27: "restarts its
            // HoldTimer, if the negotiated HoldTime value is non-zero".
            Event::KeepAliveMsg | Event::UpdateMsg => self.restart_hold_timer(out),
            Event::RouteRefreshMsg(afi) => {
                self.restart_hold_timer(out);
                // RFC 2918 §4: a ROUTE-REFRESH for a family "that the speaker
                // didn't advertise to the peer at the session establishment
                // time ... the speaker shall ignore such a message."
                let known = self
                    .negotiated
                    .as_ref()
                    .is_some_and(|n| n.families.contains(&afi));
                if known && self.config.capabilities.route_refresh {
                    out.push(Action::ResendRoutes(afi));
                }
            }
            // An OPEN, the ConnectRetryTimer or IdleHoldTimer: RFC 4271
            // §8.2.2 Established "any other event".
            _ => self.fsm_error(FsmError::UnexpectedMessageInEstablished, now, out),
        }
    }

    pub(super) fn hold_timer_expired(&mut self, now: Timestamp, out: &mut Vec<Action>) {
        // RFC 4271 §8.2.2 (OpenSent, OpenConfirm, Established), Event 10:
        // "sends a NOTIFICATION message with the Error Code Hold Timer Expired".
        self.fail(
            DownReason::NotificationSent(Notification::hold_timer_expired()),
            now,
            out,
        );
    }

    /// Event 24: the peer's NOTIFICATION was OPEN Message Error / Unsupported
    /// Version Number (the codec turns it into this event without its data).
    pub(super) fn version_error_received(&mut self, now: Timestamp, out: &mut Vec<Action>) {
        let n = Notification::open(OpenError::UnsupportedVersionNumber, Vec::new());
        self.fail(DownReason::NotificationReceived(n), now, out);
    }

    pub(super) fn collision_dump(&mut self, now: Timestamp, out: &mut Vec<Action>) {
        // RFC 4271 §8.2.2 OpenCollisionDump: "sends a NOTIFICATION with a
        // Cease"; RFC 4486 §4 subcode Connection Collision Resolution.
        out.push(Action::SendNotification(Notification::cease(
            CeaseSubcode::ConnectionCollisionResolution,
        )));
        self.fail(DownReason::CollisionDump, now, out);
    }

    pub(super) fn fsm_error(&mut self, sub: FsmError, now: Timestamp, out: &mut Vec<Action>) {
        self.fail(
            DownReason::NotificationSent(Notification::fsm(sub)),
            now,
            out,
        );
    }

    /// RFC 4271 §8.2.2 OpenSent, Event 19: "sends a KEEPALIVE message, and
    /// sets a KeepaliveTimer ... sets the HoldTimer according to the
    /// negotiated value ... changes its state to OpenConfirm." and "If the
    /// negotiated hold time value is zero, then the HoldTimer and
    /// KeepaliveTimer are not started."
    pub(super) fn open_accepted(
        &mut self,
        open: OpenInfo,
        negotiated: Negotiated,
        out: &mut Vec<Action>,
    ) {
        self.stop_timer(Timer::ConnectRetry, out);
        out.push(Action::SendKeepalive);
        if negotiated.hold_time > 0 {
            self.start_timer(Timer::Keepalive, secs(negotiated.keepalive), out);
            self.start_timer(Timer::Hold, secs(negotiated.hold_time), out);
        } else {
            self.stop_timer(Timer::Hold, out);
        }
        self.peer_open = Some(open);
        self.negotiated = Some(negotiated);
        self.state = State::OpenConfirm;
    }

    /// The OPEN checks of RFC 4271 §6.2 that need configuration; the codec
    /// has already checked version, lengths and capability syntax.
    pub(super) fn check_open(&self, open: &OpenInfo) -> Result<Negotiated, Notification> {
        // RFC 4271 §6.2: "If the Autonomous System field of the OPEN message
        // is unacceptable, then the Error Subcode MUST be set to Bad Peer AS."
        if open.asn != self.config.peer_as {
            return Err(Notification::open(OpenError::BadPeerAs, Vec::new()));
        }
        // RFC 6286 §2.2 (updating RFC 4271 §6.2): "If the BGP Identifier field
        // of the OPEN message is zero, or if it is the same as the BGP
        // Identifier of the local BGP speaker and the message is from an
        // internal peer, then the Error Subcode is set to 'Bad BGP
        // Identifier'." An eBGP peer may share our identifier.
        let ebgp = self.config.is_ebgp();
        if open.bgp_id.is_unspecified() || (!ebgp && open.bgp_id == self.config.router_id) {
            return Err(Notification::open(OpenError::BadBgpIdentifier, Vec::new()));
        }
        self.check_role(open.capabilities.role)?;
        // RFC 4271 §6.2: "An implementation MUST reject Hold Time values of
        // one or two seconds."
        if open.hold_time == 1 || open.hold_time == 2 {
            return Err(Notification::open(
                OpenError::UnacceptableHoldTime,
                Vec::new(),
            ));
        }
        // RFC 4271 §4.2: the speaker "MUST calculate the value of the Hold
        // Timer by using the smaller of its configured Hold Time and the Hold
        // Time received in the OPEN message."
        let hold_time = self.config.effective_hold_time().min(open.hold_time);
        let keepalive = if hold_time == 0 {
            // RFC 4271 §4.4: "If the negotiated Hold Time interval is zero,
            // then periodic KEEPALIVE messages MUST NOT be sent."
            0
        } else {
            // RFC 4271 §4.4: one third of the Hold Time is "a reasonable
            // maximum"; "KEEPALIVE messages MUST NOT be sent more frequently
            // than one per second." hold_time >= 3 here, so third >= 1.
            let third = hold_time / 3;
            self.config
                .keepalive_time
                .filter(|k| *k > 0)
                .map_or(third, |k| k.min(third))
                .max(1)
        };
        let ours = &self.config.capabilities;
        let theirs = &open.capabilities;
        let families = [Afi::Ipv4, Afi::Ipv6]
            .into_iter()
            .filter(|afi| ours.carries(*afi) && theirs.carries(*afi))
            .collect();
        Ok(Negotiated {
            hold_time,
            keepalive,
            four_octet_as: ours.four_octet_as && theirs.four_octet_as,
            families,
            route_refresh: ours.route_refresh && theirs.route_refresh,
            peer_graceful_restart: theirs.graceful_restart,
            extended_next_hop: ours.extended_next_hop && theirs.extended_next_hop,
            peer_as: open.asn,
            peer_id: open.bgp_id,
            ebgp,
        })
    }
}

impl Fsm {
    /// RFC 9234 §4.2 with a role configured: "If the BGP Role Capability is
    /// advertised, and one is also received from the peer, the Roles MUST
    /// correspond to the relationships in Table 2. If the Roles do not
    /// correspond, the BGP speaker MUST reject the connection using the Role
    /// Mismatch Notification (code 2, subcode 11)." A missing capability
    /// is ignored ("for backward compatibility", §4.2) unless strict mode
    /// is on, which rejects it the same way. Without a role of ours the
    /// peer's is not looked at.
    fn check_role(&self, theirs: Option<u8>) -> Result<(), Notification> {
        let Some(ours) = self.config.role else {
            return Ok(());
        };
        let ok = match theirs {
            Some(r) => r == ours.expected_peer() as u8,
            None => !self.config.require_role,
        };
        if ok {
            Ok(())
        } else {
            Err(Notification::open(OpenError::RoleMismatch, Vec::new()))
        }
    }
}

/// A message event in Connect/Active (no connection the FSM knows of): the
/// RFC drops to Idle without a NOTIFICATION.
fn unexpected_without_connection(event: Event) -> DownReason {
    match event {
        Event::NotifMsg(n) => DownReason::NotificationReceived(n),
        _ => DownReason::ConnectionFailed,
    }
}
