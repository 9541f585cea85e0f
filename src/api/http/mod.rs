//! A minimal HTTP/1.1 server for the local endpoint. It is deliberately small:
//! Content-Length request bodies only, bounded header and body sizes, a cap
//! on connections (in all and per source), and every read and write under a
//! deadline, so a slow or hostile client can never stall the daemon or its
//! routing, nor keep other clients out: when a cap is reached the connection
//! that has been idle (or dribbling its request) the longest is closed to
//! make room, and only connections whose request is being answered are safe.
//!
//! An answer is written whole with its Content-Length, or (a [`Pieces`]
//! body: `/status`, `/metrics` and the page at scale) a piece at a time as
//! it is made, with chunked transfer coding (HTTP/1.0: until the connection
//! closes), so a connection holds one piece whatever the answer's size; a
//! body that cannot be finished ends with the connection, without its last
//! chunk, so the client sees it incomplete.
//!
//! Accepting and serving a connection are here; the connection table and
//! its caps in `slots`, a request's reading in `read`, an answer's writing
//! in `write`.

mod read;
mod slots;
mod write;

use read::{read_request, ReadOutcome};
use slots::{Admission, Conn, Phase, SlotTable};
use write::{write_pieces, write_response};

use crate::chan::Rx;
use smol::future::FutureExt;
use smol::net::{TcpListener, TcpStream};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Largest request head (request line plus headers) accepted.
pub(crate) const MAX_HEAD: usize = 8 * 1024;
/// Largest request body accepted.
pub(crate) const MAX_BODY: usize = 64 * 1024;
/// Connections held at once. When full, a new connection takes the place of
/// the one idle (or sending its request) the longest; only when every one is
/// being answered is the new one answered 503 and closed.
pub const MAX_CONNECTIONS: usize = 128;
/// Connections held at once from one source (an IPv4 address or an IPv6
/// /64), with the same eviction as [`MAX_CONNECTIONS`]: a single host can
/// churn only its own connections.
pub const MAX_CONNECTIONS_PER_SOURCE: usize = 32;
/// Connections the kernel queues for `accept` (capped by
/// net.core.somaxconn). Larger than the usual 128 so that a burst of
/// connects (such as attackers reconnecting as fast as they are closed)
/// waits in the queue instead of having its SYNs dropped, which would cost
/// a normal client a 1 s SYN retransmit.
pub(crate) const LISTEN_BACKLOG: i32 = 4096;
/// Refused, evicted and accept-failure log lines: at most one per this.
const LOG_EVERY: Duration = Duration::from_secs(10);
/// A connection that finds every slot busy tries again this often, for at
/// most [`ADMIT_RETRY_FOR`], before it is answered 503.
const ADMIT_RETRY_EVERY: Duration = Duration::from_millis(10);
const ADMIT_RETRY_FOR: Duration = Duration::from_millis(300);
/// A 503 to a refused connection gets this long to be written.
const REFUSE_WRITE_TIMEOUT: Duration = Duration::from_secs(1);

/// The timeouts of `api` in the config; zero disables one.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub read_header_timeout: Duration,
    pub read_timeout: Duration,
    pub write_timeout: Duration,
    pub idle_timeout: Duration,
}

/// The request and answer types are pure data; the router in pathosd-core
/// takes and gives them.
pub use pathosd_core::api::router::{Request, Response};

/// A handler's answer: run on the server's own thread, so not `Send`.
pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T>>>;
/// The routes, made by whoever starts the server and handed to the thread
/// that serves (the tests start servers on threads of their own).
pub type Handler = Arc<dyn Fn(Request) -> BoxFuture<Reply> + Send + Sync>;

/// A body made a piece at a time while it is written.
pub trait Pieces {
    /// The piece to write now (none may be empty but the last).
    fn piece(&self) -> &[u8];
    /// Makes the next piece: true when there is one, false when the body
    /// is complete, an error when it cannot be finished.
    fn next(&mut self) -> Pin<Box<dyn Future<Output = Result<bool, String>> + '_>>;
}

/// What a handler answers: the response, and for a streamed answer its
/// body (the response's own body is then empty).
pub struct Reply {
    pub response: Response,
    pub body: Option<Box<dyn Pieces>>,
}

impl From<Response> for Reply {
    fn from(response: Response) -> Reply {
        Reply {
            response,
            body: None,
        }
    }
}

/// Log lines that a client can provoke at will: at most one per period, with
/// the number left out since the last one (each limiter a thread-local).
pub(crate) use crate::logging::LogLimit;

/// ", N more since" for a rate-limited line, or nothing.
pub(crate) fn more_since(n: u64) -> String {
    if n == 0 {
        String::new()
    } else {
        format!(" ({n} more like it not logged)")
    }
}
thread_local! {
    static CAP_LOG: LogLimit = const { LogLimit::new() };
    static ACCEPT_LOG: LogLimit = const { LogLimit::new() };
}

/// Binds the API's listening socket on `addr` with [`LISTEN_BACKLOG`].
pub fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let domain = socket2::Domain::for_address(addr);
    let s = socket2::Socket::new(domain, socket2::Type::STREAM, None)?;
    // A restarted daemon can bind while old connections are in TIME_WAIT.
    s.set_reuse_address(true)?;
    s.bind(&addr.into())?;
    s.listen(LISTEN_BACKLOG)?;
    s.set_nonblocking(true)?;
    TcpListener::try_from(std::net::TcpListener::from(s))
}

/// Accepts connections until the listener fails; each is served on its own task.
pub async fn serve(listener: TcpListener, handler: Handler, limits: Limits) {
    let slots: SlotTable = Rc::default();
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                // EMFILE and friends: back off briefly instead of spinning.
                if let Some(n) = ACCEPT_LOG.with(|l| l.allow(LOG_EVERY)) {
                    log::warn!("api: accept: {e}{}", more_since(n));
                }
                crate::rt::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let admission = slots.borrow_mut().admit(&stream, peer, Instant::now());
        match admission {
            Admission::In { id, evict, evicted } => {
                admitted(&slots, stream, peer, id, evict, evicted, &handler, limits);
            }
            Admission::Refused => {
                // Every slot is busy or holds a request that has just
                // arrived: such a burst passes within milliseconds (the
                // requests are answered, slow heads become evictable once
                // read), so the newcomer waits for a place a little
                // before it is refused.
                let (slots, handler) = (slots.clone(), handler.clone());
                crate::rt::spawn(async move {
                    let until = Instant::now() + ADMIT_RETRY_FOR;
                    while Instant::now() < until {
                        crate::rt::sleep(ADMIT_RETRY_EVERY).await;
                        let again = slots.borrow_mut().admit(&stream, peer, Instant::now());
                        if let Admission::In { id, evict, evicted } = again {
                            admitted(&slots, stream, peer, id, evict, evicted, &handler, limits);
                            return;
                        }
                    }
                    refuse(stream, peer, limits).await;
                })
                .detach();
            }
        }
        // Let the connections just accepted read their requests before the
        // next accept: a flood of connects must not starve them.
        smol::future::yield_now().await;
    }
}

/// Serves a connection that got a slot, logging the eviction it caused.
#[allow(clippy::too_many_arguments)]
fn admitted(
    slots: &SlotTable,
    stream: TcpStream,
    peer: SocketAddr,
    id: u64,
    evict: Rx<()>,
    evicted: Option<SocketAddr>,
    handler: &Handler,
    limits: Limits,
) {
    if let Some(old) = evicted {
        if let Some(n) = CAP_LOG.with(|l| l.allow(LOG_EVERY)) {
            log::warn!(
                "api: connection limit reached ({MAX_CONNECTIONS}, {MAX_CONNECTIONS_PER_SOURCE} per source): closed the longest-idle connection from {old} for one from {peer}{}",
                more_since(n)
            );
        }
    }
    let conn = Conn {
        slots: slots.clone(),
        id,
        evicted: evict,
    };
    crate::rt::spawn(serve_conn(stream, peer, conn, handler.clone(), limits)).detach();
}

/// Answers 503 to a connection that found no place within [`ADMIT_RETRY_FOR`].
async fn refuse(mut stream: TcpStream, peer: SocketAddr, limits: Limits) {
    if let Some(n) = CAP_LOG.with(|l| l.allow(LOG_EVERY)) {
        log::warn!(
            "api: connection limit reached ({MAX_CONNECTIONS}, {MAX_CONNECTIONS_PER_SOURCE} per source) with every connection busy: refused {peer} with 503{}",
            more_since(n)
        );
    }
    let r = Response::error(503, "too many connections");
    let lim = Limits {
        write_timeout: REFUSE_WRITE_TIMEOUT,
        ..limits
    };
    let _ = write_response(&mut stream, &r, false, false, &lim).await;
}

/// Runs `f` with a deadline; `None` when it expired. A zero limit disables it.
async fn deadline<T>(
    limit: Duration,
    at: Option<Instant>,
    f: impl Future<Output = T>,
) -> Option<T> {
    let until = match at {
        Some(t) => Some(t),
        None if limit.is_zero() => None,
        None => Instant::now().checked_add(limit),
    };
    match until {
        None => Some(f.await),
        Some(t) => {
            async { Some(f.await) }
                .or(async {
                    crate::rt::sleep_until(t).await;
                    None
                })
                .await
        }
    }
}

async fn serve_conn(
    mut stream: TcpStream,
    peer: SocketAddr,
    conn: Conn,
    handler: Handler,
    limits: Limits,
) {
    let _ = stream.set_nodelay(true);
    let Ok(local) = stream.local_addr() else {
        return;
    };
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    let mut first = true;
    loop {
        let outcome = read_request(&mut stream, peer, local, &mut buf, &limits, first, &conn).await;
        first = false;
        let (reply, keep, head, http10) = match outcome {
            ReadOutcome::Closed => return,
            ReadOutcome::Reply(r) => (r.into(), false, false, false),
            ReadOutcome::Request(req, keep, http10) => {
                if !conn.set(Phase::Busy) {
                    return;
                }
                let head = req.method == "HEAD";
                (handler(req).await, keep, head, http10)
            }
        };
        let Reply { response, body } = reply;
        let kept = match body {
            None => write_response(&mut stream, &response, keep, head, &limits).await && keep,
            Some(body) => {
                write_pieces(&mut stream, &response, body, keep, head, http10, &limits).await
            }
        };
        if !kept {
            return;
        }
        let next = if buf.is_empty() {
            Phase::Idle
        } else {
            Phase::Reading
        };
        if !conn.set(next) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One line per period, and the next one says how many were left out.
    #[test]
    fn log_limit_counts_what_it_leaves_out() {
        let l = LogLimit::new();
        assert_eq!(l.allow(Duration::from_secs(3600)), Some(0));
        for _ in 0..5 {
            assert_eq!(l.allow(Duration::from_secs(3600)), None);
        }
        assert_eq!(l.allow(Duration::ZERO), Some(5));
        assert_eq!(l.allow(Duration::ZERO), Some(0));
        assert_eq!(more_since(0), "");
        assert_eq!(more_since(5), " (5 more like it not logged)");
    }
}
