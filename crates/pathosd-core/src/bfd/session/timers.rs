//! The session's intervals and transmission: the Poll Sequence that
//! carries a change of our intervals (RFC 5880 §6.5, §6.8.3), the packet
//! as RFC 5880 §6.8.7 fills it, when it is sent, and the jittered
//! periodic schedule.

use super::{Output, Session, Step, SLOW_START_TX};
use crate::bfd::wire::{Packet, State};
use crate::bfd::Time;

impl Session {
    // ---- intervals and the Poll Sequence ----------------------------------

    /// Brings the advertised intervals to what the state and the config
    /// ask for, starting a Poll Sequence when they change.
    pub(super) fn update_intervals(&mut self) {
        let tx = if self.state == State::Up {
            self.cfg.timers.desired_min_tx.get()
        } else {
            slow(self.cfg.timers.desired_min_tx.get())
        };
        let rx = self.cfg.timers.required_min_rx;
        if (tx, rx) == (self.adv_tx, self.adv_rx) {
            self.poll_pending = false;
            return;
        }
        if self.state == State::Up {
            // RFC 5880 §6.8.3: "if multiple changes are made that require
            // the use of a Poll Sequence ... an additional BFD Control packet
            // with the Final (F) bit *clear* MUST be received after the Poll
            // Sequence has completed prior to the initiation of another Poll
            // Sequence".
            if self.poll || self.poll_fence {
                self.poll_pending = true;
                return;
            }
            // RFC 5880 §6.8.3: "If bfd.DesiredMinTxInterval is increased and
            // bfd.SessionState is Up, the actual transmission interval used
            // MUST NOT change until the Poll Sequence described above has
            // terminated." and "If bfd.RequiredMinRxInterval is reduced and
            // bfd.SessionState is Up, the previous value of
            // bfd.RequiredMinRxInterval MUST be used when calculating the
            // Detection Time for the remote system until the Poll Sequence
            // described above has terminated." The other directions apply
            // at once.
            self.tx_used = self.tx_used.min(tx);
            self.rx_used = self.rx_used.max(rx);
        } else {
            // Outside Up nothing is at stake: the values apply at once.
            self.tx_used = tx;
            self.rx_used = rx;
        }
        self.adv_tx = tx;
        self.adv_rx = rx;
        self.poll_pending = false;
        // RFC 5880 §6.8.3: "If either bfd.DesiredMinTxInterval is changed or
        // bfd.RequiredMinRxInterval is changed, a Poll Sequence MUST be
        // initiated (see section 6.5)." Not towards a peer not yet heard:
        // nobody would answer it (BIRD does the same).
        if self.remote_discr != 0 {
            self.poll = true;
        }
    }

    pub(super) fn terminate_poll(&mut self) {
        self.poll = false;
        self.poll_fence = true;
        self.tx_used = self.adv_tx;
        self.rx_used = self.adv_rx;
    }

    // ---- transmission -----------------------------------------------------

    /// The packet as it stands, P and F clear: RFC 5880 §6.8.7, "The
    /// contents of transmitted BFD Control packets MUST be set as follows".
    fn contents(&self) -> Packet {
        Packet {
            // "Diagnostic (Diag): Set to bfd.LocalDiag."
            diag: self.diag,
            // "State (Sta): Set to the value indicated by bfd.SessionState."
            state: self.state,
            poll: false,
            final_: false,
            // "Control Plane Independent (C): Set to 1 if the local system's
            // BFD implementation is independent of the control plane" —
            // pathosd's is not: it runs in the daemon's loop on purpose, so
            // that a stalled daemon stops BFD too.
            control_plane_independent: false,
            // RFC 5880 §6.8.7: "A system MUST NOT set the Demand (D) bit
            // unless bfd.DemandMode is 1, bfd.SessionState is Up, and
            // bfd.RemoteSessionState is Up." bfd.DemandMode is always 0.
            demand: false,
            // "Detect Mult: Set to bfd.DetectMult."
            detect_mult: self.cfg.timers.detect_mult.get(),
            // "My Discriminator: Set to bfd.LocalDiscr." "Your
            // Discriminator: Set to bfd.RemoteDiscr."
            my_discriminator: self.local_discriminator(),
            your_discriminator: self.remote_discr,
            // "Desired Min TX Interval: Set to bfd.DesiredMinTxInterval."
            // "Required Min RX Interval: Set to bfd.RequiredMinRxInterval."
            desired_min_tx: self.adv_tx,
            required_min_rx: self.adv_rx,
            // "Required Min Echo RX Interval: Set to
            // bfd.RequiredMinEchoRxInterval": zero, no Echo function.
            required_min_echo_rx: 0,
        }
    }

    /// Whether any packet but a Final may be sent.
    fn may_send(&self, now: Time) -> bool {
        // While the peer asks for no packets, only its Polls are answered.
        if self.remote_min_rx == 0 {
            return false;
        }
        self.state != State::AdminDown || self.admin_tx_until.is_some_and(|t| now < t)
    }

    /// Whether periodic packets are sent.
    fn periodic(&self, now: Time) -> bool {
        // RFC 5880 §6.8.7: "A system MUST NOT periodically transmit BFD
        // Control packets if bfd.RemoteMinRxInterval is zero" and "if Demand
        // mode is active on the remote system (bfd.RemoteDemandMode is 1,
        // bfd.SessionState is Up, and bfd.RemoteSessionState is Up) and a
        // Poll Sequence is not being transmitted."
        let remote_demand = self.remote_demand
            && self.state == State::Up
            && self.remote_state == State::Up
            && !self.poll;
        self.may_send(now) && !remote_demand
    }

    /// The packet to send, if any, and the next deadline.
    pub(super) fn finish(&mut self, now: Time, step: Step) -> Output {
        let contents = self.contents();
        let changed = self.last_sent != Some(contents);
        let periodic = self.periodic(now);
        // The periodic packet, or one whose contents changed (it restarts
        // the interval).
        let regular = (step.due && periodic) || (changed && self.may_send(now));
        let send = (regular || step.final_).then_some(Packet {
            // RFC 5880 §6.8.7: "Poll (P): Set to 1 if the local system is
            // sending a Poll Sequence, or 0 if not." "Final (F): Set to 1 if
            // the local system is responding to a Control packet received
            // with the Poll (P) bit set, or 0 if not." RFC 5880 §6.5: "A BFD
            // Control packet MUST NOT have both the Poll (P) and Final (F)
            // bits set": the Final goes out now, the Poll rides on the next
            // periodic packet.
            poll: self.poll && !step.final_,
            final_: step.final_,
            ..contents
        });
        if send.is_some() {
            self.last_sent = Some(contents);
        }
        let interval = self.tx_interval();
        if !periodic {
            self.next_tx = None;
        } else if regular {
            self.last_tx = Some(now);
            self.next_tx = Some(now.plus(self.jittered(interval)));
            self.scheduled_interval = interval;
        } else if self.next_tx.is_none() || interval != self.scheduled_interval {
            // Periodic transmission resumes, or its interval changed: RFC
            // 5880 §6.8.7 "The transmit interval MUST be recalculated
            // whenever bfd.DesiredMinTxInterval changes, or whenever
            // bfd.RemoteMinRxInterval changes", counted from the last packet.
            let from_last = match self.last_tx {
                Some(last) => last.plus(self.jittered(interval)).max(now),
                None => now,
            };
            self.next_tx = Some(from_last);
            self.scheduled_interval = interval;
        }
        Output {
            send,
            change: step.change,
            next_tx: self.next_tx,
            detect_at: self.detect_at(),
        }
    }

    /// `interval` less a random 0 to 25 % (10 to 25 % with Detect Mult 1).
    /// RFC 5880 §6.8.7: "The periodic transmission of BFD Control packets
    /// MUST be jittered on a per-packet basis by up to 25%, that is, the
    /// interval MUST be reduced by a random value of 0 to 25%" and "If
    /// bfd.DetectMult is equal to 1, the interval between transmitted BFD
    /// Control packets MUST be no more than 90% of the negotiated
    /// transmission interval, and MUST be no less than 75% of the
    /// negotiated transmission interval."
    fn jittered(&mut self, interval: u64) -> u64 {
        let (low, high) = jitter_bounds(interval, self.cfg.timers.detect_mult.get());
        // xorshift64: the jitter must be spread, not secret.
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        // high - low < interval ≤ u32::MAX, so the span cannot overflow.
        low + self.rng % (high - low + 1)
    }
}

/// The smallest and largest jittered transmit interval for `interval` and
/// a Detect Mult (both inclusive, in microseconds).
pub fn jitter_bounds(interval: u64, detect_mult: u8) -> (u64, u64) {
    let low = interval - interval / 4;
    let high = if detect_mult == 1 {
        interval - interval / 10
    } else {
        interval
    };
    (low, high)
}

/// bfd.DesiredMinTxInterval outside Up: the configured value, at least one
/// second (slow start).
pub(super) fn slow(desired: u32) -> u32 {
    desired.max(SLOW_START_TX)
}
