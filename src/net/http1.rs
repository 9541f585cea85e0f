//! One HTTP/1.1 exchange on async-io: the plain `http://` checks', direct
//! (the common case on a router: a local service's health URL) or through
//! an `http://` proxy (the request rendered in absolute-form by the http
//! probe), and the OTLP exporter's POST to an `http://` collector. It runs
//! on the daemon's thread like a tcp probe: no worker thread, no hand-off;
//! the caller renders the request bytes (a probe once, when it is built).
//! https and https:// proxies stay on ureq in the bounded pool
//! ([`crate::pool`]).
//!
//! It reads what the caller needs: the status line and headers
//! (httparse), then, when the body is wanted or the connection is kept
//! alive, the body as framed by RFC 9112 §6.3 (no body for HEAD, 1xx, 204
//! and 304; chunked; Content-Length; else until the server closes), at most
//! [`MAX_BODY`] bytes of it.

use super::io_msg;
use async_io::Async;
use smol::io::{AsyncReadExt, AsyncWriteExt};
use std::net::{SocketAddr, TcpStream};

/// The body is read (only when it is wanted) up to this size.
pub(crate) const MAX_BODY: usize = 1 << 20;
/// Largest status line + headers accepted.
const MAX_HEAD: usize = 64 * 1024;
/// Headers parsed per response.
const MAX_HEADERS: usize = 64;
/// Longest chunk-size line (with extensions) or trailer line.
const MAX_LINE: usize = 4096;

/// The answer of one exchange.
pub(crate) struct Response {
    pub status: u16,
    pub body: Vec<u8>,
    /// `Retry-After` in delay-seconds (RFC 9110 §10.2.3), for the OTLP
    /// exporter's back-off; an HTTP-date reads as none.
    pub retry_after: Option<u64>,
    /// The connection, when it may carry the next request.
    pub reusable: Option<Async<TcpStream>>,
}

/// Why an exchange failed; the probe words the detail.
#[derive(Debug)]
pub(crate) enum Failure {
    Connect(std::io::Error),
    Io(std::io::Error),
    /// The server's bytes are not an HTTP/1.x response.
    Protocol(String),
}

impl Failure {
    pub fn detail(&self, what: &str, dst: &str) -> String {
        match self {
            Failure::Connect(e) => format!("connect {dst}: {}", io_msg(e)),
            Failure::Io(e) => format!("{what}: {}", io_msg(e)),
            Failure::Protocol(m) => format!("{what}: bad response: {m}"),
        }
    }
}

/// Sends `request` (a rendered head, then any body: parts written in
/// order, so a large body is not copied behind its head) on `conn` or a new connection to the
/// first of `addrs` that accepts one (tried in order; the last error when
/// none does), and reads the response.
///
/// A kept-alive connection the server has closed meanwhile (its idle
/// timeout, a restart) is seen before it is used, without waiting: the
/// closed socket reads end of stream at once. One the server closes as the
/// request goes out is replaced by a new one once, the request sent again,
/// if the request could not have been processed: nothing was written, or
/// nothing came back to an idempotent request (RFC 9112 §9.3.1: "A user
/// agent SHOULD NOT automatically retry a request with a non-idempotent
/// method", so a POST that got no answer fails).
pub(crate) async fn exchange(
    addrs: &[SocketAddr],
    conn: Option<Async<TcpStream>>,
    request: &[&[u8]],
    method: Method,
    want_body: bool,
    keep_alive: bool,
) -> Result<Response, Failure> {
    if let Some(c) = conn.filter(idle_and_open) {
        match once(c, request, method, want_body, keep_alive).await {
            Err((Failure::Io(_), true)) => {}
            r => return r.map_err(|(f, _)| f),
        }
    }
    let mut failed = None;
    for &addr in addrs {
        match super::connect_tcp(addr)
            .await
            .and_then(super::Connected::into_async)
        {
            Ok(c) => {
                return once(c, request, method, want_body, keep_alive)
                    .await
                    .map_err(|(f, _)| f)
            }
            Err(e) => failed = Some(e),
        }
    }
    let e = failed.unwrap_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound));
    Err(Failure::Connect(e))
}

/// The request's method, as the exchange needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    /// GET: idempotent, a body.
    Get,
    /// HEAD: idempotent, never a body (RFC 9110 §9.3.2).
    Head,
    /// POST: not idempotent (RFC 9110 §9.2.2).
    Post,
}

/// Whether a kept connection may carry the next request: the server has
/// neither closed it (end of stream, a reset) nor sent anything unasked.
/// A non-blocking peek: no wait, no reactor.
fn idle_and_open(c: &Async<TcpStream>) -> bool {
    let mut b = [0u8; 1];
    matches!(c.get_ref().peek(&mut b), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

/// One request on `c`. The flag with an error: the request cannot have
/// been processed (nothing written; nothing received to an idempotent
/// one), so a reused connection may be retried.
async fn once(
    mut c: Async<TcpStream>,
    request: &[&[u8]],
    method: Method,
    want_body: bool,
    keep_alive: bool,
) -> Result<Response, (Failure, bool)> {
    let head_method = method == Method::Head;
    let idempotent = method != Method::Post;
    for part in request {
        c.write_all(part)
            .await
            .map_err(|e| (Failure::Io(e), true))?;
    }
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let mut received = false;
    loop {
        // 1xx interim responses are skipped (RFC 9110 §15.2).
        while let Some(head) =
            parse_head(&buf, head_method).map_err(|m| (Failure::Protocol(m), false))?
        {
            if (100..200).contains(&head.status) {
                buf.drain(..head.len);
                continue;
            }
            return body(c, buf, head, want_body, keep_alive)
                .await
                .map_err(|f| (f, false));
        }
        if buf.len() > MAX_HEAD {
            let m = format!("headers longer than {MAX_HEAD} bytes");
            return Err((Failure::Protocol(m), false));
        }
        let n = c
            .read(&mut chunk)
            .await
            .map_err(|e| (Failure::Io(e), idempotent && !received))?;
        if n == 0 {
            let e = std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
            return Err((Failure::Io(e), idempotent && !received));
        }
        received = true;
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// How the body of a response is delimited (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Empty,
    Length(u64),
    Chunked,
    UntilClose,
}

#[derive(Debug)]
struct Head {
    status: u16,
    framing: Framing,
    /// Whether the connection may carry another request.
    persistent: bool,
    retry_after: Option<u64>,
    /// Bytes of status line and headers.
    len: usize,
}

/// The response head at the start of `buf`; None while incomplete.
fn parse_head(buf: &[u8], head_method: bool) -> Result<Option<Head>, String> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut r = httparse::Response::new(&mut headers);
    let len = match r.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let status = r.code.unwrap_or(0);
    let mut chunked = false;
    let mut length = None;
    let mut close = r.version != Some(1);
    let mut retry_after = None;
    for h in r.headers.iter() {
        let v = std::str::from_utf8(h.value).unwrap_or("").trim();
        if h.name.eq_ignore_ascii_case("retry-after") {
            retry_after = v.parse().ok();
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = v
                .rsplit(',')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("chunked"));
        } else if h.name.eq_ignore_ascii_case("content-length") {
            let n: u64 = v
                .parse()
                .map_err(|_| format!("Content-Length {v:?} is not a number"))?;
            if length.is_some_and(|l| l != n) {
                return Err("two different Content-Length headers".into());
            }
            length = Some(n);
        } else if h.name.eq_ignore_ascii_case("connection") {
            for t in v.split(',') {
                if t.trim().eq_ignore_ascii_case("close") {
                    close = true;
                } else if t.trim().eq_ignore_ascii_case("keep-alive") && r.version == Some(0) {
                    close = false;
                }
            }
        }
    }
    let framing = if head_method || (100..200).contains(&status) || status == 204 || status == 304 {
        Framing::Empty
    } else if chunked {
        Framing::Chunked
    } else if let Some(n) = length {
        Framing::Length(n)
    } else {
        Framing::UntilClose
    };
    Ok(Some(Head {
        status,
        framing,
        persistent: !close && framing != Framing::UntilClose,
        retry_after,
        len,
    }))
}

/// Reads the body of `head` (when needed) from what follows it in `buf`
/// and from `c`.
async fn body(
    mut c: Async<TcpStream>,
    mut buf: Vec<u8>,
    head: Head,
    want_body: bool,
    keep_alive: bool,
) -> Result<Response, Failure> {
    buf.drain(..head.len);
    let keep = keep_alive && head.persistent;
    let cap = MAX_BODY;
    let mut body = Vec::new();
    // Without a body check and without reuse the rest is not read.
    let complete = if head.framing == Framing::Empty || !(want_body || keep) {
        head.framing == Framing::Empty && buf.is_empty()
    } else {
        let mut decoder = Decoder::new(head.framing);
        let mut chunk = [0u8; 4096];
        loop {
            let done = decoder
                .feed(&mut buf, &mut body, cap)
                .map_err(Failure::Protocol)?;
            if done || body.len() >= cap {
                break done && buf.is_empty();
            }
            match c.read(&mut chunk).await {
                Ok(0) if head.framing == Framing::UntilClose => break false,
                Ok(0) => {
                    let e = std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
                    return Err(Failure::Io(e));
                }
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) => return Err(Failure::Io(e)),
            }
        }
    };
    if !want_body {
        body = Vec::new();
    }
    Ok(Response {
        status: head.status,
        body,
        retry_after: head.retry_after,
        reusable: (keep && complete).then_some(c),
    })
}

/// The body decoder: Content-Length, chunked (RFC 9112 §7.1) or until close.
struct Decoder {
    state: State,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Bytes of the body (or of the current chunk) still to come.
    Data(u64, bool),
    /// Waiting for a chunk-size line.
    Size,
    /// The CRLF after a chunk's data.
    DataEnd,
    /// Trailer lines up to the empty line.
    Trailer,
    UntilClose,
    Done,
}

impl Decoder {
    fn new(f: Framing) -> Decoder {
        let state = match f {
            Framing::Empty => State::Done,
            Framing::Length(n) => State::Data(n, false),
            Framing::Chunked => State::Size,
            Framing::UntilClose => State::UntilClose,
        };
        Decoder { state }
    }

    /// Consumes what it can of `input`, appending body bytes to `out` up to
    /// `cap` in all; true once the body is complete.
    fn feed(&mut self, input: &mut Vec<u8>, out: &mut Vec<u8>, cap: usize) -> Result<bool, String> {
        let mut pos = 0;
        let r = loop {
            let rest = &input[pos..];
            match self.state {
                State::Done => break Ok(true),
                State::UntilClose => {
                    keep(out, rest, cap);
                    pos = input.len();
                    break Ok(false);
                }
                State::Data(0, chunked) => {
                    self.state = if chunked { State::DataEnd } else { State::Done };
                }
                State::Data(n, chunked) => {
                    if rest.is_empty() {
                        break Ok(false);
                    }
                    let take = usize::try_from(n).unwrap_or(usize::MAX).min(rest.len());
                    keep(out, &rest[..take], cap);
                    pos += take;
                    self.state = State::Data(n - take as u64, chunked);
                }
                State::DataEnd => {
                    if rest.len() < 2 {
                        break Ok(false);
                    }
                    if &rest[..2] != b"\r\n" {
                        break Err("chunk data not followed by CRLF".to_string());
                    }
                    pos += 2;
                    self.state = State::Size;
                }
                State::Size | State::Trailer => {
                    let Some(end) = rest.windows(2).position(|w| w == b"\r\n") else {
                        if rest.len() > MAX_LINE {
                            break Err(format!("chunk line longer than {MAX_LINE} bytes"));
                        }
                        break Ok(false);
                    };
                    let line = &rest[..end];
                    pos += end + 2;
                    if self.state == State::Trailer {
                        if line.is_empty() {
                            self.state = State::Done;
                        }
                        continue;
                    }
                    let hex = line.split(|b| *b == b';').next().unwrap_or(b"");
                    let hex = std::str::from_utf8(hex).unwrap_or("").trim();
                    let size =
                        u64::from_str_radix(hex, 16).map_err(|_| format!("bad chunk size {hex:?}"));
                    match size {
                        Ok(0) => self.state = State::Trailer,
                        Ok(n) => self.state = State::Data(n, true),
                        Err(e) => break Err(e),
                    }
                }
            }
        };
        input.drain(..pos);
        r
    }
}

/// Appends as much of `b` to `out` as `cap` allows.
fn keep(out: &mut Vec<u8>, b: &[u8], cap: usize) {
    let room = cap.saturating_sub(out.len()).min(b.len());
    out.extend_from_slice(&b[..room]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(framing: Framing, parts: &[&[u8]]) -> (Result<bool, String>, Vec<u8>, Vec<u8>) {
        let mut d = Decoder::new(framing);
        let (mut input, mut out) = (Vec::new(), Vec::new());
        let mut r = Ok(false);
        for p in parts {
            input.extend_from_slice(p);
            if r == Ok(false) {
                r = d.feed(&mut input, &mut out, 10);
            }
        }
        (r, out, input)
    }

    #[test]
    fn chunked_in_any_split() {
        let whole: &[u8] = b"3;x=1\r\nabc\r\n4\r\ndefg\r\n0\r\nT: 1\r\n\r\nNEXT";
        for cut in 0..whole.len() {
            let (r, out, rest) = decode(Framing::Chunked, &[&whole[..cut], &whole[cut..]]);
            assert_eq!(r, Ok(true), "cut {cut}");
            assert_eq!(out, b"abcdefg", "cut {cut}");
            assert_eq!(rest, b"NEXT", "cut {cut}");
        }
    }

    #[test]
    fn bad_chunks_and_caps() {
        assert!(decode(Framing::Chunked, &[b"zz\r\n"]).0.is_err());
        assert!(decode(Framing::Chunked, &[b"1\r\nab\r\n"]).0.is_err());
        assert!(decode(Framing::Chunked, &[&[b'1'; 5000]]).0.is_err());
        // The body is kept up to the cap (10 here), the rest consumed.
        let (r, out, _) = decode(Framing::Length(12), &[b"0123456789ab"]);
        assert_eq!((r, out), (Ok(true), b"0123456789".to_vec()));
        let (r, out, _) = decode(Framing::UntilClose, &[b"abc", b"def"]);
        assert_eq!((r, out), (Ok(false), b"abcdef".to_vec()));
    }

    #[test]
    fn heads() {
        let h = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", false)
            .unwrap()
            .unwrap();
        assert_eq!(
            (h.status, h.framing, h.persistent),
            (200, Framing::Length(5), true)
        );
        let h = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", true)
            .unwrap()
            .unwrap();
        assert_eq!(h.framing, Framing::Empty);
        let h = parse_head(b"HTTP/1.0 204 No\r\n\r\n", false)
            .unwrap()
            .unwrap();
        assert_eq!((h.framing, h.persistent), (Framing::Empty, false));
        let h = parse_head(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n",
            false,
        )
        .unwrap()
        .unwrap();
        assert_eq!((h.framing, h.persistent), (Framing::Chunked, false));
        let h = parse_head(b"HTTP/1.1 200 OK\r\n\r\n", false)
            .unwrap()
            .unwrap();
        assert_eq!((h.framing, h.persistent), (Framing::UntilClose, false));
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Le", false)
            .unwrap()
            .is_none());
        assert!(parse_head(b"SSH-2.0-OpenSSH\r\n", false).is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", false).is_err());
    }
}
