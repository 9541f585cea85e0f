//! HPACK (RFC 7541) for the gRPC calls' HTTP/2 client: a complete decoder
//! (static and dynamic tables, Huffman) and the one encoder form the client
//! needs, "Literal Header Field without Indexing — New Name" (§6.2.2), which
//! never touches the peer's dynamic table.

use std::collections::VecDeque;

/// A decoded header field.
pub type Field = (Vec<u8>, Vec<u8>);

/// RFC 7541 Appendix A.
const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// RFC 7541 Appendix B: (code, bit length) of symbols 0..=256 (256 is EOS).
#[rustfmt::skip]
const CODES: [(u32, u8); 257] = [
    (0x1ff8, 13), (0x7fffd8, 23), (0xfffffe2, 28), (0xfffffe3, 28),
    (0xfffffe4, 28), (0xfffffe5, 28), (0xfffffe6, 28), (0xfffffe7, 28),
    (0xfffffe8, 28), (0xffffea, 24), (0x3ffffffc, 30), (0xfffffe9, 28),
    (0xfffffea, 28), (0x3ffffffd, 30), (0xfffffeb, 28), (0xfffffec, 28),
    (0xfffffed, 28), (0xfffffee, 28), (0xfffffef, 28), (0xffffff0, 28),
    (0xffffff1, 28), (0xffffff2, 28), (0x3ffffffe, 30), (0xffffff3, 28),
    (0xffffff4, 28), (0xffffff5, 28), (0xffffff6, 28), (0xffffff7, 28),
    (0xffffff8, 28), (0xffffff9, 28), (0xffffffa, 28), (0xffffffb, 28),
    (0x14, 6), (0x3f8, 10), (0x3f9, 10), (0xffa, 12),
    (0x1ff9, 13), (0x15, 6), (0xf8, 8), (0x7fa, 11),
    (0x3fa, 10), (0x3fb, 10), (0xf9, 8), (0x7fb, 11),
    (0xfa, 8), (0x16, 6), (0x17, 6), (0x18, 6),
    (0x0, 5), (0x1, 5), (0x2, 5), (0x19, 6),
    (0x1a, 6), (0x1b, 6), (0x1c, 6), (0x1d, 6),
    (0x1e, 6), (0x1f, 6), (0x5c, 7), (0xfb, 8),
    (0x7ffc, 15), (0x20, 6), (0xffb, 12), (0x3fc, 10),
    (0x1ffa, 13), (0x21, 6), (0x5d, 7), (0x5e, 7),
    (0x5f, 7), (0x60, 7), (0x61, 7), (0x62, 7),
    (0x63, 7), (0x64, 7), (0x65, 7), (0x66, 7),
    (0x67, 7), (0x68, 7), (0x69, 7), (0x6a, 7),
    (0x6b, 7), (0x6c, 7), (0x6d, 7), (0x6e, 7),
    (0x6f, 7), (0x70, 7), (0x71, 7), (0x72, 7),
    (0xfc, 8), (0x73, 7), (0xfd, 8), (0x1ffb, 13),
    (0x7fff0, 19), (0x1ffc, 13), (0x3ffc, 14), (0x22, 6),
    (0x7ffd, 15), (0x3, 5), (0x23, 6), (0x4, 5),
    (0x24, 6), (0x5, 5), (0x25, 6), (0x26, 6),
    (0x27, 6), (0x6, 5), (0x74, 7), (0x75, 7),
    (0x28, 6), (0x29, 6), (0x2a, 6), (0x7, 5),
    (0x2b, 6), (0x76, 7), (0x2c, 6), (0x8, 5),
    (0x9, 5), (0x2d, 6), (0x77, 7), (0x78, 7),
    (0x79, 7), (0x7a, 7), (0x7b, 7), (0x7ffe, 15),
    (0x7fc, 11), (0x3ffd, 14), (0x1ffd, 13), (0xffffffc, 28),
    (0xfffe6, 20), (0x3fffd2, 22), (0xfffe7, 20), (0xfffe8, 20),
    (0x3fffd3, 22), (0x3fffd4, 22), (0x3fffd5, 22), (0x7fffd9, 23),
    (0x3fffd6, 22), (0x7fffda, 23), (0x7fffdb, 23), (0x7fffdc, 23),
    (0x7fffdd, 23), (0x7fffde, 23), (0xffffeb, 24), (0x7fffdf, 23),
    (0xffffec, 24), (0xffffed, 24), (0x3fffd7, 22), (0x7fffe0, 23),
    (0xffffee, 24), (0x7fffe1, 23), (0x7fffe2, 23), (0x7fffe3, 23),
    (0x7fffe4, 23), (0x1fffdc, 21), (0x3fffd8, 22), (0x7fffe5, 23),
    (0x3fffd9, 22), (0x7fffe6, 23), (0x7fffe7, 23), (0xffffef, 24),
    (0x3fffda, 22), (0x1fffdd, 21), (0xfffe9, 20), (0x3fffdb, 22),
    (0x3fffdc, 22), (0x7fffe8, 23), (0x7fffe9, 23), (0x1fffde, 21),
    (0x7fffea, 23), (0x3fffdd, 22), (0x3fffde, 22), (0xfffff0, 24),
    (0x1fffdf, 21), (0x3fffdf, 22), (0x7fffeb, 23), (0x7fffec, 23),
    (0x1fffe0, 21), (0x1fffe1, 21), (0x3fffe0, 22), (0x1fffe2, 21),
    (0x7fffed, 23), (0x3fffe1, 22), (0x7fffee, 23), (0x7fffef, 23),
    (0xfffea, 20), (0x3fffe2, 22), (0x3fffe3, 22), (0x3fffe4, 22),
    (0x7ffff0, 23), (0x3fffe5, 22), (0x3fffe6, 22), (0x7ffff1, 23),
    (0x3ffffe0, 26), (0x3ffffe1, 26), (0xfffeb, 20), (0x7fff1, 19),
    (0x3fffe7, 22), (0x7ffff2, 23), (0x3fffe8, 22), (0x1ffffec, 25),
    (0x3ffffe2, 26), (0x3ffffe3, 26), (0x3ffffe4, 26), (0x7ffffde, 27),
    (0x7ffffdf, 27), (0x3ffffe5, 26), (0xfffff1, 24), (0x1ffffed, 25),
    (0x7fff2, 19), (0x1fffe3, 21), (0x3ffffe6, 26), (0x7ffffe0, 27),
    (0x7ffffe1, 27), (0x3ffffe7, 26), (0x7ffffe2, 27), (0xfffff2, 24),
    (0x1fffe4, 21), (0x1fffe5, 21), (0x3ffffe8, 26), (0x3ffffe9, 26),
    (0xffffffd, 28), (0x7ffffe3, 27), (0x7ffffe4, 27), (0x7ffffe5, 27),
    (0xfffec, 20), (0xfffff3, 24), (0xfffed, 20), (0x1fffe6, 21),
    (0x3fffe9, 22), (0x1fffe7, 21), (0x1fffe8, 21), (0x7ffff3, 23),
    (0x3fffea, 22), (0x3fffeb, 22), (0x1ffffee, 25), (0x1ffffef, 25),
    (0xfffff4, 24), (0xfffff5, 24), (0x3ffffea, 26), (0x7ffff4, 23),
    (0x3ffffeb, 26), (0x7ffffe6, 27), (0x3ffffec, 26), (0x3ffffed, 26),
    (0x7ffffe7, 27), (0x7ffffe8, 27), (0x7ffffe9, 27), (0x7ffffea, 27),
    (0x7ffffeb, 27), (0xffffffe, 28), (0x7ffffec, 27), (0x7ffffed, 27),
    (0x7ffffee, 27), (0x7ffffef, 27), (0x7fffff0, 27), (0x3ffffee, 26),
    (0x3fffffff, 30),
];

/// Why a header block could not be decoded (an HTTP/2 COMPRESSION_ERROR).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HpackError(pub &'static str);

impl std::fmt::Display for HpackError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "hpack: {}", self.0)
    }
}

/// RFC 7541 §5.1: an integer with an N-bit prefix. Returns the value and the
/// bytes consumed.
pub(crate) fn decode_int(b: &[u8], prefix: u8) -> Result<(usize, usize), HpackError> {
    let first = *b.first().ok_or(HpackError("truncated integer"))?;
    let max = (1usize << prefix) - 1;
    let mut v = usize::from(first) & max;
    if v < max {
        return Ok((v, 1));
    }
    let mut shift = 0u32;
    for (i, byte) in b.iter().enumerate().skip(1) {
        // Four continuation bytes (28 bits) are far beyond any sane header.
        if shift > 21 {
            return Err(HpackError("integer too large"));
        }
        v = v
            .checked_add(usize::from(byte & 0x7f) << shift)
            .ok_or(HpackError("integer too large"))?;
        shift += 7;
        if byte & 0x80 == 0 {
            return Ok((v, i + 1));
        }
    }
    Err(HpackError("truncated integer"))
}

/// RFC 7541 §5.1, encoding; `flags` holds the bits above the prefix.
pub(crate) fn encode_int(out: &mut Vec<u8>, prefix: u8, flags: u8, v: usize) {
    let max = (1usize << prefix) - 1;
    if v < max {
        out.push(flags | v as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = v - max;
    while rest >= 128 {
        out.push((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    out.push(rest as u8);
}

/// RFC 7541 §5.2: Huffman-decodes a string literal.
pub(crate) fn huffman_decode(b: &[u8]) -> Result<Vec<u8>, HpackError> {
    let mut out = Vec::with_capacity(b.len() * 8 / 5);
    let mut code: u32 = 0;
    let mut len: u8 = 0;
    for byte in b {
        for i in (0..8).rev() {
            code = (code << 1) | u32::from((byte >> i) & 1);
            len += 1;
            if len < 5 {
                continue;
            }
            if let Some(sym) = CODES.iter().position(|&(c, l)| l == len && c == code) {
                // "A Huffman-encoded string literal containing the EOS
                // symbol MUST be treated as a decoding error."
                if sym == 256 {
                    return Err(HpackError("EOS in Huffman string"));
                }
                out.push(sym as u8);
                code = 0;
                len = 0;
            } else if len >= 30 {
                return Err(HpackError("bad Huffman code"));
            }
        }
    }
    // "A padding strictly longer than 7 bits MUST be treated as a decoding
    // error. A padding not corresponding to the most significant bits of
    // the code for the EOS symbol MUST be treated as a decoding error."
    if len > 7 || code != (1u32 << len) - 1 {
        return Err(HpackError("bad Huffman padding"));
    }
    Ok(out)
}

/// RFC 7541 §5.2: a string literal, Huffman or raw.
fn decode_string(b: &[u8]) -> Result<(Vec<u8>, usize), HpackError> {
    let huffman = b.first().ok_or(HpackError("truncated string"))? & 0x80 != 0;
    let (n, used) = decode_int(b, 7)?;
    let end = used.checked_add(n).ok_or(HpackError("string too long"))?;
    let raw = b.get(used..end).ok_or(HpackError("truncated string"))?;
    let s = if huffman {
        huffman_decode(raw)?
    } else {
        raw.to_vec()
    };
    Ok((s, end))
}

/// The decoder state of one HTTP/2 connection.
#[derive(Debug)]
pub(crate) struct Decoder {
    dynamic: VecDeque<Field>,
    size: usize,
    max_size: usize,
    /// SETTINGS_HEADER_TABLE_SIZE we advertised (the default 4096).
    limit: usize,
}

/// RFC 7541 §4.1: an entry's size is its name and value lengths plus 32.
fn entry_size(f: &Field) -> usize {
    f.0.len().saturating_add(f.1.len()).saturating_add(32)
}

impl Decoder {
    pub fn new(limit: usize) -> Decoder {
        Decoder {
            dynamic: VecDeque::new(),
            size: 0,
            max_size: limit,
            limit,
        }
    }

    /// The dynamic table, newest first (for tests).
    #[cfg(test)]
    fn table(&self) -> Vec<Field> {
        self.dynamic.iter().cloned().collect()
    }

    fn evict(&mut self) {
        while self.size > self.max_size {
            match self.dynamic.pop_back() {
                Some(f) => self.size = self.size.saturating_sub(entry_size(&f)),
                None => break,
            }
        }
    }

    /// RFC 7541 §4.4: adding evicts old entries; an entry larger than the
    /// table empties it and is not added.
    fn insert(&mut self, f: Field) {
        let s = entry_size(&f);
        self.size = self.size.saturating_add(s);
        self.dynamic.push_front(f);
        self.evict();
        if s > self.max_size {
            self.dynamic.clear();
            self.size = 0;
        }
    }

    /// RFC 7541 §2.3.3: index 1..=61 is static, then the dynamic table.
    fn get(&self, i: usize) -> Result<Field, HpackError> {
        if i == 0 {
            return Err(HpackError("index 0"));
        }
        if let Some((n, v)) = STATIC.get(i - 1) {
            return Ok((n.as_bytes().to_vec(), v.as_bytes().to_vec()));
        }
        self.dynamic
            .get(i - 1 - STATIC.len())
            .cloned()
            .ok_or(HpackError("index out of range"))
    }

    /// Decodes one complete header block.
    pub fn decode(&mut self, mut b: &[u8]) -> Result<Vec<Field>, HpackError> {
        let mut out = Vec::new();
        let mut fields_seen = false;
        while let Some(&first) = b.first() {
            if first & 0x80 != 0 {
                // §6.1 Indexed Header Field.
                let (i, n) = decode_int(b, 7)?;
                out.push(self.get(i)?);
                b = &b[n..];
                fields_seen = true;
            } else if first & 0xe0 == 0x20 {
                // §6.3 Dynamic Table Size Update: "MUST occur at the
                // beginning of the first header block following the change".
                if fields_seen {
                    return Err(HpackError("table size update after a field"));
                }
                let (s, n) = decode_int(b, 5)?;
                if s > self.limit {
                    return Err(HpackError("table size above the limit"));
                }
                self.max_size = s;
                self.evict();
                b = &b[n..];
            } else {
                // §6.2.1 with incremental indexing (6-bit prefix), §6.2.2
                // without indexing and §6.2.3 never indexed (4-bit prefix).
                let indexing = first & 0xc0 == 0x40;
                let (i, mut used) = decode_int(b, if indexing { 6 } else { 4 })?;
                let name = if i == 0 {
                    let (s, n) = decode_string(&b[used..])?;
                    used += n;
                    s
                } else {
                    self.get(i)?.0
                };
                let (value, n) = decode_string(&b[used..])?;
                used += n;
                let f = (name, value);
                if indexing {
                    self.insert(f.clone());
                }
                out.push(f);
                b = &b[used..];
                fields_seen = true;
            }
        }
        Ok(out)
    }
}

/// RFC 7541 §6.2.2 "Literal Header Field without Indexing — New Name",
/// with raw (not Huffman) strings.
pub(crate) fn encode_literal(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.push(0);
    encode_int(out, 7, 0, name.len());
    out.extend_from_slice(name);
    encode_int(out, 7, 0, value.len());
    out.extend_from_slice(value);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let d: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
        d.chunks(2)
            .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
            .collect()
    }

    fn fields(v: &[Field]) -> Vec<(String, String)> {
        v.iter()
            .map(|(n, v)| {
                (
                    String::from_utf8(n.clone()).unwrap(),
                    String::from_utf8(v.clone()).unwrap(),
                )
            })
            .collect()
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn c1_integers() {
        // C.1.1: 10 with a 5-bit prefix; C.1.2: 1337; C.1.3: 42 at an octet boundary.
        let mut o = Vec::new();
        encode_int(&mut o, 5, 0, 10);
        assert_eq!(o, [0x0a]);
        o.clear();
        encode_int(&mut o, 5, 0, 1337);
        assert_eq!(o, [0x1f, 0x9a, 0x0a]);
        assert_eq!(decode_int(&o, 5).unwrap(), (1337, 3));
        o.clear();
        encode_int(&mut o, 8, 0, 42);
        assert_eq!(o, [0x2a]);
        assert!(decode_int(&[0x1f, 0x9a], 5).is_err());
        assert!(decode_int(&[0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], 5).is_err());
    }

    #[test]
    fn c2_1_literal_with_indexing() {
        let mut d = Decoder::new(4096);
        let b = hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572");
        assert_eq!(
            fields(&d.decode(&b).unwrap()),
            pairs(&[("custom-key", "custom-header")])
        );
        assert_eq!(d.size, 55);
    }

    #[test]
    fn c3_1_request_without_huffman() {
        let mut d = Decoder::new(4096);
        let b = hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d");
        assert_eq!(
            fields(&d.decode(&b).unwrap()),
            pairs(&[
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":authority", "www.example.com")
            ])
        );
        assert_eq!(d.size, 57);
    }

    #[test]
    fn c4_requests_with_huffman() {
        let mut d = Decoder::new(4096);
        let first = hex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff");
        assert_eq!(
            fields(&d.decode(&first).unwrap()),
            pairs(&[
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":authority", "www.example.com")
            ])
        );
        let second = hex("8286 84be 5886 a8eb 1064 9cbf");
        assert_eq!(
            fields(&d.decode(&second).unwrap()),
            pairs(&[
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":authority", "www.example.com"),
                ("cache-control", "no-cache")
            ])
        );
        assert_eq!(d.size, 110);
    }

    #[test]
    fn c6_responses_with_huffman_and_eviction() {
        // Appendix C.5/C.6 use a 256-octet dynamic table.
        let mut d = Decoder::new(256);
        let first = hex(
            "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
             2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
        );
        let resp = |status: &str| {
            pairs(&[
                (":status", status),
                ("cache-control", "private"),
                ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
                ("location", "https://www.example.com"),
            ])
        };
        assert_eq!(fields(&d.decode(&first).unwrap()), resp("302"));
        assert_eq!(d.size, 222);
        // (":status", "302") is evicted to make room for (":status", "307").
        let second = hex("4883 640e ffc1 c0bf");
        assert_eq!(fields(&d.decode(&second).unwrap()), resp("307"));
        assert_eq!(d.size, 222);
        assert_eq!(
            fields(&d.table()),
            pairs(&[
                (":status", "307"),
                ("location", "https://www.example.com"),
                ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
                ("cache-control", "private"),
            ])
        );
        // C.5.2, the same without Huffman, against the same table state.
        let mut d = Decoder::new(256);
        d.decode(&first).unwrap();
        assert_eq!(
            fields(&d.decode(&hex("4803 3330 37c1 c0bf")).unwrap()),
            resp("307")
        );
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        let mut d = Decoder::new(4096);
        for b in [
            &[0x80][..],               // index 0
            &[0xff, 0x00],             // index 128: out of range
            &[0x40, 0x85, 0xff],       // truncated string
            &[0x00, 0x81, 0x00, 0x00], // Huffman padding of zeros
            &[0x3f, 0xe2, 0x1f],       // table size 4097: above the limit
            &[0x82, 0x20],             // size update after a field
        ] {
            assert!(d.decode(b).is_err(), "{b:02x?}");
        }
    }

    #[test]
    fn literal_round_trip() {
        let mut o = Vec::new();
        encode_literal(&mut o, b"grpc-timeout", b"100m");
        let long = vec![b'x'; 300];
        encode_literal(&mut o, b"x-long", &long);
        let mut d = Decoder::new(4096);
        let f = d.decode(&o).unwrap();
        assert_eq!(f[0], (b"grpc-timeout".to_vec(), b"100m".to_vec()));
        assert_eq!(f[1].1, long);
        assert!(d.table().is_empty());
    }

    proptest::proptest! {
        #[test]
        fn decoder_never_panics(b in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let _ = Decoder::new(4096).decode(&b);
            let _ = huffman_decode(&b);
        }
    }
}
