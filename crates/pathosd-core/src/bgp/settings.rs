//! What one BGP session needs from the configuration: the settings of a
//! neighbor's peer task, built once by validation (`config::run`). Pure (a
//! config in, values out), so a reload compares them without the driver.

use std::net::{IpAddr, Ipv4Addr};

use super::fsm::{Capabilities, PeerConfig, Role};
use super::rib_out::PeerShape;
use crate::config::schema::{BgpRole, Config, Neighbor};

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
    /// The settings of neighbor `n` of config `c`, every default and
    /// override applied: the per-neighbor value, else `bgp`'s, else the
    /// router's. Validation, which builds them, gives what it read:
    /// `address`, the hold and keepalive times in seconds, `router_id`
    /// (`router.router_id`) and `mp_ipv6` (whether any VIP is IPv6 or
    /// `router.local_address_ipv6` is set).
    pub(crate) fn new(
        c: &Config,
        n: &Neighbor,
        address: IpAddr,
        (hold_time, keepalive): (u16, u16),
        router_id: Ipv4Addr,
        mp_ipv6: bool,
    ) -> PeerSettings {
        let router = &c.router;
        let local_as = router.asn;
        let ebgp = n.peer_asn != local_as;
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
        let role = n.role.map(|r| match r {
            BgpRole::Provider => Role::Provider,
            BgpRole::Rs => Role::Rs,
            BgpRole::RsClient => Role::RsClient,
            BgpRole::Customer => Role::Customer,
            BgpRole::Peer => Role::Peer,
        });
        fsm.role = role;
        fsm.require_role = n.require_role;
        fsm.capabilities = Capabilities {
            four_octet_as: true,
            mp_ipv4: true,
            mp_ipv6,
            route_refresh: true,
            graceful_restart: n.graceful_restart.unwrap_or(c.bgp.graceful_restart),
            extended_next_hop: n.extended_next_hop,
            role: role.map(|r| r as u8),
        };
        PeerSettings {
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
                ipv4_next_hop_v6: false,
                otc: role.filter(|r| r.adds_otc()).map(|_| local_as),
            },
            next_hop_v4_from_session,
            next_hop_v6_from_session,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::duration::Dur;
    use std::time::Duration;

    fn cfg(n: Neighbor) -> Config {
        let mut c = Config::default();
        c.router.asn = 65001;
        c.router.router_id = Some("192.0.2.1".parse().unwrap());
        c.bgp.neighbors = vec![n];
        c
    }

    fn neighbor(peer_asn: u32) -> Neighbor {
        Neighbor {
            name: "n".into(),
            address: Some("192.0.2.2".parse().unwrap()),
            peer_asn,
            ..Neighbor::default()
        }
    }

    /// `c` as the run config, with one `always` VIP, which validation
    /// asks for.
    fn run_config(c: &Config) -> Result<crate::config::RunConfig, Vec<crate::config::ConfigError>> {
        let mut c = c.clone();
        c.schema = "v1".into();
        c.vips = vec![crate::config::Vip {
            name: "v".into(),
            prefix: "10.0.0.1/32"
                .parse::<crate::bgp::types::Prefix>()
                .unwrap()
                .into(),
            always: true,
            ..crate::config::Vip::default()
        }];
        crate::config::RunConfig::new(c)
    }

    /// The settings of `c`'s first neighbor, as the run config has them.
    fn settings(c: &Config) -> PeerSettings {
        run_config(c).unwrap().neighbors[0].settings.clone()
    }

    #[test]
    fn ttl_rules_for_ebgp_multihop_gtsm_and_ibgp() {
        let s = settings(&cfg(neighbor(65000)));
        assert_eq!((s.ttl, s.min_ttl), (Some(1), None));
        let mut n = neighbor(65000);
        n.enable_multihop = true;
        assert_eq!(settings(&cfg(n.clone())).ttl, Some(255));
        n.multihop_ttl = 5;
        assert_eq!(settings(&cfg(n.clone())).ttl, Some(5));
        // RFC 5082: 255 - (hops - 1).
        n.ttl_security = true;
        let s = settings(&cfg(n));
        assert_eq!((s.ttl, s.min_ttl), (Some(255), Some(251)));
        let mut n = neighbor(65000);
        n.ttl_security = true;
        assert_eq!(settings(&cfg(n)).min_ttl, Some(255));
        let s = settings(&cfg(neighbor(65001)));
        assert_eq!((s.ttl, s.min_ttl, s.shape.ebgp), (None, None, false));
    }

    #[test]
    fn next_hops_and_families_from_router_settings() {
        let mut c = cfg(neighbor(65000));
        let s = settings(&c);
        assert_eq!(s.shape.next_hop_v4, Some("192.0.2.1".parse().unwrap()));
        assert_eq!(s.shape.next_hop_v6, None);
        assert!(!s.fsm.capabilities.mp_ipv6);
        c.router.local_address = Some("0.0.0.0".parse().unwrap());
        c.router.local_address_ipv6 = Some("2001:db8::1".parse().unwrap());
        let s = settings(&c);
        assert!(s.next_hop_v4_from_session);
        assert_eq!(s.shape.next_hop_v6, Some("2001:db8::1".parse().unwrap()));
        assert!(s.fsm.capabilities.mp_ipv6);
        c.router.local_address = Some("198.51.100.1".parse().unwrap());
        let s = settings(&c);
        assert_eq!(s.shape.next_hop_v4, Some("198.51.100.1".parse().unwrap()));
        assert_eq!(s.local_address, c.router.local_address);
    }

    #[test]
    fn timers_come_from_the_neighbor_then_bgp() {
        let mut c = cfg(neighbor(65000));
        c.bgp.hold_time = Dur::secs(30);
        c.bgp.keepalive_time = Dur::secs(0);
        let s = settings(&c);
        assert_eq!((s.fsm.hold_time, s.fsm.keepalive_time), (30, None));
        c.bgp.neighbors[0].hold_time = Some(Dur::secs(9));
        c.bgp.neighbors[0].keepalive_time = Some(Dur::secs(2));
        let s = settings(&c);
        assert_eq!((s.fsm.hold_time, s.fsm.keepalive_time), (9, Some(2)));
    }

    #[test]
    fn role_goes_into_the_open_and_otc_towards_customers_peers_and_rs_clients() {
        use crate::config::schema::BgpRole;
        let s = settings(&cfg(neighbor(65000)));
        assert_eq!(
            (s.fsm.role, s.fsm.capabilities.role, s.shape.otc),
            (None, None, None)
        );
        for (r, role, otc) in [
            (BgpRole::Provider, Role::Provider, true),
            (BgpRole::Rs, Role::Rs, true),
            (BgpRole::Peer, Role::Peer, true),
            (BgpRole::Customer, Role::Customer, false),
            (BgpRole::RsClient, Role::RsClient, false),
        ] {
            let mut n = neighbor(65000);
            n.role = Some(r);
            n.require_role = true;
            let s = settings(&cfg(n));
            assert_eq!(s.fsm.role, Some(role));
            assert!(s.fsm.require_role);
            assert_eq!(s.fsm.capabilities.role, Some(role as u8));
            assert_eq!(s.shape.otc, otc.then_some(65001), "{r}");
        }
        // RFC 9234 roles are for eBGP only; strict mode needs a role.
        let mut n = neighbor(65001);
        n.role = Some(BgpRole::Peer);
        let e = run_config(&cfg(n)).unwrap_err();
        let e: Vec<String> = e.iter().map(|e| e.to_string()).collect();
        let want = "bgp.neighbors[0].role: peer is for eBGP sessions only";
        assert!(e.iter().any(|e| e.contains(want)), "{e:?}");
    }

    #[test]
    fn send_hold_time_is_the_rfc_default_unless_set() {
        let mut c = cfg(neighbor(65000));
        // RFC 9687 §3.4: the greater of 8 minutes and twice the hold time.
        assert_eq!(settings(&c).fsm.send_hold_time, Duration::from_secs(480));
        c.bgp.hold_time = Dur::secs(300);
        assert_eq!(settings(&c).fsm.send_hold_time, Duration::from_secs(600));
        c.bgp.neighbors[0].hold_time = Some(Dur::secs(3));
        assert_eq!(settings(&c).fsm.send_hold_time, Duration::from_secs(480));
        c.bgp.neighbors[0].send_hold_time = Some(Dur::secs(4));
        assert_eq!(settings(&c).fsm.send_hold_time, Duration::from_secs(4));
        c.bgp.neighbors[0].send_hold_time = Some(Dur::secs(0));
        assert_eq!(settings(&c).fsm.send_hold_time, Duration::ZERO);
    }

    #[test]
    fn error_wait_bounds_drive_the_fsm_back_off() {
        let ms = Duration::from_millis;
        // (error_wait_min, error_wait_max) configured, or the defaults;
        // the FSM's first IdleHoldTimer, its cap and the stable time.
        let cases = [
            (None, (ms(1_000), ms(60_000), ms(60_000))),
            (
                Some((Dur::ms(250), Dur::secs(5))),
                (ms(250), ms(5_000), ms(5_000)),
            ),
        ];
        for (waits, want) in cases {
            let mut c = cfg(neighbor(65000));
            if let Some((min, max)) = waits {
                c.bgp.neighbors[0].error_wait_min = min;
                c.bgp.neighbors[0].error_wait_max = max;
            }
            let s = settings(&c);
            let got = (
                s.fsm.idle_hold_time,
                s.fsm.idle_hold_time_max,
                s.fsm.stable_time,
            );
            assert_eq!(got, want, "{waits:?}");
        }
    }
}
