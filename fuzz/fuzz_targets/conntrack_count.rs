//! The conntrack counter never panics, and reading the table through any
//! split into reads counts the same as counting it line by line (lines
//! longer than `MAX_LINE` are skipped by both).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pathosd::bgp::types::Prefix;
use pathosd::vip::flows::{count, line, MAX_LINE};
use std::io::Read;

/// Hands out at most `step` bytes a read.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        let n = self.data.len().min(b.len()).min(self.step);
        b[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&step, text)) = data.split_first() else {
        return;
    };
    let prefixes: Vec<Prefix> = ["10.0.0.0/8", "10.253.0.1/32", "2001:db8::/32", "0.0.0.0/0"]
        .iter()
        .filter_map(|p| p.parse().ok())
        .collect();
    let step = usize::from(step).max(1) * 97;
    let streamed = count(Trickle { data: text, step }, &prefixes).expect("reads never fail");
    let mut want = vec![0u32; prefixes.len()];
    for l in text.split(|b| *b == b'\n') {
        if l.len() <= MAX_LINE {
            line(l, &prefixes, &mut want);
        }
    }
    assert_eq!(streamed, want);
});
