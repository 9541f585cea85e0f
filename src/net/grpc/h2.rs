//! A minimal HTTP/2 client (RFC 9113) for one request per connection, as
//! a unary gRPC call needs (the gRPC probe's and the OTLP exporter's):
//! connection preface, SETTINGS, one HEADERS + DATA stream, and reading
//! headers, data and trailers back. The body goes out as the peer's flow
//! control windows allow (§6.9: a request larger than the initial 65,535
//! bytes waits for WINDOW_UPDATE), and what the peer sends is bounded in
//! frames and bytes. It runs on a blocking `Read + Write` stream (TCP with
//! prior knowledge, or rustls with ALPN h2) on the blocking pool, bounded
//! in time by the stream (the caller's deadline).

use super::hpack::{self, Decoder};
use std::io::{Read, Write};

/// RFC 9113 §3.4: the client connection preface.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

// RFC 9113 §6: frame types.
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PUSH_PROMISE: u8 = 0x5;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;
const CONTINUATION: u8 = 0x9;

// Frame flags.
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;

/// RFC 9113 §4.2: SETTINGS_MAX_FRAME_SIZE starts at 16384; we never raise
/// ours, and never send larger frames (a peer's setting can only be
/// larger, so it always allows ours).
const MAX_FRAME: usize = 16384;
/// §6.9.2: every flow-control window starts at 65,535 bytes.
const INITIAL_WINDOW: i64 = 65_535;
/// §6.9.1: a window may not exceed 2^31 - 1.
const MAX_WINDOW: i64 = (1 << 31) - 1;
/// DATA frames gathered into one write, at most.
const WRITE_CHUNK: usize = 64 * 1024;
/// Largest response body kept; a health reply is a few bytes.
const MAX_BODY: usize = 1 << 20;
/// Frames read before giving up, so a chatty peer cannot keep us forever;
/// a large body allows one more per KiB of it, for the peer's
/// WINDOW_UPDATEs.
const MAX_FRAMES: usize = 1000;

const STREAM: u32 = 1;

/// The response to the single request.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Response {
    pub headers: Vec<(String, String)>,
    pub trailers: Vec<(String, String)>,
    pub data: Vec<u8>,
}

impl Response {
    /// A header or trailer value (trailers first; gRPC puts status there
    /// unless the reply is "trailers-only").
    pub fn get(&self, name: &str) -> Option<&str> {
        self.trailers
            .iter()
            .chain(self.headers.iter())
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

fn frame(out: &mut Vec<u8>, ty: u8, flags: u8, stream: u32, payload: &[u8]) {
    // RFC 9113 §4.1: 24-bit length, type, flags, reserved bit + stream id.
    let len = payload.len() as u32;
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.push(ty);
    out.push(flags);
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    out.extend_from_slice(payload);
}

fn io_err(e: std::io::Error) -> String {
    crate::net::io_msg(&e)
}

fn read_frame<S: Read>(s: &mut S) -> Result<(u8, u8, u32, Vec<u8>), String> {
    let mut h = [0u8; 9];
    s.read_exact(&mut h).map_err(io_err)?;
    let len = usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
    // RFC 9113 §4.2: a frame larger than SETTINGS_MAX_FRAME_SIZE is a
    // FRAME_SIZE_ERROR.
    if len > MAX_FRAME {
        return Err(format!("frame of {len} bytes exceeds {MAX_FRAME}"));
    }
    let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
    let mut p = vec![0u8; len];
    s.read_exact(&mut p).map_err(io_err)?;
    Ok((h[3], h[4], stream, p))
}

/// Strips padding and priority from a HEADERS payload (RFC 9113 §6.2).
fn header_fragment(flags: u8, p: &[u8]) -> Result<&[u8], String> {
    let mut start = 0usize;
    let mut end = p.len();
    if flags & PADDED != 0 {
        let pad = usize::from(*p.first().ok_or("empty padded HEADERS")?);
        start = 1;
        end = end.checked_sub(pad).ok_or("padding exceeds HEADERS")?;
    }
    if flags & PRIORITY != 0 {
        start += 5;
    }
    p.get(start..end)
        .ok_or_else(|| "malformed HEADERS".to_string())
}

/// The 32-bit error code at `at` in a RST_STREAM (RFC 9113 §6.4, at 0) or
/// GOAWAY (§6.8, at 4) payload; 0 (NO_ERROR) when the payload is too short.
fn error_code(p: &[u8], at: usize) -> u32 {
    p.get(at..at + 4)
        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
        .unwrap_or(0)
}

fn strings(fields: Vec<hpack::Field>) -> Vec<(String, String)> {
    fields
        .into_iter()
        .map(|(n, v)| {
            (
                String::from_utf8_lossy(&n).into_owned(),
                String::from_utf8_lossy(&v).into_owned(),
            )
        })
        .collect()
}

/// The request body still to send, and the peer's windows for it.
struct Body<'a> {
    parts: &'a [&'a [u8]],
    /// The part being sent and the bytes of it already sent.
    part: usize,
    at: usize,
    /// Bytes not sent yet.
    left: usize,
    /// The connection's and the stream's send windows (§6.9), and the
    /// peer's SETTINGS_INITIAL_WINDOW_SIZE the stream's started from.
    conn: i64,
    stream: i64,
    initial: i64,
}

impl Body<'_> {
    /// Sends DATA frames while the body lasts and both windows allow;
    /// the last one ends the stream.
    fn more<S: Write>(&mut self, s: &mut S) -> Result<(), String> {
        let mut out = Vec::new();
        while self.left > 0 {
            let Some(part) = self.parts.get(self.part) else {
                break;
            };
            let rest = part.get(self.at..).unwrap_or_default();
            if rest.is_empty() {
                self.part += 1;
                self.at = 0;
                continue;
            }
            let window = self.conn.min(self.stream);
            let Ok(window) = usize::try_from(window) else {
                break;
            };
            if window == 0 {
                break;
            }
            let n = rest.len().min(MAX_FRAME).min(window);
            self.at += n;
            self.left -= n;
            self.conn -= n as i64;
            self.stream -= n as i64;
            let f = if self.left == 0 { END_STREAM } else { 0 };
            frame(&mut out, DATA, f, STREAM, &rest[..n]);
            if out.len() >= WRITE_CHUNK {
                s.write_all(&out).map_err(io_err)?;
                out.clear();
            }
        }
        if !out.is_empty() {
            s.write_all(&out).map_err(io_err)?;
            s.flush().map_err(io_err)?;
        }
        Ok(())
    }

    /// The peer's SETTINGS (§6.5.2): a new SETTINGS_INITIAL_WINDOW_SIZE
    /// moves the stream's window by the difference (§6.9.2).
    fn settings(&mut self, p: &[u8]) -> Result<(), String> {
        if p.len() % 6 != 0 {
            return Err("malformed SETTINGS".into());
        }
        for e in p.chunks_exact(6) {
            let id = u16::from_be_bytes([e[0], e[1]]);
            let v = i64::from(u32::from_be_bytes([e[2], e[3], e[4], e[5]]));
            if id == 0x4 {
                if v > MAX_WINDOW {
                    return Err("SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1".into());
                }
                self.stream += v - self.initial;
                self.initial = v;
                if self.stream > MAX_WINDOW {
                    return Err("stream window above 2^31-1".into());
                }
            }
        }
        Ok(())
    }

    /// A WINDOW_UPDATE (§6.9) for the connection or our stream.
    fn window_update(&mut self, stream: u32, p: &[u8]) -> Result<(), String> {
        let inc = match p {
            [a, b, c, d] => i64::from(u32::from_be_bytes([*a, *b, *c, *d]) & 0x7fff_ffff),
            _ => return Err("malformed WINDOW_UPDATE".into()),
        };
        let w = match stream {
            0 => &mut self.conn,
            STREAM => &mut self.stream,
            _ => return Ok(()),
        };
        *w += inc;
        if *w > MAX_WINDOW {
            return Err("flow-control window above 2^31-1".into());
        }
        Ok(())
    }
}

/// Sends one request (`headers` include the pseudo-headers) with the body
/// `body` (its parts one after the other, sent without copying them
/// together) and reads the whole response.
pub fn request<S: Read + Write>(
    s: &mut S,
    headers: &[(String, String)],
    body: &[&[u8]],
) -> Result<Response, String> {
    let total: usize = body.iter().map(|b| b.len()).sum();
    send_head(s, headers, total == 0)?;
    let mut body = Body {
        parts: body,
        part: 0,
        at: 0,
        left: total,
        conn: INITIAL_WINDOW,
        stream: INITIAL_WINDOW,
        initial: INITIAL_WINDOW,
    };
    body.more(s)?;

    let mut dec = Decoder::new(4096);
    let mut resp = Response::default();
    let mut got_headers = false;
    let mut pending: Option<(Vec<u8>, bool)> = None;
    for _ in 0..MAX_FRAMES.saturating_add(total / 1024) {
        let (ty, flags, stream, p) = read_frame(s)?;
        // A header block (its fragments so far, and whether its HEADERS
        // ended the stream): from a HEADERS frame, or the one pending
        // with this CONTINUATION added.
        let (frag, end_stream) = match pending.take() {
            Some((mut frag, end_stream)) => {
                // §6.10: CONTINUATION must follow until END_HEADERS.
                if ty != CONTINUATION || stream != STREAM {
                    return Err("expected CONTINUATION".into());
                }
                frag.extend_from_slice(&p);
                if frag.len() > 4 * MAX_FRAME {
                    return Err("header block too large".into());
                }
                (frag, end_stream)
            }
            None => match ty {
                HEADERS if stream == STREAM => (
                    header_fragment(flags, &p)?.to_vec(),
                    flags & END_STREAM != 0,
                ),
                SETTINGS if flags & ACK == 0 => {
                    body.settings(&p)?;
                    let mut ack = Vec::new();
                    frame(&mut ack, SETTINGS, ACK, 0, &[]);
                    s.write_all(&ack).map_err(io_err)?;
                    body.more(s)?;
                    continue;
                }
                WINDOW_UPDATE => {
                    body.window_update(stream, &p)?;
                    body.more(s)?;
                    continue;
                }
                PING if flags & ACK == 0 => {
                    let mut pong = Vec::new();
                    frame(&mut pong, PING, ACK, 0, &p);
                    s.write_all(&pong).map_err(io_err)?;
                    continue;
                }
                GOAWAY => {
                    let code = error_code(&p, 4);
                    return Err(format!("server sent GOAWAY (error code {code})"));
                }
                RST_STREAM if stream == STREAM => {
                    let code = error_code(&p, 0);
                    return Err(format!("stream reset (error code {code})"));
                }
                PUSH_PROMISE => return Err("unexpected PUSH_PROMISE".into()),
                DATA if stream == STREAM => {
                    let data = if flags & PADDED != 0 {
                        let pad = usize::from(*p.first().ok_or("empty padded DATA")?);
                        p.get(1..p.len().saturating_sub(pad))
                            .ok_or("padding exceeds DATA")?
                    } else {
                        &p[..]
                    };
                    if resp.data.len() + data.len() > MAX_BODY {
                        return Err("response body too large".into());
                    }
                    resp.data.extend_from_slice(data);
                    if flags & END_STREAM != 0 {
                        return Ok(resp);
                    }
                    // What we took goes back to the peer's windows, so a
                    // reply larger than 65,535 bytes (up to MAX_BODY) is
                    // not stuck.
                    if !p.is_empty() {
                        let inc = (p.len() as u32).to_be_bytes();
                        let mut w = Vec::new();
                        frame(&mut w, WINDOW_UPDATE, 0, 0, &inc);
                        frame(&mut w, WINDOW_UPDATE, 0, STREAM, &inc);
                        s.write_all(&w).map_err(io_err)?;
                    }
                    continue;
                }
                // PRIORITY, acks, other streams, unknown types (§5.5: "MUST
                // ignore and discard" unknown frame types).
                _ => continue,
            },
        };
        // The block is whole with END_HEADERS, on its HEADERS or on its
        // last CONTINUATION (§6.10); until then it waits for the next.
        if flags & END_HEADERS == 0 {
            pending = Some((frag, end_stream));
            continue;
        }
        take_block(&mut dec, &frag, &mut resp, &mut got_headers)?;
        if end_stream {
            return Ok(resp);
        }
    }
    Err("too many frames".into())
}

/// The connection preface, our SETTINGS and the request's HEADERS (which
/// end the stream when there is no body).
fn send_head<S: Write>(
    s: &mut S,
    headers: &[(String, String)],
    no_body: bool,
) -> Result<(), String> {
    let mut out = PREFACE.to_vec();
    // SETTINGS_ENABLE_PUSH (0x2) = 0: we never accept pushes.
    frame(&mut out, SETTINGS, 0, 0, &[0, 2, 0, 0, 0, 0]);
    let mut block = Vec::new();
    for (n, v) in headers {
        hpack::encode_literal(&mut block, n.as_bytes(), v.as_bytes());
    }
    if block.len() > MAX_FRAME {
        return Err("request headers too large".into());
    }
    let end = if no_body { END_STREAM } else { 0 };
    frame(&mut out, HEADERS, END_HEADERS | end, STREAM, &block);
    s.write_all(&out).map_err(io_err)?;
    s.flush().map_err(io_err)
}

/// Decodes a header block into headers (first) or trailers (second).
fn take_block(
    dec: &mut Decoder,
    frag: &[u8],
    resp: &mut Response,
    got_headers: &mut bool,
) -> Result<(), String> {
    let fields = strings(dec.decode(frag).map_err(|e| e.to_string())?);
    if *got_headers {
        resp.trailers = fields;
    } else {
        resp.headers = fields;
        *got_headers = true;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// A fake stream: reads from `input`, records writes.
    struct Fake {
        input: Cursor<Vec<u8>>,
        written: Vec<u8>,
    }
    impl Read for Fake {
        fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
            self.input.read(b)
        }
    }
    impl Write for Fake {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.written.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn error_codes_of_rst_stream_and_goaway() {
        // RST_STREAM: the code is the whole payload; GOAWAY: after the last
        // stream id. A short payload reads as NO_ERROR instead of panicking.
        assert_eq!(error_code(&[0, 0, 0, 8], 0), 8);
        assert_eq!(error_code(&[0, 0, 0, 3, 0, 0, 0, 2, 0xaa], 4), 2);
        assert_eq!(error_code(&[0, 0, 0, 3, 0, 0], 4), 0);
    }

    #[test]
    fn request_and_response_with_continuation_and_trailers() {
        let mut input = Vec::new();
        frame(&mut input, SETTINGS, 0, 0, &[]);
        frame(&mut input, PING, 0, 0, &[1, 2, 3, 4, 5, 6, 7, 8]);
        // :status 200 (static index 8) split over HEADERS + CONTINUATION.
        let mut block = vec![0x88];
        hpack::encode_literal(&mut block, b"content-type", b"application/grpc");
        let (a, b) = block.split_at(2);
        frame(&mut input, HEADERS, 0, 1, a);
        frame(&mut input, CONTINUATION, END_HEADERS, 1, b);
        frame(&mut input, DATA, PADDED, 1, &[2, 0xaa, 0xbb, 0, 0]);
        let mut t = Vec::new();
        hpack::encode_literal(&mut t, b"grpc-status", b"0");
        frame(&mut input, HEADERS, END_HEADERS | END_STREAM, 1, &t);
        let mut f = Fake {
            input: Cursor::new(input),
            written: Vec::new(),
        };
        let r = request(&mut f, &[(":method".into(), "POST".into())], &[b"h", b"i"]).unwrap();
        assert_eq!(r.get(":status"), Some("200"));
        assert_eq!(r.get("grpc-status"), Some("0"));
        assert_eq!(r.data, [0xaa, 0xbb]);
        assert!(f.written.starts_with(PREFACE));
        // The SETTINGS ack and the PING ack were sent.
        let w = &f.written;
        assert!(w.windows(5).any(|x| x == [0, 0, 0, SETTINGS, ACK]));
        assert!(w.windows(8).any(|x| x == [1, 2, 3, 4, 5, 6, 7, 8]));
    }

    /// A header block left open must go on with CONTINUATION on its
    /// stream (§6.10), and all its fragments together stay under the cap;
    /// one that ends with END_STREAM on its last CONTINUATION ends the
    /// response there.
    #[test]
    fn header_blocks_across_continuation() {
        let run = |input: Vec<u8>| {
            let mut f = Fake {
                input: Cursor::new(input),
                written: Vec::new(),
            };
            request(&mut f, &[], &[])
        };
        let mut i = Vec::new();
        frame(&mut i, HEADERS, 0, 1, &[0x88]);
        frame(&mut i, DATA, 0, 1, b"x");
        assert_eq!(run(i).err().as_deref(), Some("expected CONTINUATION"));
        let mut i = Vec::new();
        frame(&mut i, HEADERS, 0, 1, &[0x88]);
        frame(&mut i, CONTINUATION, 0, 3, &[]);
        assert_eq!(run(i).err().as_deref(), Some("expected CONTINUATION"));
        let mut i = Vec::new();
        frame(&mut i, HEADERS, 0, 1, &[0x88]);
        for _ in 0..5 {
            frame(&mut i, CONTINUATION, 0, 1, &[0; MAX_FRAME]);
        }
        assert_eq!(run(i).err().as_deref(), Some("header block too large"));
        let mut i = Vec::new();
        frame(&mut i, HEADERS, END_STREAM, 1, &[]);
        frame(&mut i, CONTINUATION, 0, 1, &[0x88]);
        frame(&mut i, CONTINUATION, END_HEADERS, 1, &[]);
        let r = run(i).expect("a response");
        assert_eq!(r.get(":status"), Some("200"));
    }

    #[test]
    fn errors_not_panics() {
        for input in [
            {
                let mut i = Vec::new();
                frame(&mut i, GOAWAY, 0, 0, &[0, 0, 0, 0, 0, 0, 0, 11]);
                i
            },
            {
                let mut i = Vec::new();
                frame(&mut i, RST_STREAM, 0, 1, &[0, 0, 0, 8]);
                i
            },
            vec![0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 1],
            vec![0, 0, 1, HEADERS, PADDED | END_HEADERS, 0, 0, 0, 1, 9],
            vec![],
        ] {
            let mut f = Fake {
                input: Cursor::new(input),
                written: Vec::new(),
            };
            assert!(request(&mut f, &[], &[]).is_err());
        }
    }

    /// The DATA frames written: (flags, payload length) each.
    fn data_frames(mut w: &[u8]) -> Vec<(u8, usize)> {
        w = &w[PREFACE.len()..];
        let mut out = Vec::new();
        while w.len() >= 9 {
            let len = usize::from(w[0]) << 16 | usize::from(w[1]) << 8 | usize::from(w[2]);
            if w[3] == DATA {
                out.push((w[4], len));
            }
            w = &w[9 + len..];
        }
        out
    }

    /// A body larger than the initial windows goes out as far as they
    /// allow, the rest as WINDOW_UPDATEs and a larger
    /// SETTINGS_INITIAL_WINDOW_SIZE open them; in frames of at most 16 KiB.
    #[test]
    fn a_large_body_waits_for_the_peers_windows() {
        let big = vec![7u8; 100_000];
        // No window opens: 65,535 bytes go, then the peer says nothing.
        let mut f = Fake {
            input: Cursor::new(Vec::new()),
            written: Vec::new(),
        };
        assert!(request(&mut f, &[], &[b"12345", &big]).is_err());
        let sent: usize = data_frames(&f.written).iter().map(|d| d.1).sum();
        assert_eq!(sent, 65_535);
        // The stream's window grows by SETTINGS (to 200,000: +134,465) and
        // the connection's by WINDOW_UPDATE; then the response.
        let mut input = Vec::new();
        frame(
            &mut input,
            SETTINGS,
            0,
            0,
            &[0, 4, 0, 3, 0x0d, 0x40, 0, 5, 0, 0, 0x40, 0],
        );
        frame(&mut input, WINDOW_UPDATE, 0, 0, &40_000u32.to_be_bytes());
        let mut t = vec![0x88];
        hpack::encode_literal(&mut t, b"grpc-status", b"0");
        frame(&mut input, HEADERS, END_HEADERS | END_STREAM, 1, &t);
        let mut f = Fake {
            input: Cursor::new(input),
            written: Vec::new(),
        };
        let r = request(&mut f, &[], &[b"12345", &big]).expect("a response");
        assert_eq!(r.get("grpc-status"), Some("0"));
        let frames = data_frames(&f.written);
        assert_eq!(frames.iter().map(|d| d.1).sum::<usize>(), 100_005);
        assert!(frames.iter().all(|d| d.1 <= MAX_FRAME));
        assert_eq!(frames.last().map(|d| d.0), Some(END_STREAM));
        assert!(frames[..frames.len() - 1].iter().all(|d| d.0 == 0));
        // A window pushed past 2^31-1 is an error, not an overflow.
        let mut input = Vec::new();
        frame(
            &mut input,
            WINDOW_UPDATE,
            0,
            0,
            &0x7fff_ffffu32.to_be_bytes(),
        );
        let mut f = Fake {
            input: Cursor::new(input),
            written: Vec::new(),
        };
        assert!(request(&mut f, &[], &[&big]).is_err());
    }
}
