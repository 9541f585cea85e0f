//! The listener's task: it accepts BGP connections and hands each to the
//! peer task of its source address; a connection from any other address is
//! closed and logged, rate-limited since anyone who reaches the port can
//! make these lines.

use std::cell::RefCell;
use std::net::{SocketAddr, TcpListener};
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

use smol::Async;

use super::{net, Control, PeerEntry};
use crate::logging::LogLimit;

/// Connections from addresses that are no configured neighbor: this many are
/// logged one by one, then one summary line per [`NON_NEIGHBOR_LOG_INTERVAL`]
/// while they go on (anyone who reaches the port can make them; logd keeps
/// only 16 KiB).
pub const NON_NEIGHBOR_LOG_BURST: u32 = 5;
const NON_NEIGHBOR_LOG_INTERVAL: Duration = Duration::from_secs(60);

/// Accepts until the listener is closed or the table is gone (the speaker
/// stopped).
pub(super) async fn accept_loop(
    listener: Rc<Async<TcpListener>>,
    peers: Weak<RefCell<Vec<PeerEntry>>>,
) {
    let strangers = LogLimit::summarized(NON_NEIGHBOR_LOG_BURST, NON_NEIGHBOR_LOG_INTERVAL);
    // The last address counted but not logged, for the summary line.
    let mut last_stranger: Option<SocketAddr> = None;
    loop {
        // Wake for the summary too, so a burst that stops is still reported.
        let accepted = match strangers.next_summary() {
            Some(at) => {
                smol::future::or(async { Some(listener.accept().await) }, async {
                    crate::rt::sleep_until(at).await;
                    None
                })
                .await
            }
            None => Some(listener.accept().await),
        };
        if let Some(n) = strangers.summary(Instant::now()) {
            log::info!(
                "bgp: {n} more connections from addresses that are not configured neighbors closed in the last {}s (the last from {})",
                strangers.interval().as_secs(),
                last_stranger.map_or_else(|| "?".to_string(), |a| a.to_string())
            );
        }
        let Some(accepted) = accepted else {
            continue;
        };
        let (stream, from) = match accepted {
            Ok(c) => c,
            Err(e) => {
                // E.g. out of file descriptors: back off instead of spinning.
                log::warn!("bgp: accept failed: {e}");
                crate::rt::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let Some(peers) = peers.upgrade() else {
            return;
        };
        let ip = net::canonical(from.ip());
        // Borrowed only for the lookup, never across an await.
        let tx = peers
            .borrow()
            .iter()
            .find(|p| p.address == ip)
            .map(|p| p.ctl.clone());
        match tx {
            Some(Some(tx)) => {
                if tx.try_send(Control::Inbound(stream)).is_err() {
                    log::debug!("bgp: connection from {from} closed: peer stopped");
                }
            }
            Some(None) => log::info!("bgp: connection from {from} closed: peer not running"),
            None => {
                if strangers.event(Instant::now()) {
                    log::info!("bgp: connection from {from} closed: not a configured neighbor");
                } else {
                    last_stranger = Some(from);
                }
                // Closed after the line is written, so a test that saw the
                // close finds the line.
                drop(stream);
            }
        }
    }
}
