//! A minimal HTTP/1.1 server for the local endpoint. It is deliberately small:
//! Content-Length bodies only, bounded header and body sizes, a cap on
//! concurrent connections, and every read and write under a deadline, so a
//! slow or hostile client can never stall the daemon or its routing.

use smol::future::FutureExt;
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::net::{TcpListener, TcpStream};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Largest request head (request line plus headers) accepted.
pub const MAX_HEAD: usize = 8 * 1024;
/// Largest request body accepted.
pub const MAX_BODY: usize = 64 * 1024;
/// Connections served at once; more are answered 503 and closed.
pub const MAX_CONNECTIONS: usize = 32;
const MAX_HEADERS: usize = 32;

/// The timeouts of `api` in the config; zero disables one.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub read_header_timeout: Duration,
    pub read_timeout: Duration,
    pub write_timeout: Duration,
    pub idle_timeout: Duration,
}

#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub peer: SocketAddr,
}

impl Request {
    /// The value of query parameter `name` (no percent-decoding: names and
    /// check identifiers are plain).
    pub fn query_param(&self, name: &str) -> Option<&str> {
        self.query.as_deref()?.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (k == name).then_some(v)
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn new(status: u16, content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            content_type,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    pub fn json(status: u16, v: &serde_json::Value) -> Response {
        let mut body = serde_json::to_vec_pretty(v).unwrap_or_default();
        body.push(b'\n');
        Response::new(status, "application/json", body)
    }

    pub fn error(status: u16, msg: &str) -> Response {
        Response::json(status, &serde_json::json!({ "error": msg }))
    }

    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Response {
        self.headers.push((name, value.into()));
        self
    }
}

pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
pub type Handler = Arc<dyn Fn(Request) -> BoxFuture<Response> + Send + Sync>;

/// Accepts connections until the listener fails; each is served on its own task.
pub async fn serve(listener: TcpListener, handler: Handler, limits: Limits) {
    let active = Arc::new(AtomicUsize::new(0));
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                // EMFILE and friends: back off briefly instead of spinning.
                log::warn!("api: accept: {e}");
                smol::Timer::after(Duration::from_millis(100)).await;
                continue;
            }
        };
        let n = active.fetch_add(1, Ordering::SeqCst);
        let active2 = active.clone();
        let handler = handler.clone();
        smol::spawn(async move {
            if n >= MAX_CONNECTIONS {
                let r = Response::error(503, "too many connections");
                let mut stream = stream;
                let _ = write_response(&mut stream, &r, false, false, &limits).await;
            } else {
                serve_conn(stream, peer, handler, limits).await;
            }
            active2.fetch_sub(1, Ordering::SeqCst);
        })
        .detach();
    }
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
                    smol::Timer::at(t).await;
                    None
                })
                .await
        }
    }
}

enum ReadOutcome {
    Request(Request, bool),
    Reply(Response),
    Closed,
}

async fn serve_conn(mut stream: TcpStream, peer: SocketAddr, handler: Handler, limits: Limits) {
    let _ = stream.set_nodelay(true);
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    let mut first = true;
    loop {
        let outcome = read_request(&mut stream, peer, &mut buf, &limits, first).await;
        first = false;
        let (resp, keep, head) = match outcome {
            ReadOutcome::Closed => return,
            ReadOutcome::Reply(r) => (r, false, false),
            ReadOutcome::Request(req, keep) => {
                let head = req.method == "HEAD";
                (handler(req).await, keep, head)
            }
        };
        if !write_response(&mut stream, &resp, keep, head, &limits).await || !keep {
            return;
        }
    }
}

async fn read_request(
    stream: &mut TcpStream,
    peer: SocketAddr,
    buf: &mut Vec<u8>,
    limits: &Limits,
    first: bool,
) -> ReadOutcome {
    // Waiting for the first byte of a follow-up request is idle time.
    if buf.is_empty() && !first {
        let mut chunk = [0u8; 2048];
        match deadline(limits.idle_timeout, None, stream.read(&mut chunk)).await {
            Some(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => return ReadOutcome::Closed,
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
                let len = match get("content-length").map(|v| v.parse::<usize>()) {
                    None => 0,
                    Some(Ok(n)) if n <= MAX_BODY => n,
                    Some(Ok(_)) => {
                        return ReadOutcome::Reply(Response::error(413, "request body too large"))
                    }
                    Some(Err(_)) => {
                        return ReadOutcome::Reply(Response::error(400, "bad Content-Length"))
                    }
                };
                let keep = match get("connection").as_deref() {
                    Some("close") => false,
                    Some("keep-alive") => true,
                    _ => version == 1,
                };
                let total = head_len.saturating_add(len);
                while buf.len() < total {
                    let mut chunk = [0u8; 4096];
                    match deadline(limits.read_timeout, body_deadline, stream.read(&mut chunk))
                        .await
                    {
                        Some(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
                        Some(_) => return ReadOutcome::Closed,
                        None => return ReadOutcome::Reply(Response::error(408, "request timeout")),
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
                    },
                    keep,
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
        match deadline(
            limits.read_header_timeout,
            head_deadline,
            stream.read(&mut chunk[..room]),
        )
        .await
        {
            Some(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            Some(_) => return ReadOutcome::Closed,
            None if buf.is_empty() => return ReadOutcome::Closed,
            None => return ReadOutcome::Reply(Response::error(408, "request header timeout")),
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        204 => "No Content",
        400 => "Bad Request",
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

/// Writes `r`; for HEAD (`head`), the headers of the GET answer and no body
/// (RFC 9110 §9.3.2: Content-Length is the length GET would send).
async fn write_response(
    stream: &mut TcpStream,
    r: &Response,
    keep: bool,
    head: bool,
    limits: &Limits,
) -> bool {
    let mut out = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: {}\r\n",
        r.status,
        reason(r.status),
        r.content_type,
        r.body.len(),
        if keep { "keep-alive" } else { "close" }
    )
    .into_bytes();
    for (k, v) in &r.headers {
        out.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    if !head {
        out.extend_from_slice(&r.body);
    }
    let ok = matches!(
        deadline(limits.write_timeout, None, stream.write_all(&out)).await,
        Some(Ok(()))
    );
    if ok && !keep {
        let _ = stream.flush().await;
        let _ = stream.close().await;
    }
    ok
}
