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

use crate::chan::{Rx, Tx};
use smol::future::FutureExt;
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::net::{TcpListener, TcpStream};
use std::cell::RefCell;
use std::future::Future;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
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
const MAX_HEADERS: usize = 32;
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

pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
pub type Handler = Arc<dyn Fn(Request) -> BoxFuture<Reply> + Send + Sync>;

/// A body made a piece at a time while it is written.
pub trait Pieces: Send {
    /// The piece to write now (none may be empty but the last).
    fn piece(&self) -> &[u8];
    /// Makes the next piece: true when there is one, false when the body
    /// is complete, an error when it cannot be finished.
    fn next(&mut self) -> Pin<Box<dyn Future<Output = Result<bool, String>> + Send + '_>>;
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

/// What a connection is doing, for choosing whom to evict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Accepted, nothing read yet. Evicted last: its request may already be
    /// on the way, only not read yet.
    Fresh,
    /// Kept alive after a response, waiting for the next request.
    Idle,
    /// A request has started arriving but is not complete.
    Reading,
    /// The request is being answered (handler or response write).
    Busy,
}

struct Slot {
    id: u64,
    source: IpAddr,
    peer: SocketAddr,
    phase: Phase,
    /// When `phase` was entered.
    since: Instant,
    /// The connection (a second handle), to see whether its request has
    /// arrived before closing it as idle.
    stream: TcpStream,
    /// Dropped to evict: the connection's task waits on the other end.
    _evict: Tx<()>,
}

#[derive(Default)]
struct Slots {
    next_id: u64,
    slots: Vec<Slot>,
}

/// Why a connection was let in or not.
enum Admission {
    In {
        id: u64,
        evict: Rx<()>,
        evicted: Option<SocketAddr>,
    },
    Refused,
}

/// The per-source key: an IPv4 address, or the /64 of an IPv6 one (a host
/// usually has a whole /64 to pick addresses from).
fn source_of(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(a) => {
            let mut o = a.octets();
            o[8..].fill(0);
            IpAddr::V6(Ipv6Addr::from(o))
        }
        v4 => v4,
    }
}

impl Slots {
    /// Closes the connection matching `pick` that has been kept alive idle
    /// the longest, else the one that has been sending its request the
    /// longest, else the oldest that has sent nothing yet. Busy connections
    /// are never chosen.
    fn evict_one(&mut self, pick: impl Fn(&Slot) -> bool) -> Option<SocketAddr> {
        let mut order: Vec<(u8, Instant, usize)> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| pick(s))
            .filter_map(|(i, s)| {
                let rank = match s.phase {
                    Phase::Idle => 0,
                    Phase::Reading => 1,
                    Phase::Fresh => 2,
                    Phase::Busy => return None,
                };
                Some((rank, s.since, i))
            })
            .collect();
        order.sort_unstable();
        // An idle or fresh connection whose request has arrived (just not
        // been read yet) is about to be busy: closing it would drop a
        // request that a client already sent.
        let (_, _, i) = order.into_iter().find(|&(rank, _, i)| {
            rank == 1
                || self
                    .slots
                    .get(i)
                    .is_some_and(|s| !request_waiting(&s.stream))
        })?;
        Some(self.slots.swap_remove(i).peer)
    }

    /// At the global cap: evicts (as [`Slots::evict_one`] does) from the
    /// source holding the most connections that has one to spare, so a
    /// source with few connections (a scraper) is the last to lose one to
    /// many sources at their caps.
    fn evict_from_largest_source(&mut self) -> Option<SocketAddr> {
        let mut counts: Vec<(IpAddr, usize)> = Vec::new();
        for s in &self.slots {
            match counts.iter_mut().find(|(src, _)| *src == s.source) {
                Some((_, n)) => *n = n.saturating_add(1),
                None => counts.push((s.source, 1)),
            }
        }
        counts.sort_by_key(|c| std::cmp::Reverse(c.1));
        counts
            .into_iter()
            .find_map(|(src, _)| self.evict_one(|s| s.source == src))
    }

    fn admit(&mut self, stream: &TcpStream, peer: SocketAddr, now: Instant) -> Admission {
        let source = source_of(peer.ip());
        let mut evicted = None;
        if self.slots.iter().filter(|s| s.source == source).count() >= MAX_CONNECTIONS_PER_SOURCE {
            match self.evict_one(|s| s.source == source) {
                Some(p) => evicted = Some(p),
                None => return Admission::Refused,
            }
        }
        if self.slots.len() >= MAX_CONNECTIONS {
            match self.evict_from_largest_source() {
                Some(p) => evicted = Some(p),
                None => return Admission::Refused,
            }
        }
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        let (tx, rx) = crate::chan::bounded(1);
        self.slots.push(Slot {
            id,
            source,
            peer,
            phase: Phase::Fresh,
            since: now,
            stream: stream.clone(),
            _evict: tx,
        });
        Admission::In {
            id,
            evict: rx,
            evicted,
        }
    }
}

/// Whether bytes wait to be read on `s` (a peek; the socket is non-blocking).
/// A closed or failed connection has none.
fn request_waiting(s: &TcpStream) -> bool {
    let mut b = [std::mem::MaybeUninit::<u8>::uninit(); 1];
    matches!(socket2::SockRef::from(s).peek(&mut b), Ok(n) if n > 0)
}

/// The connection table, shared by the accept loop and the connections'
/// tasks, all on the daemon's one thread: each borrow admits, marks or
/// frees one slot and ends before the next await.
type SlotTable = Rc<RefCell<Slots>>;

/// One admitted connection's place in the table; dropping it frees the slot.
struct Conn {
    slots: SlotTable,
    id: u64,
    evicted: Rx<()>,
}

impl Conn {
    /// Enters `phase`; false when the connection was evicted meanwhile.
    fn set(&self, phase: Phase) -> bool {
        let mut t = self.slots.borrow_mut();
        match t.slots.iter_mut().find(|s| s.id == self.id) {
            Some(s) => {
                if s.phase != phase {
                    s.phase = phase;
                    s.since = Instant::now();
                }
                true
            }
            None => false,
        }
    }

    /// Resolves once the connection is evicted.
    async fn evicted(&self) {
        let _ = self.evicted.recv().await;
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let mut t = self.slots.borrow_mut();
        if let Some(i) = t.slots.iter().position(|s| s.id == self.id) {
            // The evicted connection's sender drops after the borrow ends.
            let gone = t.slots.swap_remove(i);
            drop(t);
            drop(gone);
        }
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

enum ReadOutcome {
    /// The request, whether to keep the connection, and whether it is
    /// HTTP/1.0 (which has no chunked coding).
    Request(Request, bool, bool),
    Reply(Response),
    Closed,
}

/// One read of at most `chunk.len()` bytes, under a deadline, given up when
/// the connection is evicted.
enum Got {
    Data(usize),
    /// EOF, a socket error, or eviction: close without answering.
    Closed,
    TimedOut,
}

async fn read_some(
    stream: &mut TcpStream,
    chunk: &mut [u8],
    limit: Duration,
    at: Option<Instant>,
    conn: &Conn,
) -> Got {
    let read = async {
        match deadline(limit, at, stream.read(chunk)).await {
            Some(Ok(n)) if n > 0 => Got::Data(n),
            Some(_) => Got::Closed,
            None => Got::TimedOut,
        }
    };
    read.or(async {
        conn.evicted().await;
        Got::Closed
    })
    .await
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

/// The request body length from the `Content-Length` field lines. RFC 9112
/// §6.3 (5): an invalid Content-Length makes the framing invalid, and the
/// server MUST answer 400 and close. Several lines, or a list, are accepted
/// only when every value is the same (RFC 9110 §8.6); anything but digits
/// (`+5`, `0x10`, empty) is invalid.
fn content_length(headers: &[(String, String)]) -> Result<Option<usize>, Response> {
    let mut len: Option<&str> = None;
    for (_, v) in headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("content-length"))
    {
        for item in v.split(',').map(str::trim) {
            if item.is_empty() || !item.bytes().all(|c| c.is_ascii_digit()) {
                return Err(Response::error(400, &format!("bad Content-Length {v:?}")));
            }
            // Leading zeros do not make another value.
            let digits = match item.trim_start_matches('0') {
                "" => "0",
                d => d,
            };
            match len {
                Some(l) if l != digits => {
                    return Err(Response::error(400, "conflicting Content-Length values"))
                }
                _ => len = Some(digits),
            }
        }
    }
    match len.map(str::parse::<usize>) {
        None => Ok(None),
        Some(Ok(n)) if n <= MAX_BODY => Ok(Some(n)),
        // Too large, or too many digits for usize.
        Some(_) => Err(Response::error(413, "request body too large")),
    }
}

#[allow(clippy::too_many_arguments)]
async fn read_request(
    stream: &mut TcpStream,
    peer: SocketAddr,
    local: SocketAddr,
    buf: &mut Vec<u8>,
    limits: &Limits,
    first: bool,
    conn: &Conn,
) -> ReadOutcome {
    // Waiting for the first byte of a follow-up request is idle time.
    if buf.is_empty() && !first {
        let mut chunk = [0u8; 2048];
        match read_some(stream, &mut chunk, limits.idle_timeout, None, conn).await {
            Got::Data(n) => buf.extend_from_slice(&chunk[..n]),
            Got::Closed | Got::TimedOut => return ReadOutcome::Closed,
        }
    }
    let start = Instant::now();
    let head_deadline = (!limits.read_header_timeout.is_zero())
        .then(|| start.checked_add(limits.read_header_timeout))
        .flatten();
    let body_deadline = (!limits.read_timeout.is_zero())
        .then(|| start.checked_add(limits.read_timeout))
        .flatten();
    loop {
        if !buf.is_empty() && !conn.set(Phase::Reading) {
            return ReadOutcome::Closed;
        }
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(buf) {
            Ok(httparse::Status::Complete(head_len)) => {
                let method = req.method.unwrap_or("").to_string();
                let target = req.path.unwrap_or("/").to_string();
                let version = req.version.unwrap_or(1);
                let hdrs: Vec<(String, String)> = req
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_string(),
                            String::from_utf8_lossy(h.value).trim().to_string(),
                        )
                    })
                    .collect();
                let get = |n: &str| {
                    hdrs.iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case(n))
                        .map(|(_, v)| v.to_ascii_lowercase())
                };
                if get("transfer-encoding").is_some() {
                    return ReadOutcome::Reply(Response::error(
                        411,
                        "chunked bodies are not supported; send Content-Length",
                    ));
                }
                // RFC 9112 §3.2: a server MUST answer 400 to a request with
                // more than one Host field line.
                if hdrs
                    .iter()
                    .filter(|(k, _)| k.eq_ignore_ascii_case("host"))
                    .count()
                    > 1
                {
                    return ReadOutcome::Reply(Response::error(400, "more than one Host header"));
                }
                let len = match content_length(&hdrs) {
                    Ok(n) => n.unwrap_or(0),
                    Err(r) => return ReadOutcome::Reply(r),
                };
                let keep = match get("connection").as_deref() {
                    Some("close") => false,
                    Some("keep-alive") => true,
                    _ => version == 1,
                };
                let total = head_len.saturating_add(len);
                while buf.len() < total {
                    let mut chunk = [0u8; 4096];
                    match read_some(stream, &mut chunk, limits.read_timeout, body_deadline, conn)
                        .await
                    {
                        Got::Data(n) => buf.extend_from_slice(&chunk[..n]),
                        Got::Closed => return ReadOutcome::Closed,
                        Got::TimedOut => {
                            return ReadOutcome::Reply(Response::error(408, "request timeout"))
                        }
                    }
                }
                let body = buf[head_len..total].to_vec();
                buf.drain(..total);
                let (path, query) = match target.split_once('?') {
                    Some((p, q)) => (p.to_string(), Some(q.to_string())),
                    None => (target, None),
                };
                return ReadOutcome::Request(
                    Request {
                        method,
                        path,
                        query,
                        headers: hdrs,
                        body,
                        peer,
                        local,
                    },
                    keep,
                    version == 0,
                );
            }
            Ok(httparse::Status::Partial) => {
                if buf.len() >= MAX_HEAD {
                    return ReadOutcome::Reply(Response::error(431, "request header too large"));
                }
            }
            Err(httparse::Error::TooManyHeaders) => {
                return ReadOutcome::Reply(Response::error(431, "too many request headers"));
            }
            Err(e) => {
                return ReadOutcome::Reply(Response::error(400, &format!("bad request: {e}")))
            }
        }
        let mut chunk = [0u8; 2048];
        let room = MAX_HEAD.saturating_sub(buf.len()).clamp(1, chunk.len());
        let empty = buf.is_empty();
        match read_some(
            stream,
            &mut chunk[..room],
            limits.read_header_timeout,
            head_deadline,
            conn,
        )
        .await
        {
            Got::Data(n) => buf.extend_from_slice(&chunk[..n]),
            Got::Closed => return ReadOutcome::Closed,
            Got::TimedOut if empty => return ReadOutcome::Closed,
            Got::TimedOut => {
                return ReadOutcome::Reply(Response::error(408, "request header timeout"))
            }
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Payload Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "",
    }
}

/// The status line and header block of `r`; `length` is its
/// Content-Length, or None for a body in chunks (`chunked`) or until the
/// connection closes.
fn head_block(r: &Response, length: Option<usize>, chunked: bool, keep: bool) -> Vec<u8> {
    let framing = match length {
        Some(n) => format!("Content-Length: {n}\r\n"),
        None if chunked => "Transfer-Encoding: chunked\r\n".to_string(),
        None => String::new(),
    };
    let mut out = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\n{framing}Cache-Control: no-store\r\nConnection: {}\r\n",
        r.status,
        reason(r.status),
        r.content_type,
        if keep { "keep-alive" } else { "close" }
    )
    .into_bytes();
    for (k, v) in &r.headers {
        out.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// Writes `bytes` within the write timeout.
async fn write_within(stream: &mut TcpStream, bytes: &[u8], limits: &Limits) -> bool {
    matches!(
        deadline(limits.write_timeout, None, stream.write_all(bytes)).await,
        Some(Ok(()))
    )
}

/// Ends a connection whose answer was written whole.
async fn close(stream: &mut TcpStream) {
    let _ = stream.flush().await;
    let _ = stream.close().await;
}

/// Writes `r`; for HEAD (`head`), the headers of the GET answer and no body
/// (RFC 9110 §9.3.2: Content-Length is the length GET would send).
async fn write_response(
    stream: &mut TcpStream,
    r: &Response,
    keep: bool,
    head: bool,
    limits: &Limits,
) -> bool {
    let mut out = head_block(r, Some(r.body.len()), false, keep);
    if !head {
        out.extend_from_slice(&r.body);
    }
    let ok = write_within(stream, &out, limits).await;
    if ok && !keep {
        close(stream).await;
    }
    ok
}

/// Writes `r` with `body` a piece at a time as it is made: in chunks
/// (RFC 9112 §7.1), or for an HTTP/1.0 client (`http10`) as it comes until
/// the connection closes. Each write has the write timeout, so a client
/// that stops reading is closed within it, and the connection holds one
/// piece at a time whatever the answer's size. HEAD gets the headers GET
/// would (Transfer-Encoding: chunked) and no body. A body that cannot be
/// finished closes the connection without the last chunk: the client sees
/// it incomplete. True when the connection stays open.
async fn write_pieces(
    stream: &mut TcpStream,
    r: &Response,
    mut body: Box<dyn Pieces>,
    keep: bool,
    head: bool,
    http10: bool,
    limits: &Limits,
) -> bool {
    let chunked = !http10;
    let keep = keep && chunked;
    let mut out = head_block(r, None, chunked, keep);
    if head {
        let ok = write_within(stream, &out, limits).await;
        if ok && !keep {
            close(stream).await;
        }
        return ok && keep;
    }
    // Each chunk's size line carries the end of the chunk before it, so
    // a piece is two writes: its frame and itself.
    let mut first = true;
    loop {
        let piece = body.piece();
        if !piece.is_empty() {
            if chunked {
                if !first {
                    out.extend_from_slice(b"\r\n");
                }
                out.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
            }
            first = false;
            if !write_within(stream, &out, limits).await
                || !write_within(stream, body.piece(), limits).await
            {
                return false;
            }
            out.clear();
        }
        match body.next().await {
            Ok(true) => {}
            Ok(false) => break,
            Err(why) => {
                log::debug!("api: an answer cut short: {why}");
                return false;
            }
        }
    }
    if chunked {
        out.extend_from_slice(if first {
            b"0\r\n\r\n"
        } else {
            b"\r\n0\r\n\r\n"
        });
    }
    let ok = write_within(stream, &out, limits).await;
    if ok && !keep {
        close(stream).await;
    }
    ok && keep
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

    #[test]
    fn sources_are_addresses_and_ipv6_slash_64s() {
        let s = |a: &str| source_of(a.parse().unwrap());
        assert_eq!(s("192.0.2.1"), s("192.0.2.1"));
        assert_ne!(s("192.0.2.1"), s("192.0.2.2"));
        assert_eq!(s("2001:db8::1"), s("2001:db8::ffff:1"));
        assert_ne!(s("2001:db8::1"), s("2001:db8:0:1::1"));
        assert_eq!(s("::ffff:192.0.2.1"), s("192.0.2.1"));
    }
}
