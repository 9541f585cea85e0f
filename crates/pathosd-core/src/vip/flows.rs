//! Counting a VIP's active flows in the router's connection tracking
//! table, as Linux prints it in `/proc/net/nf_conntrack` (OpenWrt's
//! kmod-nf-conntrack, procfs on):
//!
//! ```text
//! ipv4     2 tcp      6 431999 ESTABLISHED src=192.0.2.7 dst=10.253.0.1 sport=40122 dport=80 src=10.253.0.1 dst=192.0.2.7 sport=80 dport=40122 [ASSURED] mark=0 zone=0 use=2
//! ```
//!
//! The first `dst=` is the original direction's destination: an entry
//! counts for every prefix that holds it. A TCP entry in `TIME_WAIT` or
//! `CLOSE` is a connection that has ended (the kernel keeps it up to two
//! minutes) and does not count; every other entry does.
//!
//! Pure and streaming: the text is read through a fixed buffer and
//! counted line by line, so a table of 100,000 entries (about 25 MB of
//! text) takes no more memory than one line. A line longer than
//! [`MAX_LINE`] is no entry of the format above and is skipped.

use crate::bgp::types::Prefix;
use std::io::Read;
use std::net::IpAddr;

/// The longest line counted: an IPv6 entry with every field is about 400
/// bytes.
pub const MAX_LINE: usize = 1024;

/// The read buffer of [`count`].
const CHUNK: usize = 16 * 1024;

/// Counts, for each of `prefixes`, the table's active flows whose original
/// destination it holds; the counts are in the order of `prefixes` and
/// saturate at `u32::MAX`.
pub fn count(mut text: impl Read, prefixes: &[Prefix]) -> std::io::Result<Vec<u32>> {
    let mut counts = vec![0u32; prefixes.len()];
    let mut buf = vec![0u8; CHUNK];
    // The part of the buffer that holds the start of an unfinished line.
    let mut kept = 0;
    // Set while the rest of a line that was too long is skipped.
    let mut skipping = false;
    loop {
        let n = match text.read(&mut buf[kept..]) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            if !skipping && kept > 0 {
                line(&buf[..kept], prefixes, &mut counts);
            }
            return Ok(counts);
        }
        let end = kept + n;
        let mut start = 0;
        while let Some(nl) = buf[start..end].iter().position(|b| *b == b'\n') {
            // A line that grew past MAX_LINE in this read is skipped too:
            // whether a line counts never depends on how the reads split it.
            if !skipping && nl <= MAX_LINE {
                line(&buf[start..start + nl], prefixes, &mut counts);
            }
            skipping = false;
            start += nl + 1;
        }
        let rest = end - start;
        if skipping || rest > MAX_LINE {
            skipping = true;
            kept = 0;
        } else {
            buf.copy_within(start..end, 0);
            kept = rest;
        }
    }
}

/// Counts one entry of the table.
pub fn line(text: &[u8], prefixes: &[Prefix], counts: &mut [u32]) {
    let Some(dst) = active_destination(text) else {
        return;
    };
    for (p, c) in prefixes.iter().zip(counts.iter_mut()) {
        if p.contains(dst) {
            *c = c.saturating_add(1);
        }
    }
}

/// The original destination of an entry that is an active flow; None for
/// an ended TCP connection or a line that is no entry.
fn active_destination(text: &[u8]) -> Option<IpAddr> {
    let text = std::str::from_utf8(text).ok()?;
    let mut words = text.split_ascii_whitespace();
    let l4 = words.nth(2)?;
    for w in words {
        if l4 == "tcp" && (w == "TIME_WAIT" || w == "CLOSE") {
            return None;
        }
        if let Some(a) = w.strip_prefix("dst=") {
            return a.parse().ok();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Prefix {
        s.parse().unwrap()
    }

    const TABLE: &str = "\
ipv4     2 tcp      6 431999 ESTABLISHED src=192.0.2.7 dst=10.253.0.1 sport=40122 dport=80 src=10.253.0.1 dst=192.0.2.7 sport=80 dport=40122 [ASSURED] mark=0 zone=0 use=2
ipv4     2 tcp      6 117 TIME_WAIT src=192.0.2.7 dst=10.253.0.1 sport=40120 dport=80 src=10.253.0.1 dst=192.0.2.7 sport=80 dport=40120 [ASSURED] mark=0 zone=0 use=2
ipv4     2 tcp      6 9 CLOSE src=192.0.2.7 dst=10.253.0.1 sport=40121 dport=80 src=10.253.0.1 dst=192.0.2.7 sport=80 dport=40121 [ASSURED] mark=0 zone=0 use=2
ipv4     2 tcp      6 59 SYN_RECV src=192.0.2.8 dst=10.253.0.9 sport=40122 dport=80 src=10.253.0.9 dst=192.0.2.8 sport=80 dport=40122 mark=0 zone=0 use=2
ipv4     2 udp      17 29 src=192.0.2.7 dst=10.253.0.1 sport=5353 dport=53 [UNREPLIED] src=10.253.0.1 dst=192.0.2.7 sport=53 dport=5353 mark=0 zone=0 use=2
ipv4     2 tcp      6 431999 ESTABLISHED src=10.253.0.1 dst=192.0.2.7 sport=40122 dport=80 src=192.0.2.7 dst=10.253.0.1 sport=80 dport=40122 [ASSURED] mark=0 zone=0 use=2
ipv6     10 tcp      6 431999 ESTABLISHED src=2001:0db8:0000:0000:0000:0000:0000:0007 dst=2001:0db8:0000:0000:0000:0000:0000:0001 sport=1 dport=80 src=2001:0db8:0000:0000:0000:0000:0000:0001 dst=2001:0db8:0000:0000:0000:0000:0000:0007 sport=80 dport=1 mark=0 zone=0 use=2
garbage
ipv4 2 tcp 6 1 ESTABLISHED dst=not-an-address
";

    #[test]
    fn counts_active_flows_by_original_destination() {
        let prefixes = [
            p("10.253.0.1/32"),
            p("10.253.0.0/24"),
            p("2001:db8::1/128"),
            p("192.0.2.0/24"),
        ];
        let c = count(TABLE.as_bytes(), &prefixes).unwrap();
        // 10.253.0.1: the ESTABLISHED and the UDP entry, not TIME_WAIT or
        // CLOSE, nor the connection from it (its reply destination).
        assert_eq!(c, [2, 3, 1, 1]);
    }

    #[test]
    fn streams_a_large_table_through_a_small_buffer() {
        let one = TABLE.lines().next().unwrap();
        let mut text = String::new();
        for _ in 0..10_000 {
            text.push_str(one);
            text.push('\n');
        }
        // A byte at a time: lines split across every possible read.
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
                let n = self.0.len().min(b.len()).min(7);
                b[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let c = count(Trickle(text.as_bytes()), &[p("10.253.0.1/32")]).unwrap();
        assert_eq!(c, [10_000]);
        // No final newline: the last line counts too.
        let c = count(one.as_bytes(), &[p("10.253.0.1/32")]).unwrap();
        assert_eq!(c, [1]);
    }

    /// Any text, read in any split, counts as its lines one by one (the
    /// fuzz target conntrack_count checks the same on arbitrary bytes).
    #[test]
    fn any_split_counts_as_line_by_line() {
        use proptest::prelude::*;
        let lines: Vec<&str> = TABLE.lines().collect();
        let prefixes = [p("10.253.0.0/24"), p("2001:db8::/32")];
        proptest!(ProptestConfig::with_cases(200), |(
            picks in proptest::collection::vec((0..lines.len(), 0usize..3_000), 0..40),
            step in 1usize..5_000,
        )| {
            let mut text = String::new();
            for (i, pad) in &picks {
                text.push_str(lines[*i]);
                text.push_str(&" x".repeat(*pad / 2));
                text.push('\n');
            }
            struct Split<'a>(&'a [u8], usize);
            impl Read for Split<'_> {
                fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
                    let n = self.0.len().min(b.len()).min(self.1);
                    b[..n].copy_from_slice(&self.0[..n]);
                    self.0 = &self.0[n..];
                    Ok(n)
                }
            }
            let got = count(Split(text.as_bytes(), step), &prefixes).unwrap();
            let mut want = vec![0u32; prefixes.len()];
            for l in text.lines() {
                if l.len() <= MAX_LINE {
                    line(l.as_bytes(), &prefixes, &mut want);
                }
            }
            prop_assert_eq!(got, want);
        });
    }

    #[test]
    fn an_overlong_line_is_skipped_whole() {
        let one = TABLE.lines().next().unwrap();
        let long = format!("{one} {}\n{one}\n", "x".repeat(3 * CHUNK));
        let c = count(long.as_bytes(), &[p("10.253.0.1/32")]).unwrap();
        assert_eq!(c, [1]);
    }
}
