//! Types shared by the BGP layers: a prefix and the attributes a VIP route is
//! sent with. They are independent of the wire encoding so that the FSM,
//! RIB-out and the VIP state machine never depend on codec details.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// Address family of a prefix (RFC 4760 AFI; SAFI is always unicast here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Afi {
    Ipv4,
    Ipv6,
}

/// An IP prefix in canonical form: host bits beyond `len` are zero.
/// Ordered IPv4 first, then by address, then by length (the order a derived
/// `Ord` gives, computed on integers: the RIB-outs' B-trees compare
/// prefixes a dozen times per lookup, and `IpAddr`'s own comparison goes
/// through `memcmp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Prefix {
    addr: IpAddr,
    len: u8,
}

impl Prefix {
    fn sort_key(&self) -> (u8, u128, u8) {
        match self.addr {
            IpAddr::V4(a) => (0, u128::from(u32::from(a)), self.len),
            IpAddr::V6(a) => (1, u128::from(a), self.len),
        }
    }
}

impl Ord for Prefix {
    fn cmp(&self, other: &Prefix) -> std::cmp::Ordering {
        self.sort_key().cmp(&other.sort_key())
    }
}

impl PartialOrd for Prefix {
    fn partial_cmp(&self, other: &Prefix) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Why a prefix string or value was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrefixError(pub String);

impl fmt::Display for PrefixError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PrefixError {}

impl Prefix {
    /// Builds a prefix, clearing host bits. Fails when `len` exceeds the family's width.
    pub fn new(addr: IpAddr, len: u8) -> Result<Prefix, PrefixError> {
        let max = match addr {
            IpAddr::V4(_) => 32,
            IpAddr::V6(_) => 128,
        };
        if len > max {
            return Err(PrefixError(format!("prefix length {len} exceeds {max}")));
        }
        Ok(Prefix {
            addr: mask(addr, len),
            len,
        })
    }

    /// The prefix of one address: its /32 or /128.
    pub fn host(addr: IpAddr) -> Prefix {
        let len = match addr {
            IpAddr::V4(_) => 32,
            IpAddr::V6(_) => 128,
        };
        Prefix { addr, len }
    }

    pub fn addr(&self) -> IpAddr {
        self.addr
    }

    pub fn len(&self) -> u8 {
        self.len
    }

    /// Where BIRD 2's routing table walk meets this prefix: its `net_hash`
    /// (lib/net.h, `ip4_hash` / `ip6_hash` of lib/ip.h, the address as
    /// host-order words, `^ pxlen << 26`), whose top bits are the bucket
    /// that the walk of the table visits in ascending order.
    pub fn bird_walk_key(&self) -> u32 {
        let hash = match self.addr {
            IpAddr::V4(a) => u32::from(a).wrapping_mul(2_902_958_171),
            IpAddr::V6(a) => {
                let o = a.octets();
                let x = (0..4).fold(0u32, |x, i| {
                    x ^ u32::from_be_bytes([o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]])
                });
                x ^ (x << 16) ^ (x << 24)
            }
        };
        hash ^ (u32::from(self.len) << 26)
    }

    /// True for a /0 prefix (named so for clippy's `len_without_is_empty`).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn afi(&self) -> Afi {
        match self.addr {
            IpAddr::V4(_) => Afi::Ipv4,
            IpAddr::V6(_) => Afi::Ipv6,
        }
    }

    /// True for a /32 or /128: the prefix is one host address.
    pub fn is_host(&self) -> bool {
        match self.addr {
            IpAddr::V4(_) => self.len == 32,
            IpAddr::V6(_) => self.len == 128,
        }
    }

    /// Whether `ip` lies inside this prefix.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(_), IpAddr::V4(_)) | (IpAddr::V6(_), IpAddr::V6(_)) => {
                mask(ip, self.len) == self.addr
            }
            _ => false,
        }
    }
}

fn mask(addr: IpAddr, len: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let bits = u32::from(a);
            let m = if len == 0 {
                0
            } else {
                u32::MAX << (32 - u32::from(len))
            };
            IpAddr::V4(Ipv4Addr::from(bits & m))
        }
        IpAddr::V6(a) => {
            let bits = u128::from(a);
            let m = if len == 0 {
                0
            } else {
                u128::MAX << (128 - u32::from(len))
            };
            IpAddr::V6(Ipv6Addr::from(bits & m))
        }
    }
}

impl FromStr for Prefix {
    type Err = PrefixError;

    /// Parses `addr/len`; a bare address is a host prefix.
    fn from_str(s: &str) -> Result<Prefix, PrefixError> {
        let (a, l) = match s.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (s, None),
        };
        let addr: IpAddr = a.parse().map_err(|_| not_an_address(a))?;
        let len = match l {
            Some(l) => l
                .parse::<u8>()
                .map_err(|_| PrefixError(format!("{l:?} is not a prefix length")))?,
            None => match addr {
                IpAddr::V4(_) => 32,
                IpAddr::V6(_) => 128,
            },
        };
        Prefix::new(addr, len)
    }
}

/// Why `a` is not an address; an IPv4 address with a leading zero in an
/// octet (`010.10.1.1`) says so: some tools read such an octet as octal
/// (010 is 8), others as decimal, so it is refused rather than guessed.
fn not_an_address(a: &str) -> PrefixError {
    let octets: Vec<&str> = a.split('.').collect();
    let decimal = |o: &&str| !o.is_empty() && o.len() <= 3 && o.bytes().all(|b| b.is_ascii_digit());
    if octets.len() == 4 && octets.iter().all(decimal) {
        if let Some(o) = octets.iter().find(|o| o.len() > 1 && o.starts_with('0')) {
            let plain: Vec<String> = octets
                .iter()
                .map(|o| o.trim_start_matches('0'))
                .map(|o| {
                    if o.is_empty() {
                        "0".into()
                    } else {
                        o.to_string()
                    }
                })
                .collect();
            return PrefixError(format!(
                "{a:?} has a leading zero in {o:?}, which some tools read as octal: write {}",
                plain.join(".")
            ));
        }
    }
    PrefixError(format!("{a:?} is not an IP address"))
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

/// RFC 4271 §5.1.1 ORIGIN. VIP routes are always IGP: pathosd originates them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Origin {
    #[default]
    Igp,
    Egp,
    Incomplete,
}

/// A standard community (RFC 1997) as `asn:value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Community(pub u16, pub u16);

/// The well-known community GRACEFUL_SHUTDOWN, 65535:0 (RFC 8326 §4): a
/// path about to go away; a receiver that honours it lowers its
/// preference (LOCAL_PREF 0) at once, so traffic moves before the route
/// is withdrawn.
pub const GRACEFUL_SHUTDOWN: Community = Community(0xFFFF, 0);

impl Community {
    pub(crate) fn as_u32(self) -> u32 {
        (u32::from(self.0) << 16) | u32::from(self.1)
    }
}

impl fmt::Display for Community {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.0, self.1)
    }
}

/// A large community (RFC 8092) as `global:local1:local2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LargeCommunity(pub u32, pub u32, pub u32);

impl fmt::Display for LargeCommunity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.0, self.1, self.2)
    }
}

/// LOCAL_PREF sent to iBGP peers unless a VIP sets its own: the common
/// default (BIRD's and GoBGP's when none is set).
pub const DEFAULT_LOCAL_PREF: u32 = 100;

/// What pathosd wants a VIP route to carry, before per-peer shaping
/// (own AS prepended for eBGP, next hop of the family, LOCAL_PREF for iBGP).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RouteIntent {
    /// Extra copies of the local AS (eBGP only); 0 = full priority.
    pub as_path_prepend: u8,
    pub communities: Vec<Community>,
    pub large_communities: Vec<LargeCommunity>,
    /// MULTI_EXIT_DISC, to every peer; None: not sent.
    pub med: Option<u32>,
    /// LOCAL_PREF, to iBGP peers only.
    pub local_pref: u32,
}

impl Default for RouteIntent {
    fn default() -> Self {
        RouteIntent {
            as_path_prepend: 0,
            communities: Vec::new(),
            large_communities: Vec::new(),
            med: None,
            local_pref: DEFAULT_LOCAL_PREF,
        }
    }
}

/// The path attributes of one route as sent to one peer: the input of the
/// UPDATE encoder. Routes with equal `PathAttrs` share an UPDATE.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PathAttrs {
    pub origin: Origin,
    /// AS_SEQUENCE, first AS first. Empty for iBGP (RFC 4271 §5.1.2).
    pub as_path: Vec<u32>,
    /// IPv4 routes: the NEXT_HOP; IPv6 routes: the MP_REACH_NLRI next hop.
    pub next_hop: IpAddr,
    pub med: Option<u32>,
    /// Only sent to iBGP peers (RFC 4271 §5.1.5).
    pub local_pref: Option<u32>,
    pub communities: Vec<Community>,
    pub large_communities: Vec<LargeCommunity>,
    /// RFC 9234 §5 ONLY_TO_CUSTOMER (OTC): an AS number.
    pub otc: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bird_walk_key_is_birds_net_hash() {
        // Worked by hand from lib/ip.h and lib/net.h: 0x0a000001 *
        // 2902958171 ^ 32 << 26, and for IPv6 the words' xor x ^ x << 16 ^
        // x << 24 (128 << 26 is 0 in 32 bits).
        let key = |s: &str| s.parse::<Prefix>().unwrap().bird_walk_key();
        assert_eq!(key("10.0.0.1/32"), 0xbb07_a05b);
        assert_eq!(key("2001:db8::1/128"), 0x94b8_0db9);
    }

    #[test]
    fn a_leading_zero_in_an_octet_is_named() {
        assert_eq!(
            "010.10.1.1/32".parse::<Prefix>().unwrap_err().to_string(),
            "\"010.10.1.1\" has a leading zero in \"010\", which some tools read as octal: write 10.10.1.1"
        );
        assert_eq!(
            "10.0.00.1".parse::<Prefix>().unwrap_err().to_string(),
            "\"10.0.00.1\" has a leading zero in \"00\", which some tools read as octal: write 10.0.0.1"
        );
        assert_eq!(
            "10.0.1/32".parse::<Prefix>().unwrap_err().to_string(),
            "\"10.0.1\" is not an IP address"
        );
        assert_eq!(
            "10.0.0.0/8".parse::<Prefix>().unwrap().to_string(),
            "10.0.0.0/8"
        );
    }

    proptest::proptest! {
        /// The integer comparison orders like the (address, length) pair.
        #[test]
        fn prefix_order_is_address_then_length(
            a in proptest::prelude::any::<(bool, u128, u8)>(),
            b in proptest::prelude::any::<(bool, u128, u8)>(),
        ) {
            let mk = |(v6, bits, len): (bool, u128, u8)| {
                let addr = if v6 {
                    IpAddr::V6(bits.into())
                } else {
                    IpAddr::V4((bits as u32).into())
                };
                Prefix { addr, len }
            };
            let (pa, pb) = (mk(a), mk(b));
            proptest::prop_assert_eq!(pa.cmp(&pb), (pa.addr, pa.len).cmp(&(pb.addr, pb.len)));
        }
    }

    #[test]
    fn prefix_parse_canonicalizes_host_bits() {
        let p: Prefix = "10.0.0.1/24".parse().unwrap();
        assert_eq!(p.to_string(), "10.0.0.0/24");
        let q: Prefix = "2001:db8::1/64".parse().unwrap();
        assert_eq!(q.to_string(), "2001:db8::/64");
        assert!("10.0.0.1/33".parse::<Prefix>().is_err());
        assert!("nope/8".parse::<Prefix>().is_err());
        assert_eq!("10.1.1.1".parse::<Prefix>().unwrap().len(), 32);
        assert_eq!(
            "0.0.0.0/0".parse::<Prefix>().unwrap().to_string(),
            "0.0.0.0/0"
        );
    }

    #[test]
    fn contains_respects_family() {
        let p: Prefix = "10.0.0.0/8".parse().unwrap();
        assert!(p.contains("10.2.3.4".parse().unwrap()));
        assert!(!p.contains("11.0.0.1".parse().unwrap()));
        assert!(!p.contains("::1".parse().unwrap()));
    }

    #[test]
    fn community_packs_high_half_first() {
        assert_eq!(Community(65001, 666).as_u32(), 0xFDE9_029A);
    }
}
