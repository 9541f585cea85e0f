//! The state machine's timers: which run (a fire the FSM did not expect is
//! dropped by [`Fsm::handle`]), their starts and stops as actions, the
//! KEEPALIVE and HoldTimer restarts, and the IdleHoldTimer after an error,
//! whose doubling back-off is pathosd's peer oscillation damping (RFC 4271
//! §8.1.1 leaves the method open).

use std::time::Duration;

use super::{Action, DownReason, Event, Fsm, Timer, Timestamp};

impl Fsm {
    /// A fired timer is no longer running. False when `event` is the
    /// expiry of a timer that was not running: a stale fire.
    pub(super) fn timer_fired(&mut self, event: &Event) -> bool {
        match expired_timer(event) {
            Some(timer) => self.running[timer.index()].take().is_some(),
            None => true,
        }
    }

    pub(super) fn start_timer(&mut self, timer: Timer, d: Duration, out: &mut Vec<Action>) {
        let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        self.running[timer.index()] = Some(Timestamp(self.clock.0.saturating_add(ms)));
        out.push(Action::StartTimer(timer, d));
    }

    pub(super) fn stop_timer(&mut self, timer: Timer, out: &mut Vec<Action>) {
        if self.running[timer.index()].take().is_some() {
            out.push(Action::StopTimer(timer));
        }
    }

    /// How far past due the KeepaliveTimer or HoldTimer is at `now`, if
    /// either runs. Only these two: the driver fires them on time whatever
    /// the peer does, so their lateness is this process's own.
    pub(super) fn overdue(&self, now: Timestamp) -> Option<Duration> {
        [Timer::Keepalive, Timer::Hold]
            .iter()
            .filter_map(|t| self.running[t.index()])
            .map(|due| now.elapsed_since(due))
            .max()
    }

    pub(super) fn stop_all_timers(&mut self, out: &mut Vec<Action>) {
        for t in Timer::ALL {
            self.stop_timer(t, out);
        }
    }

    /// Any error: drop the connection, go to Idle and restart after the
    /// IdleHoldTimer (our peer oscillation damping), at once after a stable
    /// session or a stall of our own.
    pub(super) fn fail(&mut self, reason: DownReason, now: Timestamp, out: &mut Vec<Action>) {
        if let DownReason::NotificationSent(n) = &reason {
            out.push(Action::SendNotification(n.clone()));
        }
        let stable = self.enter_idle(reason, now, out);
        let hold = if stable {
            // The session had been up for a while: this is no oscillation.
            // Reconnect now; the next error waits idle_hold_time again.
            self.backoff = self.config.idle_hold_time;
            Duration::ZERO
        } else if self.stalled.is_some() {
            // This process stood still (see OWN_STALL): the peer did
            // nothing to be damped for. Reconnect now; the back-off stays
            // what the peer's own record earned.
            Duration::ZERO
        } else {
            let hold = self.backoff;
            self.backoff = hold
                .saturating_mul(2)
                .min(self.config.idle_hold_time_max)
                .max(self.config.idle_hold_time);
            hold
        };
        self.start_timer(Timer::IdleHold, hold, out);
    }

    pub(super) fn send_keepalive(&mut self, out: &mut Vec<Action>) {
        // RFC 4271 §8.2.2 (OpenConfirm, Established), Event 11: "sends a
        // KEEPALIVE message, restarts the KeepaliveTimer".
        out.push(Action::SendKeepalive);
        let keepalive = self.negotiated.as_ref().map_or(0, |n| n.keepalive);
        if keepalive > 0 {
            self.start_timer(Timer::Keepalive, secs(keepalive), out);
        }
    }

    /// RFC 9687 for the driver's write reports, on a connection that is
    /// up (OpenSent, OpenConfirm, Established). The timer runs only while
    /// bytes wait: an idle connection has nothing the peer could fail to
    /// take, and a session without KEEPALIVEs (hold time 0) is not closed
    /// for sending nothing.
    pub(super) fn send_hold(&mut self, event: &Event, out: &mut Vec<Action>) {
        let d = self.config.send_hold_time;
        if d.is_zero() {
            return;
        }
        match event {
            // RFC 9687 §4: "If a system does not send successive KEEPALIVE,
            // UPDATE, and/or NOTIFICATION messages within the period
            // specified in the Send Hold Time, then the BGP connection is
            // closed": the period counts from the first byte that could
            // not go.
            Event::WriteBlocked if !self.is_running(Timer::SendHold) => {
                self.start_timer(Timer::SendHold, d, out)
            }
            // RFC 9687 §3.3 (Established): "Each time the local system sends
            // a KEEPALIVE, UPDATE, and/or NOTIFICATION message, it restarts
            // its SendHoldTimer"; a write that moved bytes sent (part of)
            // one.
            Event::WriteProgress { waiting: true } => self.start_timer(Timer::SendHold, d, out),
            Event::WriteProgress { waiting: false } => self.stop_timer(Timer::SendHold, out),
            _ => {}
        }
    }

    pub(super) fn restart_hold_timer(&mut self, out: &mut Vec<Action>) {
        let hold = self.negotiated.as_ref().map_or(0, |n| n.hold_time);
        if hold > 0 {
            self.start_timer(Timer::Hold, secs(hold), out);
        }
    }
}

pub(super) fn secs(s: u16) -> Duration {
    Duration::from_secs(u64::from(s))
}

fn expired_timer(event: &Event) -> Option<Timer> {
    match event {
        Event::ConnectRetryTimerExpires => Some(Timer::ConnectRetry),
        Event::HoldTimerExpires => Some(Timer::Hold),
        Event::KeepaliveTimerExpires => Some(Timer::Keepalive),
        Event::IdleHoldTimerExpires => Some(Timer::IdleHold),
        Event::SendHoldTimerExpires => Some(Timer::SendHold),
        _ => None,
    }
}
