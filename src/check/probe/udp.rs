//! udp with pathosd's semantics: send the payload on a connected socket; a
//! reply or silence passes, ICMP port unreachable (ECONNREFUSED) fails. With
//! `expect`, only a reply containing it passes and silence fails.

use super::{on_addr, snippet};
use crate::check::result::CheckResult;
use crate::config::target::HostPort;
use crate::config::UdpCheck;
use crate::net::{io_msg, until};
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};

/// pathosd waits at most this long for a reply or an ICMP error.
const READ_WAIT: Duration = Duration::from_millis(500);

#[derive(Debug)]
pub(crate) struct UdpProbe {
    target: HostPort,
    payload: Vec<u8>,
    expect: Option<String>,
}

impl UdpProbe {
    /// `target` and the datagram (`c.datagram`): `c`'s, as validation
    /// resolved them.
    pub fn new(c: &UdpCheck, target: &HostPort, datagram: &[u8]) -> UdpProbe {
        UdpProbe {
            target: target.clone(),
            payload: datagram.to_vec(),
            expect: c.expect.clone().filter(|e| !e.is_empty()),
        }
    }

    pub fn what(&self) -> String {
        format!("udp {}", self.target)
    }

    pub fn run(&self, deadline: Instant) -> impl Future<Output = CheckResult> + '_ {
        on_addr(&self.target, move |addr| async move {
            match self.exchange(addr, deadline).await {
                Ok(r) => r.with("address", addr.to_string()),
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    CheckResult::fail(format!("udp {addr}: ICMP port unreachable (port closed)"))
                }
                Err(e) => CheckResult::fail(format!("udp {addr}: {}", io_msg(&e))),
            }
        })
    }

    async fn exchange(&self, addr: SocketAddr, deadline: Instant) -> io::Result<CheckResult> {
        let any = match addr.ip() {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        };
        let sock = smol::net::UdpSocket::bind(SocketAddr::new(any, 0)).await?;
        // Connected, so the kernel reports ICMP port unreachable as
        // ECONNREFUSED on the next receive.
        sock.connect(addr).await?;
        sock.send(&self.payload).await?;
        // Silence passes, so the read must end before the check timeout does;
        // a fifth of the time left (at least 10ms) absorbs scheduling delay
        // on a busy router.
        let left = deadline.saturating_duration_since(Instant::now());
        let margin = (left / 5).max(Duration::from_millis(10));
        let wait = deadline
            .checked_sub(margin)
            .unwrap_or(deadline)
            .min(Instant::now() + READ_WAIT);
        let mut buf = vec![0u8; 65536];
        match until(wait, sock.recv(&mut buf)).await {
            Some(Ok(n)) => {
                let reply = &buf[..n];
                match &self.expect {
                    Some(e) if !super::tcp::contains(reply, e.as_bytes()) => {
                        Ok(CheckResult::fail(format!(
                            "udp {addr}: reply {:?} does not contain {e:?}",
                            snippet(reply)
                        )))
                    }
                    _ => Ok(CheckResult::pass(format!("udp {addr}: received response"))
                        .with("reply", snippet(reply))),
                }
            }
            Some(Err(e)) => Err(e),
            None => match &self.expect {
                Some(e) => Ok(CheckResult::fail(format!(
                    "udp {addr}: no reply (expected {e:?})"
                ))),
                None => Ok(CheckResult::pass(format!(
                    "udp {addr}: no ICMP port-unreachable (port open)"
                ))),
            },
        }
    }
}
