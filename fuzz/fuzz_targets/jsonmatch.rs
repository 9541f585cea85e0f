//! The response_jq language: the parser never panics or overflows the stack
//! and its errors point inside the input; an accepted expression evaluates
//! against any JSON document without panicking, and when E is true,
//! `not (E)` (if still within the limits) is not.
//!
//! Input: the expression, a NUL byte, then the document. With a first byte
//! of 0x01, the rest up to the NUL is a fragment repeated N times (N from the
//! next two bytes, up to 65,535), so that expressions far beyond libFuzzer's
//! `-max_len` reach the length, operand and nesting limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pathosd::check::jsonmatch::{matches, parse};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let (head, doc) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b""[..]),
    };
    let src = match head {
        [1, hi, lo, frag @ ..] => {
            let Ok(frag) = std::str::from_utf8(frag) else {
                return;
            };
            frag.repeat(usize::from(u16::from_be_bytes([*hi, *lo])))
        }
        _ => match std::str::from_utf8(head) {
            Ok(s) => s.to_string(),
            Err(_) => return,
        },
    };
    let doc: Value = serde_json::from_slice(doc).unwrap_or(Value::Null);
    match parse(&src) {
        Ok(e) => {
            let r = matches(&e, &doc).is_ok();
            // Wrapping adds one level of "not" and one of "(".
            if let Ok(neg) = parse(&format!("not ({src})")) {
                let nr = matches(&neg, &doc).is_ok();
                // `not` of a non-boolean true value is false, so only the
                // direction true → false is certain.
                if r {
                    assert!(!nr, "not ({src}) is true as well");
                }
            }
        }
        Err(msg) => {
            assert!(msg.starts_with("response_jq: "), "{msg}");
            if let Some((_, off)) = msg.rsplit_once("at offset ") {
                let off: usize = off.parse().expect("offset is a number");
                assert!(off <= src.len(), "{msg} beyond {} bytes", src.len());
            }
        }
    }
});
