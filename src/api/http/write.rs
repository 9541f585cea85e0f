//! Writing an answer: whole with its Content-Length, or a piece at a
//! time with chunked coding, each write under the write deadline.

use super::{deadline, Limits, Pieces, Response};
use smol::io::AsyncWriteExt;
use smol::net::TcpStream;

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
pub(super) async fn write_response(
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
pub(super) async fn write_pieces(
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
