//! The local address guard (`require_local_address`, `local_interface`): a
//! route for an address the host does not own black-holes traffic, so while
//! the VIP address is not configured locally every check of the VIP fails
//! with an explicit detail, and the real probe runs only once it is.

use crate::bgp::types::Prefix;
use crate::sys::IfAddr;
use std::net::IpAddr;

/// What the guard requires of the local addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LocalAddressGuard {
    /// Every prefix of the VIP: each must have its address here, since
    /// each is announced and draws its traffic here.
    pub prefixes: Vec<Prefix>,
    /// Only this interface counts; any interface when None.
    pub interface: Option<String>,
}

impl LocalAddressGuard {
    /// The guard a VIP's config asks for, if any.
    pub(crate) fn from_vip(vip: &crate::config::VipSpec) -> Option<LocalAddressGuard> {
        let wanted = vip.local_address.as_ref()?;
        Some(LocalAddressGuard {
            prefixes: [&[vip.prefix][..], &vip.more_prefixes].concat(),
            interface: wanted.interface.clone(),
        })
    }

    /// Pure decision over a list of addresses: Ok when, for each prefix of
    /// the VIP, an address of it (its host address, or one inside a
    /// shorter prefix) is on the required interface; Err with the detail
    /// of the first one without, otherwise.
    pub(crate) fn evaluate(&self, addrs: &[IfAddr]) -> Result<(), String> {
        let place = || match &self.interface {
            Some(i) => format!("interface {i}"),
            None => "a local interface".to_string(),
        };
        for prefix in &self.prefixes {
            let wanted = |a: &IpAddr| {
                if prefix.is_host() {
                    *a == prefix.addr()
                } else {
                    prefix.contains(*a)
                }
            };
            let found = addrs.iter().any(|a| {
                wanted(&a.addr)
                    && self
                        .interface
                        .as_deref()
                        .is_none_or(|want| a.interface == want)
            });
            if found {
                continue;
            }
            return Err(if prefix.is_host() {
                format!(
                    "VIP address {} is not configured on {}",
                    prefix.addr(),
                    place()
                )
            } else {
                format!(
                    "no address inside VIP prefix {prefix} is configured on {}",
                    place()
                )
            });
        }
        Ok(())
    }

    /// Reads the interfaces and decides; a failure to read them fails closed.
    pub fn check(&self) -> Result<(), String> {
        match crate::sys::interface_addresses() {
            Ok(addrs) => self.evaluate(&addrs),
            Err(e) => Err(format!("reading local addresses: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ifa(i: &str, a: &str) -> IfAddr {
        IfAddr {
            interface: i.into(),
            addr: a.parse().unwrap(),
        }
    }

    fn guard(p: &str, i: Option<&str>) -> LocalAddressGuard {
        LocalAddressGuard {
            prefixes: p.split(',').map(|x| x.parse().unwrap()).collect(),
            interface: i.map(str::to_string),
        }
    }

    #[test]
    fn host_vip_must_be_configured_on_the_named_interface() {
        let addrs = [ifa("lo", "127.0.0.1"), ifa("dummy-vip", "10.10.1.1")];
        assert_eq!(guard("10.10.1.1/32", None).evaluate(&addrs), Ok(()));
        assert_eq!(
            guard("10.10.1.1/32", Some("dummy-vip")).evaluate(&addrs),
            Ok(())
        );
        assert_eq!(
            guard("10.10.1.1/32", Some("lo")).evaluate(&addrs),
            Err("VIP address 10.10.1.1 is not configured on interface lo".into())
        );
        assert_eq!(
            guard("10.10.1.2/32", None).evaluate(&addrs),
            Err("VIP address 10.10.1.2 is not configured on a local interface".into())
        );
        assert!(guard("2001:db8::1/128", None).evaluate(&addrs).is_err());
    }

    #[test]
    fn shorter_prefix_needs_an_address_inside_it() {
        let addrs = [ifa("br-lan", "192.168.1.1")];
        assert_eq!(guard("192.168.1.0/24", None).evaluate(&addrs), Ok(()));
        assert_eq!(
            guard("192.168.2.0/24", None).evaluate(&addrs),
            Err(
                "no address inside VIP prefix 192.168.2.0/24 is configured on a local interface"
                    .into()
            )
        );
    }

    #[test]
    fn every_prefix_of_the_vip_must_be_local() {
        let addrs = [ifa("lo", "10.10.1.1"), ifa("lo", "fd00::1")];
        assert_eq!(
            guard("10.10.1.1/32,fd00::1/128", None).evaluate(&addrs),
            Ok(())
        );
        assert_eq!(
            guard("10.10.1.1/32,fd00::2/128", None).evaluate(&addrs),
            Err("VIP address fd00::2 is not configured on a local interface".into())
        );
    }

    #[test]
    fn reads_real_interfaces() {
        assert_eq!(guard("127.0.0.1/32", Some("lo")).check(), Ok(()));
        assert!(guard("127.254.254.254/32", Some("lo")).check().is_err());
    }
}
