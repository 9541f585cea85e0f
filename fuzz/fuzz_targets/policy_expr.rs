//! The checks_policy parser never panics (nor overflows the stack), reports
//! a column inside the input, and its printed form parses to the same tree.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pathosd::config::policy_expr::{compile, parse, MAX_LEN};

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    match parse(src) {
        // Printing adds spaces around operators, so a policy near the
        // length limit may print beyond it.
        Ok(e) => {
            let printed = e.to_string();
            if printed.len() <= MAX_LEN {
                assert_eq!(parse(&printed).as_ref(), Ok(&e));
            }
        }
        Err(err) => assert!(err.column >= 1 && err.column <= src.chars().count() + 1),
    }
    let names = ["web".to_string(), "dns".to_string(), "ping".to_string()];
    let _ = compile(src, &names);
});
