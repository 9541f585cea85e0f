//! ping via socket2: an ICMP datagram socket ("ping socket", needs the
//! group in net.ipv4.ping_group_range) by default, a raw ICMP socket
//! (needs CAP_NET_RAW) with `privileged`. IPv4 and IPv6.
//!
//! `count` echo requests go out `interval` apart; one deadline (the check
//! timeout) bounds the whole run, as in pathosd (pro-bing's Timeout). The
//! probe passes when lost/count <= max_loss_ratio.
//!
//! The socket is connected to the destination, so the kernel delivers only
//! that host's packets; raw sockets also see echo requests on loopback and
//! other processes' replies, hence the type and identifier checks.

use crate::check::result::CheckResult;
use crate::config::PingCheck;
use crate::net::{io_msg, until};
use async_io::Async;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

/// Marks our echo payload (after the 2-byte sequence copy).
const MAGIC: &[u8; 8] = b"pathosd!";

#[derive(Debug)]
pub(crate) struct PingProbe {
    dst: IpAddr,
    src: Option<IpAddr>,
    privileged: bool,
    count: u16,
    gap: Duration,
    max_loss: f64,
}

/// RFC 792: the checksum is the 16-bit one's complement of the one's
/// complement sum of the ICMP message.
fn checksum(b: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for c in b.chunks(2) {
        let w = match c {
            [a, b] => u16::from_be_bytes([*a, *b]),
            [a] => u16::from_be_bytes([*a, 0]),
            _ => 0,
        };
        sum = sum.wrapping_add(u32::from(w));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An echo request: type, code 0, checksum, identifier, sequence, payload.
fn echo_request(v6: bool, ident: u16, seq: u16) -> Vec<u8> {
    // RFC 792 type 8 / RFC 4443 §4.1 type 128.
    let mut p = vec![if v6 { 128 } else { 8 }, 0, 0, 0];
    p.extend_from_slice(&ident.to_be_bytes());
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend_from_slice(MAGIC);
    p.extend_from_slice(&seq.to_be_bytes());
    if !v6 {
        // ICMPv6 checksums cover a pseudo-header the kernel fills in
        // (RFC 4443 §2.3); ICMPv4 is ours to compute.
        let c = checksum(&p);
        p[2..4].copy_from_slice(&c.to_be_bytes());
    }
    p
}

/// The sequence number of an echo reply meant for us, if `pkt` is one.
fn parse_reply(pkt: &[u8], v6: bool, raw: bool, ident: u16) -> Option<u16> {
    // A raw IPv4 socket returns the IP header too (IHL words).
    let icmp = if raw && !v6 {
        let ihl = usize::from(pkt.first()? & 0x0f) * 4;
        pkt.get(ihl..)?
    } else {
        pkt
    };
    // RFC 792 type 0 / RFC 4443 §4.2 type 129.
    let reply_type = if v6 { 129 } else { 0 };
    if icmp.len() < 8 + MAGIC.len() || icmp[0] != reply_type || icmp[1] != 0 {
        return None;
    }
    // A ping socket's identifier is rewritten by the kernel, which already
    // filtered replies by it; only raw sockets check it.
    if raw && u16::from_be_bytes([icmp[4], icmp[5]]) != ident {
        return None;
    }
    if &icmp[8..8 + MAGIC.len()] != MAGIC {
        return None;
    }
    Some(u16::from_be_bytes([icmp[6], icmp[7]]))
}

fn open(dst: IpAddr, src: Option<IpAddr>, raw: bool) -> io::Result<Async<Socket>> {
    let (domain, proto) = match dst {
        IpAddr::V4(_) => (Domain::IPV4, Protocol::ICMPV4),
        IpAddr::V6(_) => (Domain::IPV6, Protocol::ICMPV6),
    };
    let ty = if raw { Type::RAW } else { Type::DGRAM };
    let s = Socket::new(domain, ty, Some(proto))?;
    if let Some(src) = src {
        s.bind(&SockAddr::from(SocketAddr::new(src, 0)))?;
    }
    s.connect(&SockAddr::from(SocketAddr::new(dst, 0)))?;
    Async::new(s)
}

impl PingProbe {
    /// `dst`: `c.dst_ip`, else the VIP address, as validation resolved it.
    pub fn new(c: &PingCheck, dst: IpAddr) -> Result<PingProbe, String> {
        if let Some(src) = c.src_ip {
            if src.is_ipv4() != dst.is_ipv4() {
                return Err("src_ip and dst_ip are of different families".into());
            }
        }
        let count = u16::try_from(c.count)
            .ok()
            .filter(|n| (1..=60).contains(n))
            .ok_or_else(|| format!("count {} is not in 1..60", c.count))?;
        if !(0.0..1.0).contains(&c.max_loss_ratio) {
            return Err(format!(
                "max_loss_ratio {} is not in [0, 1)",
                c.max_loss_ratio
            ));
        }
        Ok(PingProbe {
            dst,
            src: c.src_ip,
            privileged: c.privileged,
            count,
            gap: c.interval.get(),
            max_loss: c.max_loss_ratio,
        })
    }

    pub fn what(&self) -> String {
        format!("ping {}", self.dst)
    }

    pub async fn run(&self, deadline: Instant) -> CheckResult {
        // Loss is the verdict when replies are missing, so the run ends just
        // before the check timeout would cut it short.
        let deadline = deadline
            .checked_sub(Duration::from_millis(10))
            .unwrap_or(deadline);
        let v6 = self.dst.is_ipv6();
        let raw = self.privileged;
        let sock = match self.socket() {
            Ok(s) => s,
            Err(detail) => return CheckResult::fail(detail),
        };
        // Distinguishes our raw-socket replies from other processes'.
        let ident = (std::process::id() as u16) ^ 0x5054;
        let count = usize::from(self.count);
        let mut sent_at: Vec<Option<Instant>> = vec![None; count];
        let mut rtts: Vec<Duration> = Vec::new();
        let mut got = vec![false; count];
        let start = Instant::now();
        let mut next: u16 = 0;
        let mut buf = [0u8; 1500];
        let mut send_err = None;
        while rtts.len() < count {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            let due = start + self.gap.saturating_mul(u32::from(next));
            if next < self.count && now >= due {
                let pkt = echo_request(v6, ident, next);
                let sent = sock
                    .write_with(|s| {
                        let mut w: &Socket = s;
                        w.write(&pkt)
                    })
                    .await;
                match sent {
                    Ok(_) => sent_at[usize::from(next)] = Some(Instant::now()),
                    Err(e) => {
                        send_err = Some(io_msg(&e));
                        break;
                    }
                }
                next = next.saturating_add(1);
                continue;
            }
            let wake = if next < self.count {
                due.min(deadline)
            } else {
                deadline
            };
            let read = until(
                wake,
                sock.read_with(|s| {
                    let mut r: &Socket = s;
                    r.read(&mut buf)
                }),
            )
            .await;
            let n = match read {
                None => continue,
                Some(Ok(n)) => n,
                // An ICMP error queued on the socket (e.g. unreachable):
                // the request is lost; keep waiting for the others.
                Some(Err(_)) => continue,
            };
            let Some(seq) = parse_reply(&buf[..n], v6, raw, ident) else {
                continue;
            };
            let i = usize::from(seq);
            if let (Some(Some(t)), Some(false)) = (sent_at.get(i), got.get(i)) {
                got[i] = true;
                rtts.push(t.elapsed());
            }
        }
        self.verdict(next, &rtts, send_err)
    }

    /// The socket to the destination, or the detail of why there is none
    /// (with a hint at the permission it lacks).
    fn socket(&self) -> Result<Async<Socket>, String> {
        let raw = self.privileged;
        open(self.dst, self.src, raw).map_err(|e| {
            let hint = match (e.kind(), raw) {
                (io::ErrorKind::PermissionDenied, false) => {
                    " (is the group in net.ipv4.ping_group_range?)"
                }
                (io::ErrorKind::PermissionDenied, true) => " (raw sockets need CAP_NET_RAW)",
                _ => "",
            };
            format!(
                "ping {}: {} socket: {}{hint}",
                self.dst,
                if raw { "raw" } else { "datagram" },
                io_msg(&e)
            )
        })
    }

    /// The result of a run that sent `sent` requests and got replies after
    /// `rtts`: loss against `max_loss_ratio`, with the counts and
    /// round-trip times in the details; `send_err`, why sending stopped.
    fn verdict(&self, sent: u16, rtts: &[Duration], send_err: Option<String>) -> CheckResult {
        let count = usize::from(self.count);
        let received = rtts.len();
        let lost = count.saturating_sub(received);
        let ratio = lost as f64 / count as f64;
        let ms = |d: Duration| (d.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0;
        let mut r = CheckResult::fail("")
            .with("sent", sent)
            .with("received", received)
            .with("loss_ratio", ratio);
        if !rtts.is_empty() {
            let min = rtts.iter().min().copied().unwrap_or_default();
            let max = rtts.iter().max().copied().unwrap_or_default();
            let avg = rtts.iter().sum::<Duration>() / u32::try_from(received).unwrap_or(1);
            r = r
                .with("rtt_min_ms", ms(min))
                .with("rtt_avg_ms", ms(avg))
                .with("rtt_max_ms", ms(max));
        }
        if let Some(e) = send_err {
            r.detail = format!("ping {}: send: {e}", self.dst);
            return r;
        }
        if ratio <= self.max_loss {
            r.ok = true;
            r.detail = format!("ping {}: {received}/{count} replies", self.dst);
        } else {
            r.detail = format!("ping {}: loss {lost}/{count} > {}", self.dst, self.max_loss);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_checksum() {
        // RFC 1071 §3 example: the sum of these words is ddf2, so the
        // checksum is its complement.
        let b = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(checksum(&b), !0xddf2);
        let p = echo_request(false, 7, 3);
        assert_eq!(checksum(&p), 0);
    }

    #[test]
    fn replies() {
        let mut p = echo_request(false, 7, 3);
        assert_eq!(parse_reply(&p, false, false, 7), None);
        p[0] = 0;
        assert_eq!(parse_reply(&p, false, false, 99), Some(3));
        assert_eq!(parse_reply(&p, false, true, 99), None);
        let mut ip = vec![0x45u8];
        ip.extend_from_slice(&[0; 19]);
        ip.extend_from_slice(&p);
        assert_eq!(parse_reply(&ip, false, true, 7), Some(3));
        let mut q = echo_request(true, 7, 9);
        q[0] = 129;
        assert_eq!(parse_reply(&q, true, true, 7), Some(9));
        assert_eq!(parse_reply(&q[..10], true, true, 7), None);
    }
}
