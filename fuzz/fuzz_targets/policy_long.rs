//! Very long checks_policy expressions: a fuzzed fragment repeated up to
//! 65,535 times between a fuzzed head and tail, so that inputs far beyond
//! libFuzzer's `-max_len` (the 47,600-term `&&` chains, thousands of
//! `!` or `(`) reach the length, operand and nesting limits. Parsing,
//! compiling, printing, evaluating and dropping must never panic or overflow
//! the stack; error columns lie inside the input; an accepted policy prints
//! back to the same tree (when the printed form is within the length limit:
//! printing adds spaces around operators).
//!
//! Input: two bytes of repeat count, then head, fragment and tail separated
//! by NUL bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pathosd::check::policy::{eval, validate};
use pathosd::config::policy_expr::{compile, parse, MAX_LEN};

fuzz_target!(|data: &[u8]| {
    let Some((count, rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let mut parts = text.splitn(3, '\0');
    let head = parts.next().unwrap_or("");
    let frag = parts.next().unwrap_or("");
    let tail = parts.next().unwrap_or("");
    let src = format!(
        "{head}{}{tail}",
        frag.repeat(usize::from(u16::from_be_bytes(*count)))
    );
    match parse(&src) {
        Ok(e) => {
            let printed = e.to_string();
            if printed.len() <= MAX_LEN {
                assert_eq!(parse(&printed).as_ref(), Ok(&e));
            }
        }
        Err(err) => assert!(err.column >= 1 && err.column <= src.chars().count() + 1),
    }
    let names = ["web".to_string(), "dns".to_string(), "ping".to_string()];
    if let Ok(e) = compile(&src, &names) {
        assert!(validate(&e, &names).is_ok());
        let mask = count[0];
        let healthy = |n: &str| match n {
            "web" => mask & 1 != 0,
            "dns" => mask & 2 != 0,
            _ => mask & 4 != 0,
        };
        let _ = eval(&e, &names, &healthy);
    }
});
