//! What one BGP session needs from the configuration: the settings of a
//! neighbor's peer task and the listen address. Pure (a config in, values
//! out), so a reload can compare them without the driver.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use super::fsm::{Capabilities, PeerConfig};
use super::rib_out::PeerShape;
use super::types::Afi;
use crate::config::schema::{Config, Neighbor};

/// Everything one peer task needs from the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerSettings {
    pub name: String,
    pub address: IpAddr,
    pub port: u16,
    /// Source address of active connects.
    pub local_address: Option<IpAddr>,
    pub password: Option<String>,
    /// IP TTL / hop limit sent (None: the system default, for iBGP).
    pub ttl: Option<u8>,
    /// GTSM minimum TTL accepted (RFC 5082).
    pub min_ttl: Option<u8>,
    pub fsm: PeerConfig,
    pub shape: PeerShape,
    /// The IPv4 / IPv6 next hop is the session's local address
    /// (`local_address` configured as the unspecified address).
    pub next_hop_v4_from_session: bool,
    pub next_hop_v6_from_session: bool,
}

impl PeerSettings {
    /// The settings of neighbor `n`; an error for an incomplete config
    /// (validation normally rejects those first).
    pub fn from_config(cfg: &Config, n: &Neighbor) -> Result<PeerSettings, String> {
        let router = &cfg.router;
        let router_id = match router.router_id {
            Some(IpAddr::V4(a)) => a,
            _ => return Err("router.router_id must be an IPv4 address".into()),
        };
        let address = n
            .address
            .ok_or_else(|| format!("neighbor {}: no address", n.name))?;
        let local_as = router.asn;
        let ebgp = n.peer_asn != local_as;
        let secs = |d: Duration| u16::try_from(d.as_secs()).unwrap_or(u16::MAX);
        let hold = secs(n.hold_time.unwrap_or(cfg.bgp.hold_time).get());
        let keepalive = secs(n.keepalive_time.unwrap_or(cfg.bgp.keepalive_time).get());
        let ipv6_routes = cfg
            .vips
            .iter()
            .any(|v| v.prefix.is_some_and(|p| p.afi() == Afi::Ipv6))
            || router.local_address_ipv6.is_some();
        let mut fsm = PeerConfig::new(local_as, n.peer_asn, router_id);
        fsm.hold_time = hold;
        fsm.keepalive_time = (keepalive > 0).then_some(keepalive);
        fsm.passive = n.passive;
        fsm.idle_hold_time = n.error_wait_min.get();
        fsm.idle_hold_time_max = n.error_wait_max.get();
        // Stable = up at least as long as the longest wait: restarting such
        // a session at once redials at most once per error_wait_max, the
        // rate the capped back-off allows anyway.
        fsm.stable_time = n.error_wait_max.get();
        fsm.capabilities = Capabilities {
            four_octet_as: true,
            mp_ipv4: true,
            mp_ipv6: ipv6_routes,
            route_refresh: true,
            graceful_restart: n.graceful_restart.unwrap_or(cfg.bgp.graceful_restart),
        };
        // RFC 5082 §3: GTSM sends TTL 255 and accepts 255 - (hops - 1);
        // otherwise eBGP is single hop (TTL 1) unless multihop, iBGP keeps
        // the system default.
        let hops = if n.enable_multihop {
            if n.multihop_ttl == 0 {
                255
            } else {
                n.multihop_ttl
            }
        } else {
            1
        };
        let (ttl, min_ttl) = if n.ttl_security {
            (
                Some(255),
                Some(255u8.saturating_sub(hops.saturating_sub(1))),
            )
        } else if ebgp {
            (Some(hops), None)
        } else {
            (None, None)
        };
        let (next_hop_v4, v4_from_session) = match router.local_address {
            Some(IpAddr::V4(a)) if !a.is_unspecified() => (Some(a), false),
            Some(IpAddr::V4(_)) => (Some(router_id), true),
            _ => (Some(router_id), false),
        };
        let (next_hop_v6, v6_from_session) = match router.local_address_ipv6 {
            Some(IpAddr::V6(a)) if !a.is_unspecified() => (Some(a), false),
            Some(IpAddr::V6(_)) => (None, true),
            _ => (None, false),
        };
        Ok(PeerSettings {
            name: n.name.clone(),
            address,
            port: n.port,
            local_address: n.local_address.or(router.local_address),
            password: n.md5_key().map(str::to_string),
            ttl,
            min_ttl,
            fsm,
            shape: PeerShape {
                ebgp,
                local_as,
                next_hop_v4,
                next_hop_v6,
                families: Vec::new(),
            },
            next_hop_v4_from_session: v4_from_session,
            next_hop_v6_from_session: v6_from_session,
        })
    }
}

/// Where to listen: `bgp.listen_address`, else `router.local_address`, else
/// 0.0.0.0, on `bgp.listen_port`; None for port -1 (never listen).
pub fn listen_addr(cfg: &Config) -> Option<SocketAddr> {
    let port = u16::try_from(cfg.bgp.listen_port).ok()?;
    let ip = cfg
        .bgp
        .listen_address
        .or(cfg.router.local_address)
        .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
    Some(SocketAddr::new(ip, port))
}
