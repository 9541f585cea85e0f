//! Name lookup: the socket addresses of a host and port, at once for an
//! address, through the system resolver (getaddrinfo(3), on the blocking
//! pool) for a name. The probes look their targets up here at each run, and
//! the OTLP exporter its collector at each send.

use super::io_msg;
use crate::config::target::{Host, HostPort};
use std::net::SocketAddr;

/// The socket address of `t`: at once for an address, by a lookup for a
/// name (at each probe, so a name that moves is followed): the first of
/// [`lookup`]'s.
pub(crate) async fn resolve(t: &HostPort) -> Result<SocketAddr, String> {
    let name = match &t.host {
        Host::Ip(ip) => return Ok(SocketAddr::new(*ip, t.port)),
        Host::Name(n) => n,
    };
    let addrs = lookup(name, t.port)
        .await
        .map_err(|e| format!("resolve {name}: {e}"))?;
    addrs
        .into_iter()
        .next()
        .ok_or_else(|| format!("resolve {name}: no addresses"))
}

/// Every address of `t`, to be tried in turn: itself for an address, a
/// lookup's (at each call) for a name.
pub(crate) async fn addrs(t: &HostPort) -> Result<Vec<SocketAddr>, String> {
    match &t.host {
        Host::Ip(ip) => Ok(vec![SocketAddr::new(*ip, t.port)]),
        Host::Name(n) => lookup(n, t.port)
            .await
            .map_err(|e| format!("resolve {n}: {e}")),
    }
}

/// The most addresses a lookup keeps, in the resolver's order (ureq's
/// resolver kept as many).
const MAX_ADDRS: usize = 16;

/// The addresses of the name `name` with `port` (at most [`MAX_ADDRS`], in
/// the system resolver's order), or why there are none.
///
/// getaddrinfo(3) can only block, so it runs on the daemon's bounded pool
/// ([`crate::pool`]) like every other client that blocks: a lookup
/// starts no thread the pool does not own (`smol::net::resolve` ran it on
/// the `blocking` crate's own pool, up to 500 threads). The check's
/// timeout bounds the wait (`check::Probe::run` races every probe against it):
/// a lookup still queued then is dropped unrun, and one that is running
/// keeps its worker until the resolver gives up (resolv.conf's timeout
/// and attempts), as ureq's requests do.
pub(crate) async fn lookup(name: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    use std::net::ToSocketAddrs;
    let name = name.to_owned();
    crate::pool::pool()
        .run(move || {
            (name.as_str(), port)
                .to_socket_addrs()
                .map(|addrs| addrs.take(MAX_ADDRS).collect())
                .map_err(|e| io_msg(&e))
        })
        .await?
}

#[cfg(test)]
mod tests {
    use super::*;

    // 127.203.11.0/24 is net's (here and in tcp.rs): no other test uses it.

    /// A host that is a name is looked up on the daemon's bounded pool (a
    /// job the pool counts), not on a thread of its own; `localhost` is the
    /// one name every machine resolves without a DNS server.
    #[test]
    fn a_name_is_looked_up_on_the_pool() {
        use crate::config::target::{Host, HostPort};
        let ip = HostPort {
            host: Host::Ip("127.203.11.5".parse().expect("address")),
            port: 7,
        };
        assert_eq!(
            crate::rt::block_on(resolve(&ip)),
            Ok("127.203.11.5:7".parse().expect("address"))
        );
        let before = crate::pool::stats().run;
        let named = HostPort {
            host: Host::Name("localhost".into()),
            port: 7,
        };
        let a = crate::rt::block_on(resolve(&named)).expect("localhost resolves");
        assert!(a.ip().is_loopback() && a.port() == 7, "{a}");
        assert!(crate::pool::stats().run > before, "not run on the pool");
        // Every address, for a client that tries them in turn.
        assert_eq!(
            crate::rt::block_on(addrs(&ip)),
            Ok(vec!["127.203.11.5:7".parse().expect("address")])
        );
        let all = crate::rt::block_on(addrs(&named)).expect("localhost resolves");
        assert!(all.contains(&a), "{all:?} has {a}");
        assert!(
            all.iter().all(|x| x.ip().is_loopback() && x.port() == 7),
            "{all:?}"
        );
    }
}
