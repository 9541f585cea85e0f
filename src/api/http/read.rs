//! Reading a request: its head within the head's deadline and size, its
//! framing checked (RFC 9112), its body within the read deadline; a
//! follow-up request on a kept connection waits as idle time.

use super::slots::{Conn, Phase};
use super::{deadline, Limits, Request, Response, MAX_BODY, MAX_HEAD};
use smol::future::FutureExt;
use smol::io::AsyncReadExt;
use smol::net::TcpStream;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

const MAX_HEADERS: usize = 32;

pub(super) enum ReadOutcome {
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

/// A complete request head, checked: what reading the body and making the
/// request need.
struct Head {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    /// The body's length (Content-Length; none is 0).
    body_len: usize,
    keep: bool,
    http10: bool,
}

/// The parsed head's fields, checked as its framing requires: no
/// Transfer-Encoding (bodies are Content-Length only), one Host line
/// (RFC 9112 §3.2: more is 400), a valid Content-Length.
fn head(req: &httparse::Request) -> Result<Head, Response> {
    let version = req.version.unwrap_or(1);
    let headers: Vec<(String, String)> = req
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
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(n))
            .map(|(_, v)| v.to_ascii_lowercase())
    };
    if get("transfer-encoding").is_some() {
        return Err(Response::error(
            411,
            "chunked bodies are not supported; send Content-Length",
        ));
    }
    let hosts = headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("host"))
        .count();
    if hosts > 1 {
        return Err(Response::error(400, "more than one Host header"));
    }
    let body_len = content_length(&headers)?.unwrap_or(0);
    let keep = match get("connection").as_deref() {
        Some("close") => false,
        Some("keep-alive") => true,
        _ => version == 1,
    };
    Ok(Head {
        method: req.method.unwrap_or("").to_string(),
        target: req.path.unwrap_or("/").to_string(),
        headers,
        body_len,
        keep,
        http10: version == 0,
    })
}

/// Reads until `buf` holds `total` bytes, within the body's deadline.
async fn read_body(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    total: usize,
    limits: &Limits,
    at: Option<Instant>,
    conn: &Conn,
) -> Result<(), ReadOutcome> {
    while buf.len() < total {
        let mut chunk = [0u8; 4096];
        match read_some(stream, &mut chunk, limits.read_timeout, at, conn).await {
            Got::Data(n) => buf.extend_from_slice(&chunk[..n]),
            Got::Closed => return Err(ReadOutcome::Closed),
            Got::TimedOut => {
                return Err(ReadOutcome::Reply(Response::error(408, "request timeout")))
            }
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn read_request(
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
        let parsed = match req.parse(buf) {
            Ok(httparse::Status::Complete(head_len)) => Some((head_len, head(&req))),
            Ok(httparse::Status::Partial) if buf.len() >= MAX_HEAD => {
                return ReadOutcome::Reply(Response::error(431, "request header too large"));
            }
            Ok(httparse::Status::Partial) => None,
            Err(httparse::Error::TooManyHeaders) => {
                return ReadOutcome::Reply(Response::error(431, "too many request headers"));
            }
            Err(e) => {
                return ReadOutcome::Reply(Response::error(400, &format!("bad request: {e}")))
            }
        };
        if let Some((head_len, head)) = parsed {
            let head = match head {
                Ok(h) => h,
                Err(r) => return ReadOutcome::Reply(r),
            };
            let total = head_len.saturating_add(head.body_len);
            if let Err(end) = read_body(stream, buf, total, limits, body_deadline, conn).await {
                return end;
            }
            let body = buf[head_len..total].to_vec();
            buf.drain(..total);
            let (path, query) = match head.target.split_once('?') {
                Some((p, q)) => (p.to_string(), Some(q.to_string())),
                None => (head.target, None),
            };
            let request = Request {
                method: head.method,
                path,
                query,
                headers: head.headers,
                body,
                peer,
                local,
            };
            return ReadOutcome::Request(request, head.keep, head.http10);
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
