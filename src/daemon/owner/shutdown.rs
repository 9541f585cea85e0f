//! The graceful stop (SIGTERM, SIGINT): every VIP withdrawn, the drain
//! waited, Cease sent, within procd's five seconds.

use super::loops::Runtimes;
use super::{send_peer_event, state, Event, Inbox, Owner, UBUS_FLUSH_LIMIT};
use crate::chan::Signal;
use smol::future::FutureExt;
use std::time::{Duration, Instant};

/// How long the exit waits for the last OTLP export.
const OTEL_FLUSH_LIMIT: Duration = Duration::from_secs(1);

impl Owner {
    /// SIGTERM/SIGINT: withdraw every VIP, wait shutdown_drain, Cease, exit 0.
    /// A second signal exits at once.
    pub(super) async fn shutdown(&mut self, rx: &Inbox) -> i32 {
        log::info!("shutting down: withdrawing every VIP");
        let drain = self
            .state
            .config()
            .shutdown_drain
            .min(Duration::from_secs(4));
        // bgp.graceful_shutdown: the drain runs with every route still
        // announced, tagged GRACEFUL_SHUTDOWN (RFC 8326), so peers that
        // honour it move the traffic first; the withdrawals and the Cease
        // follow at once. Without a drain there is no time for that.
        let gshut = self.state.config().graceful_shutdown && !drain.is_zero();
        if gshut {
            log::info!(
                "shutting down: every route tagged GRACEFUL_SHUTDOWN (65535:0) for shutdown_drain {drain:?}, then withdrawn"
            );
        }
        let ubus = self.ubus.clone();
        let at_once = {
            // The wire first: the sessions get the stop (the Cease, or
            // the withdrawals or the tagged routes before a drain) before
            // the bookkeeping of every VIP below (its state, log line and
            // ubus event), which at 10,000 VIPs took 15 ms at log level
            // warn and 85 ms at info before the Cease could leave
            // (benches/stop-timing.sh).
            let speaker = &mut self.speaker;
            let mut stop = std::pin::pin!(async move {
                let mut last = drain;
                if gshut {
                    speaker.announce_graceful_shutdown();
                    crate::rt::sleep_exact(drain).await;
                    last = Duration::ZERO;
                }
                speaker.shutdown("pathosd shutting down", last).await;
            });
            // Hands the stop to every session, then lets them write it.
            let finished = smol::future::poll_once(stop.as_mut()).await.is_some();
            smol::future::yield_now().await;
            if drain.is_zero() {
                // The Cease is out (or queued behind a write under way):
                // nothing left here is as urgent as the router's flush of
                // our routes.
                crate::sys::lower_thread_priority();
            }
            self.runtimes = Runtimes::default();
            // The state withdraws every VIP (the speaker has withdrawn the
            // routes); the log, the events and the spans say so as for
            // every other change, with the time of the stop.
            let fx = self.state.step(state::Event::Shutdown, Instant::now());
            super::report(&self.state, ubus.as_ref(), self.hooks.as_mut(), &fx.outputs);
            // Session changes of the shutdown become `pathosd.peer` events.
            let second_signal = async {
                loop {
                    match rx.next().await {
                        Some(Event::Signal(Signal(s))) if s != libc::SIGHUP => return true,
                        Some(Event::Peer(p)) => send_peer_event(ubus.as_ref(), &p),
                        Some(_) => continue,
                        None => std::future::pending::<()>().await,
                    }
                }
            };
            let bounded = async {
                crate::rt::sleep(drain + Duration::from_millis(800)).await;
                log::warn!("shutdown: peers did not close in time");
                false
            };
            // BFD goes on until the sessions close: a BFD session that went
            // quiet now would make the peer drop the session at once, before
            // the drain (RFC 5882: the peer's client acts on the Down).
            let bfd = &mut self.bfd;
            let keep_bfd = async {
                loop {
                    bfd.ready().await;
                    // The sessions are stopping: a BFD down changes nothing.
                    let _ = bfd.turn(Instant::now());
                }
            };
            async {
                if !finished {
                    stop.await;
                }
                false
            }
            .or(second_signal)
            .or(bounded)
            .or(keep_bfd)
            .await
        };
        // The peers' last changes (to idle) were sent before their tasks
        // acknowledged the stop.
        while let Ok(p) = rx.peers.try_recv() {
            send_peer_event(ubus.as_ref(), &p);
        }
        if let Some(u) = &ubus {
            // The queued events, then REMOVE_OBJECT, and the exit only once
            // ubusd has answered it: ubusd never reads what a client wrote
            // before a close it has seen. Bounded: a wedged ubusd does not
            // hold up the exit.
            u.shutdown();
            if !at_once {
                u.stopped()
                    .or(async {
                        crate::rt::sleep(UBUS_FLUSH_LIMIT).await;
                        log::warn!("shutdown: ubusd did not take the last events in time");
                    })
                    .await;
            }
        }
        if let Some(o) = self.otel.take() {
            // After the withdrawals and the Cease, never before: the last
            // export shows every VIP withdrawn and the sessions closed.
            if !at_once {
                let now = Instant::now();
                let mut state = super::Reading { owner: self, now };
                o.flush(&mut state, OTEL_FLUSH_LIMIT).await;
            }
        }
        log::info!("stopped");
        0
    }
}
