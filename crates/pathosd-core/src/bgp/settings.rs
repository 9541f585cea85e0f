//! What one BGP session needs from the configuration: the settings of a
//! neighbor's peer task, built once by validation (`config::run`). Pure (a
//! config in, values out), so a reload compares them without the driver.

use std::net::{IpAddr, Ipv4Addr};

use super::fsm::{Capabilities, PeerConfig};
use super::rib_out::PeerShape;
use crate::config::duration::Dur;
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
    /// The settings of neighbor `n` of config `c` (validated), every
    /// default and override applied: the per-neighbor value, else `bgp`'s,
    /// else the router's. `router_id` is `router.router_id`; `mp_ipv6`
    /// whether any VIP is IPv6 or `router.local_address_ipv6` is set.
    /// None for a neighbor validation rejects (no address, a hold time that
    /// is not 16 bits of seconds).
    pub(crate) fn new(
        c: &Config,
        n: &Neighbor,
        router_id: Ipv4Addr,
        mp_ipv6: bool,
    ) -> Option<PeerSettings> {
        let router = &c.router;
        let address = n.address?;
        let local_as = router.asn;
        let ebgp = n.peer_asn != local_as;
        // RFC 4271 §4.2: the Hold Time is 16 bits of seconds (validated).
        let secs = |d: Dur| u16::try_from(d.get().as_secs()).ok();
        let hold_time = secs(n.hold_time.unwrap_or(c.bgp.hold_time))?;
        let keepalive = secs(n.keepalive_time.unwrap_or(c.bgp.keepalive_time))?;
        // RFC 5082 §3: GTSM sends TTL 255 and accepts 255 - (hops - 1);
        // otherwise eBGP is single hop (TTL 1) unless multihop, iBGP keeps
        // the system default.
        let hops = match (n.enable_multihop, n.multihop_ttl) {
            (false, _) => 1,
            (true, 0) => 255,
            (true, t) => t,
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
        // The next hops: `router.local_address` (`local_address_ipv6`);
        // configured as the unspecified address, the session's own.
        let (next_hop_v4, next_hop_v4_from_session) = match router.local_address {
            Some(IpAddr::V4(a)) if !a.is_unspecified() => (a, false),
            Some(IpAddr::V4(_)) => (router_id, true),
            _ => (router_id, false),
        };
        let (next_hop_v6, next_hop_v6_from_session) = match router.local_address_ipv6 {
            Some(IpAddr::V6(a)) if !a.is_unspecified() => (Some(a), false),
            Some(IpAddr::V6(_)) => (None, true),
            _ => (None, false),
        };
        let mut fsm = PeerConfig::new(local_as, n.peer_asn, router_id);
        fsm.hold_time = hold_time;
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
            mp_ipv6,
            route_refresh: true,
            graceful_restart: n.graceful_restart.unwrap_or(c.bgp.graceful_restart),
        };
        Some(PeerSettings {
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
                next_hop_v4: Some(next_hop_v4),
                next_hop_v6,
                families: Vec::new(),
            },
            next_hop_v4_from_session,
            next_hop_v6_from_session,
        })
    }
}
