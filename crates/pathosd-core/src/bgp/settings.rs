//! What one BGP session needs from the configuration: the settings of a
//! neighbor's peer task and the listen address. Pure (a config in, values
//! out), so a reload can compare them without the driver.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use super::fsm::{Capabilities, PeerConfig};
use super::rib_out::PeerShape;
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
    /// The settings of neighbor `n`, from the session settings validation
    /// resolved (`Neighbor::session`): nothing left to fail here.
    pub fn from_config(n: &Neighbor) -> PeerSettings {
        let s = &n.session;
        let mut fsm = PeerConfig::new(s.local_as, n.peer_asn, s.router_id);
        fsm.hold_time = s.hold_time;
        fsm.keepalive_time = s.keepalive_time;
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
            mp_ipv6: s.mp_ipv6,
            route_refresh: true,
            graceful_restart: s.graceful_restart,
        };
        PeerSettings {
            name: n.name.clone(),
            address: s.address,
            port: n.port,
            local_address: s.local_address,
            password: s.md5_key.clone(),
            ttl: s.ttl,
            min_ttl: s.min_ttl,
            fsm,
            shape: PeerShape {
                ebgp: s.ebgp,
                local_as: s.local_as,
                next_hop_v4: Some(s.next_hop_v4),
                next_hop_v6: s.next_hop_v6,
                families: Vec::new(),
            },
            next_hop_v4_from_session: s.next_hop_v4_from_session,
            next_hop_v6_from_session: s.next_hop_v6_from_session,
        }
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
