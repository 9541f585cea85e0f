//! tcp: connect within the timeout; optionally send text and expect a banner.

use super::{on_addr, snippet};
use crate::check::result::CheckResult;
use crate::config::target::HostPort;
use crate::config::TcpCheck;
use crate::net::{io_msg, until};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use std::future::Future;
use std::net::SocketAddr;
use std::time::Instant;

/// Largest banner read while looking for `expect`.
const MAX_BANNER: usize = 64 * 1024;

#[derive(Debug)]
pub(crate) struct TcpProbe {
    target: HostPort,
    send: Option<String>,
    expect: Option<String>,
    /// The address's text when the target is an address (the common case):
    /// no address formatting per probe run (formatting it twice was 2-3 %
    /// of the CPU of 100 tcp VIPs).
    literal: Option<Box<str>>,
}

impl TcpProbe {
    /// `target`: `c`'s, as validation resolved it.
    pub fn new(c: &TcpCheck, target: &HostPort) -> TcpProbe {
        TcpProbe {
            literal: target.addr().map(|a| a.to_string().into_boxed_str()),
            target: target.clone(),
            send: c.send.clone(),
            expect: c.expect.clone().filter(|e| !e.is_empty()),
        }
    }

    pub fn what(&self) -> String {
        format!("connect {}", self.target)
    }

    pub fn run(&self, deadline: Instant) -> impl Future<Output = CheckResult> + '_ {
        on_addr(&self.target, move |addr| self.connect(addr, deadline))
    }

    /// The probe once the target's address is known.
    async fn connect(&self, addr: SocketAddr, deadline: Instant) -> CheckResult {
        let conn = match crate::net::connect_tcp(addr).await {
            Ok(c) => c,
            Err(e) => return CheckResult::fail(format!("connect {addr}: {}", io_msg(&e))),
        };
        if self.send.is_none() && self.expect.is_none() {
            // Connect only: the connection ends here with a reset (no FIN
            // exchange, no TIME_WAIT; see `close_with_reset`), never
            // having been on the reactor when the handshake ended at once.
            conn.close_with_reset(addr.is_ipv6());
            let text = match &self.literal {
                Some(t) => std::borrow::Cow::Borrowed(&**t),
                None => std::borrow::Cow::Owned(addr.to_string()),
            };
            let mut detail = String::with_capacity(text.len() + 30);
            detail.push_str("connect ");
            detail.push_str(&text);
            detail.push_str(": connection accepted");
            return CheckResult::pass(detail).with("address", text.into_owned());
        }
        let mut s = match conn.into_async() {
            Ok(s) => s,
            Err(e) => return CheckResult::fail(format!("connect {addr}: {}", io_msg(&e))),
        };
        if let Some(send) = &self.send {
            if let Err(e) = s.write_all(send.as_bytes()).await {
                return CheckResult::fail(format!("send to {addr}: {}", io_msg(&e)));
            }
        }
        let Some(expect) = &self.expect else {
            return CheckResult::pass(format!("connect {addr}: connection accepted"))
                .with("address", addr.to_string());
        };
        let mut got = Vec::new();
        // On the heap, and only when a banner is expected: in the future's
        // state it would cost 4 KiB per connect-only probe run.
        let mut buf = vec![0u8; 4096];
        loop {
            if contains(&got, expect.as_bytes()) {
                return CheckResult::pass(format!("{addr}: banner contains {expect:?}"))
                    .with("address", addr.to_string())
                    .with("banner", snippet(&got));
            }
            if got.len() >= MAX_BANNER {
                break;
            }
            match until(deadline, s.read(&mut buf)).await {
                None => {
                    return CheckResult::fail(format!(
                        "{addr}: no {expect:?} in reply {:?} before the timeout",
                        snippet(&got)
                    ))
                }
                Some(Ok(0)) => break,
                Some(Ok(n)) => got.extend_from_slice(&buf[..n]),
                Some(Err(e)) => return CheckResult::fail(format!("read {addr}: {}", io_msg(&e))),
            }
        }
        CheckResult::fail(format!(
            "{addr}: reply {:?} does not contain {expect:?}",
            snippet(&got)
        ))
    }
}

pub(crate) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}
