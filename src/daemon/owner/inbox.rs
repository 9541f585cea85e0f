//! The owner's inbox: its four channels, read in priority order.

use crate::api::control::Control;
use crate::bgp::speaker::PeerEvent;
use crate::chan::{Rx, Signal};
use crate::daemon::engine::CheckRun;
use smol::future::FutureExt;

/// The channels the owner reads: signals, requests, session events and
/// check results.
pub(super) struct Inbox {
    pub(super) signals: Rx<Signal>,
    pub(super) control: Rx<Control>,
    pub(super) peers: Rx<PeerEvent>,
    pub(super) results: Rx<CheckRun>,
}

/// What the owner gets from its [`Inbox`]: one of its channels' messages.
pub(super) enum Event {
    Signal(Signal),
    Control(Control),
    Peer(PeerEvent),
    Result(CheckRun),
}

impl Inbox {
    /// The next event already queued: signals and requests before session
    /// events before check results, so a flood of reports never holds up
    /// a request.
    pub(super) fn try_next(&self) -> Option<Event> {
        self.signals
            .try_recv()
            .map(Event::Signal)
            .or_else(|_| self.control.try_recv().map(Event::Control))
            .or_else(|_| self.peers.try_recv().map(Event::Peer))
            .or_else(|_| self.results.try_recv().map(Event::Result))
            .ok()
    }

    /// The next event; None once every channel is closed (the owner holds
    /// a sender of each but `peers`, so in practice never).
    pub(super) async fn next(&self) -> Option<Event> {
        if let Some(ev) = self.try_next() {
            return Some(ev);
        }
        let closed = || std::future::pending::<Option<Event>>();
        async { self.signals.recv().await.ok().map(Event::Signal) }
            .or(async { self.control.recv().await.ok().map(Event::Control) })
            .or(async { self.peers.recv().await.ok().map(Event::Peer) })
            .or(async { self.results.recv().await.ok().map(Event::Result) })
            .or(async {
                // All four closed: nothing will come.
                if self.signals.is_closed()
                    && self.control.is_closed()
                    && self.peers.is_closed()
                    && self.results.is_closed()
                {
                    return None;
                }
                closed().await
            })
            .await
    }
}
