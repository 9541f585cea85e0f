//! RIB-out: what pathosd wants announced versus what each peer has been sent.
//!
//! [`RibOut`] holds the desired routes (one [`RouteIntent`] per VIP prefix):
//! the daemon's owner keeps the originated table, and each session builds
//! its own from the route batches the owner sends it. Each peer has an [`AdjRibOut`] (RFC 4271 §3.2
//! Adj-RIB-Out) that remembers the [`PathAttrs`] it last sent per prefix and
//! turns the desired table into the minimal [`Changes`] for that peer. Both
//! are pure: the driver hands `Changes` to the UPDATE encoder.
//!
//! * **Shaping** ([`PeerShape`]): eBGP peers get AS_PATH = the local AS
//!   repeated `1 + as_path_prepend` times and no LOCAL_PREF; iBGP peers get an
//!   empty AS_PATH (RFC 4271 §5.1.2: "the originating speaker includes an
//!   empty AS_PATH attribute in all UPDATE messages sent to internal peers")
//!   and LOCAL_PREF 100 (RFC 4271 §5.1.5: LOCAL_PREF "SHALL be included in
//!   all UPDATE messages that a given BGP speaker sends to other internal
//!   peers" and a speaker "MUST NOT include this attribute in UPDATE messages
//!   it sends to external peers"); a configured prepend cannot apply there
//!   and is reported once per peer.
//!   The next hop is the local address of the prefix's family; communities
//!   and large communities go to both kinds of peer.
//! * **Unsendable routes**: a prefix whose family the session did not
//!   negotiate, or with no local next hop of its family, is not sent and is
//!   reported once per session.
//! * **Minimal diffs**: a changed route (e.g. pessimized: longer AS_PATH,
//!   extra communities) is one announcement that implicitly replaces the old
//!   one (RFC 4271 §3.1), never a withdraw followed by an announce. A sync
//!   with nothing changed returns empty [`Changes`].
//! * **End-of-RIB gating**: after a session comes up, everything desired is
//!   sent, but the End-of-RIB marker (RFC 4724 §2) for each negotiated family
//!   is held back until [`RibOut::mark_initial_done`]: the daemon calls it once
//!   the first health evaluation of every VIP is in, so a restarting pathosd
//!   does not tell a graceful-restart peer "that is all" before it knows
//!   which VIPs are healthy. The next [`AdjRibOut::sync`] then emits it.
//! * **Session loss** forgets what was sent; the desired table stays and is
//!   sent again in full on the next Established.

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use super::types::{Afi, Origin, PathAttrs, Prefix, RouteIntent};

/// LOCAL_PREF sent to iBGP peers (the common default, as GoBGP adds it).
pub(crate) const IBGP_LOCAL_PREF: u32 = 100;

/// The originated routes: what the engine decided, one [`RouteIntent`] per
/// VIP prefix, and whether the first evaluation of every VIP is in. The
/// daemon's owner keeps the one table, which its sessions plan from
/// ([`super::session::SessionCore::with_shared_rib`]; a session of the
/// replay tests keeps one its route batches built). The intents are shared
/// `Arc`s: nearly every VIP has one of a few intents, and the table and the
/// route batches hold pointers to the same ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RibOut {
    desired: BTreeMap<Prefix, Arc<RouteIntent>>,
    initial_done: bool,
}

impl RibOut {
    pub fn new() -> RibOut {
        RibOut::default()
    }

    /// Sets (`Some`) or removes (`None`) the desired route for `prefix`.
    /// Returns whether the table changed, i.e. whether peers need a sync.
    pub fn set_desired(&mut self, prefix: Prefix, intent: Option<RouteIntent>) -> bool {
        self.set_desired_shared(prefix, intent.map(Arc::new))
    }

    /// [`RibOut::set_desired`] with an intent shared with other tables.
    pub fn set_desired_shared(&mut self, prefix: Prefix, intent: Option<Arc<RouteIntent>>) -> bool {
        match (intent, self.desired.entry(prefix)) {
            (Some(i), Entry::Occupied(mut e)) => {
                if **e.get() == *i {
                    return false;
                }
                e.insert(i);
                true
            }
            (Some(i), Entry::Vacant(e)) => {
                e.insert(i);
                true
            }
            (None, Entry::Occupied(e)) => {
                e.remove();
                true
            }
            (None, Entry::Vacant(_)) => false,
        }
    }

    /// Applies a batch of route changes in order, as
    /// [`RibOut::set_desired_shared`] one by one, and calls `changed` with
    /// each prefix whose desired route changed and its new route. Into an
    /// empty table (the start, a new session's first batch) a batch of
    /// announcements only is built in bulk: B-tree nodes filled one route
    /// after the other in prefix order are left about half full when they
    /// split, ≈ 53 bytes a route against ≈ 28 in full nodes (10,000 routes:
    /// 0.5 MB less anonymous memory for the owner's and the session's
    /// tables).
    pub fn set_desired_batch(
        &mut self,
        batch: impl IntoIterator<Item = (Prefix, Option<Arc<RouteIntent>>)>,
        mut changed: impl FnMut(Prefix, Option<&Arc<RouteIntent>>),
    ) {
        if !self.desired.is_empty() {
            for (prefix, intent) in batch {
                if self.set_desired_shared(prefix, intent.clone()) {
                    changed(prefix, intent.as_ref());
                }
            }
            return;
        }
        let all: Vec<(Prefix, Option<Arc<RouteIntent>>)> = batch.into_iter().collect();
        if all.iter().any(|(_, intent)| intent.is_none()) {
            // A withdraw in the batch: one by one (rare into an empty table).
            for (prefix, intent) in all {
                if self.set_desired_shared(prefix, intent.clone()) {
                    changed(prefix, intent.as_ref());
                }
            }
            return;
        }
        // Only announcements: `collect` sorts them (stable), keeps the last
        // of a prefix given twice, as one by one would, and builds full
        // nodes in one pass, reusing the vector's buffer for the pairs.
        self.desired = all
            .into_iter()
            .filter_map(|(p, intent)| Some((p, intent?)))
            .collect();
        for (p, intent) in &self.desired {
            changed(*p, Some(intent));
        }
    }

    /// Withdraws every route at once (the daemon's stop).
    pub fn clear(&mut self) {
        self.desired.clear();
    }

    pub fn desired(&self) -> &BTreeMap<Prefix, Arc<RouteIntent>> {
        &self.desired
    }

    /// The daemon's first evaluation of every VIP is complete: End-of-RIB may
    /// now be sent. Sync every established peer afterwards.
    pub fn mark_initial_done(&mut self) {
        self.initial_done = true;
    }

    pub fn initial_done(&self) -> bool {
        self.initial_done
    }
}

/// How routes are shaped for one peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerShape {
    pub ebgp: bool,
    pub local_as: u32,
    /// NEXT_HOP of IPv4 routes (`router.local_address`, else router_id).
    pub next_hop_v4: Option<Ipv4Addr>,
    /// MP_REACH_NLRI next hop of IPv6 routes (`router.local_address_ipv6`).
    pub next_hop_v6: Option<Ipv6Addr>,
    /// Families negotiated on the current session (set by
    /// [`AdjRibOut::on_established`]).
    pub families: Vec<Afi>,
}

/// Something the operator should hear about; not an error for the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Warning {
    /// iBGP peer: the route's AS-path prepend was not applied (reported once
    /// per peer, for the first such prefix).
    PrependIgnoredOnIbgp { prefix: Prefix, prepend: u8 },
    /// The session did not negotiate the prefix's family: not sent.
    FamilyNotNegotiated { prefix: Prefix },
    /// No local next hop of the prefix's family is configured: not sent.
    NoNextHop { prefix: Prefix },
}

/// What to send to one peer, for the UPDATE encoder. Routes with the same
/// attributes share one [`Arc`]: shaping 10,000 routes of one VIP state
/// allocates one `PathAttrs`, not 10,000.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Routes to announce (new, or replacing what was sent), by prefix.
    pub announce: Vec<(Prefix, Arc<PathAttrs>)>,
    /// Routes to withdraw, by prefix.
    pub withdraw: Vec<Prefix>,
    /// Families to send an End-of-RIB marker for, after the routes above.
    pub end_of_rib: Vec<Afi>,
    pub warnings: Vec<Warning>,
}

impl Changes {
    /// Nothing to send (warnings aside).
    pub fn is_empty(&self) -> bool {
        self.announce.is_empty() && self.withdraw.is_empty() && self.end_of_rib.is_empty()
    }
}

/// Which prefixes a planning pass looks at.
#[derive(Debug, Clone, Copy)]
pub enum Scope<'a> {
    /// The whole table: the session just came up, or the owner's table was
    /// filled from empty or emptied.
    All,
    /// Only these: the prefixes route batches changed since the last pass.
    Changed(&'a PrefixSet),
}

/// A set of prefixes: a sorted `Vec` without duplicates, searched by
/// bisection (O(log n), as a B-tree). Sets are filled many prefixes at a
/// time ([`PrefixSet::extend`]: appended, then sorted once), never by
/// inserting into the middle one by one, so a batch of 10,000 costs
/// n log n, not n². It replaces `BTreeSet<Prefix>`, whose node code
/// (insertion, removal, rebalancing) was compiled for this one key type
///; a `Vec` also takes less memory than B-tree nodes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PrefixSet(Vec<Prefix>);

impl PrefixSet {
    pub fn new() -> PrefixSet {
        PrefixSet::default()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn contains(&self, prefix: &Prefix) -> bool {
        self.0.binary_search(prefix).is_ok()
    }

    /// The prefixes in ascending order.
    pub fn iter(&self) -> std::slice::Iter<'_, Prefix> {
        self.0.iter()
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// Adds `prefixes` (in any order, repeats allowed): appended, then the
    /// whole set sorted and its repeats dropped, once per call.
    pub fn extend(&mut self, prefixes: impl IntoIterator<Item = Prefix>) {
        let before = self.0.len();
        self.0.extend(prefixes);
        if self.0.len() != before {
            self.0.sort_unstable();
            self.0.dedup();
        }
    }

    /// Keeps the prefixes for which `keep` says true.
    pub fn retain(&mut self, keep: impl FnMut(&Prefix) -> bool) {
        self.0.retain(keep);
    }
}

impl FromIterator<Prefix> for PrefixSet {
    fn from_iter<I: IntoIterator<Item = Prefix>>(iter: I) -> PrefixSet {
        let mut s = PrefixSet::new();
        s.extend(iter);
        s
    }
}

/// Shaped attributes of the intents seen in one pass: equal intents share
/// one `Arc<PathAttrs>`. A VIP has at most a few states (announced,
/// pessimized), so a short list searched linearly is enough; past
/// [`SHAPE_CACHE`] distinct intents the rest are shaped one by one.
/// `reported` and `unreported` collect the pass's changes to
/// [`AdjRibOut`]'s `reported` set, applied at its end in one go (each
/// prefix is planned at most once a pass): a pass that withdraws 10,000
/// unsendable prefixes does not remove them from a sorted `Vec` one by one.
#[derive(Default)]
struct ShapeCache {
    shaped: Vec<(RouteIntent, Arc<PathAttrs>)>,
    reported: Vec<Prefix>,
    unreported: Vec<Prefix>,
}

const SHAPE_CACHE: usize = 16;

/// One peer's Adj-RIB-Out.
#[derive(Debug, Clone)]
pub struct AdjRibOut {
    shape: PeerShape,
    established: bool,
    sent: BTreeMap<Prefix, Arc<PathAttrs>>,
    /// End-of-RIB not yet sent on this session.
    eor_pending: bool,
    prepend_warned: bool,
    /// Unsendable prefixes already reported on this session.
    reported: PrefixSet,
}

impl AdjRibOut {
    pub fn new(shape: PeerShape) -> AdjRibOut {
        AdjRibOut {
            shape,
            established: false,
            sent: BTreeMap::new(),
            eor_pending: false,
            prepend_warned: false,
            reported: PrefixSet::new(),
        }
    }

    pub fn shape(&self) -> &PeerShape {
        &self.shape
    }

    /// Replaces the shaping (e.g. the next hop once the session's local
    /// address is known, when `local_address` is unspecified). While
    /// established, the next [`AdjRibOut::sync`] re-announces every route
    /// whose attributes changed. `families` is kept from the session.
    pub fn set_shape(&mut self, shape: PeerShape) {
        let families = std::mem::take(&mut self.shape.families);
        self.shape = PeerShape { families, ..shape };
    }

    pub fn is_established(&self) -> bool {
        self.established
    }

    /// What the peer currently has from us (for /status and metrics).
    pub fn advertised(&self) -> &BTreeMap<Prefix, Arc<PathAttrs>> {
        &self.sent
    }

    /// The session reached Established with `families`: everything desired,
    /// then End-of-RIB per family once the initial evaluation is done.
    pub fn on_established(&mut self, families: &[Afi], desired: &RibOut) -> Changes {
        self.establish(families);
        self.sync(desired)
    }

    /// The session reached Established with `families`: nothing is sent
    /// yet; [`AdjRibOut::plan_all`] then computes the full table.
    pub fn establish(&mut self, families: &[Afi]) {
        self.shape.families = families.to_vec();
        self.established = true;
        self.sent.clear();
        self.reported.clear();
        self.eor_pending = true;
    }

    /// The session went down: the peer dropped everything we sent.
    pub fn on_session_down(&mut self) {
        self.established = false;
        self.sent.clear();
        self.reported.clear();
        self.eor_pending = false;
    }

    /// The minimal changes that bring the peer to `desired`, recorded as
    /// sent. Empty while the session is down (`on_established` sends
    /// everything).
    pub fn sync(&mut self, desired: &RibOut) -> Changes {
        let changes = self.plan_all(desired);
        self.commit(&changes);
        changes
    }

    /// The minimal changes that bring the peer to `desired` over the whole
    /// table, not yet recorded: the caller encodes them and then
    /// [`AdjRibOut::commit`]s what it could send.
    pub fn plan_all(&mut self, desired: &RibOut) -> Changes {
        self.plan_in(&desired.desired, desired.initial_done, Scope::All)
    }

    /// Like [`AdjRibOut::plan_all`], but only for `prefixes` (the ones
    /// route batches changed since the last pass): a batch of one route
    /// costs one route, not the table.
    pub fn plan(&mut self, desired: &RibOut, prefixes: &PrefixSet) -> Changes {
        self.plan_in(
            &desired.desired,
            desired.initial_done,
            Scope::Changed(prefixes),
        )
    }

    /// The changes that bring the peer to `desired` for the prefixes of
    /// `scope`, not yet recorded. The table and the End-of-RIB flag are
    /// apart: a session plans from the owner's table with the flag its own
    /// messages set.
    pub fn plan_in(
        &mut self,
        desired: &BTreeMap<Prefix, Arc<RouteIntent>>,
        initial_done: bool,
        scope: Scope<'_>,
    ) -> Changes {
        let mut changes = Changes::default();
        if !self.established {
            return changes;
        }
        if self.sent.is_empty() {
            // The peer has nothing yet: at most one announcement per
            // planned prefix, room for them at once instead of growth by
            // doubling (10,000 routes kept room for 16,384 at the daemon's
            // peak).
            let n = match scope {
                Scope::All => desired.len(),
                Scope::Changed(prefixes) => prefixes.len(),
            };
            changes.announce.reserve_exact(n);
        }
        let mut cache = ShapeCache::default();
        match scope {
            Scope::All => {
                // What left the table goes first, then the table in order.
                for prefix in self.sent.keys() {
                    if !desired.contains_key(prefix) {
                        changes.withdraw.push(*prefix);
                    }
                }
                cache.unreported.extend(
                    self.reported
                        .iter()
                        .filter(|p| !desired.contains_key(*p))
                        .copied(),
                );
                for (prefix, intent) in desired {
                    self.plan_one(*prefix, intent, &mut cache, &mut changes);
                }
            }
            Scope::Changed(prefixes) => {
                for prefix in prefixes.iter() {
                    match desired.get(prefix) {
                        Some(intent) => self.plan_one(*prefix, intent, &mut cache, &mut changes),
                        None => {
                            if self.reported.contains(prefix) {
                                cache.unreported.push(*prefix);
                            }
                            if self.sent.contains_key(prefix) {
                                changes.withdraw.push(*prefix);
                            }
                        }
                    }
                }
            }
        }
        // Unsendable prefixes that left the table may be reported again if
        // they come back. `unreported` is in ascending order (the prefixes
        // are) and apart from `reported` (a prefix is either gone or still
        // desired).
        if !cache.unreported.is_empty() {
            let gone = &cache.unreported;
            self.reported.retain(|p| gone.binary_search(p).is_err());
        }
        self.reported.extend(cache.reported);
        self.plan_end_of_rib(initial_done, &mut changes);
        changes
    }

    /// One prefix still in the table: announced if the peer lacks it or
    /// has other attributes, withdrawn if it cannot be sent now.
    fn plan_one(
        &mut self,
        prefix: Prefix,
        intent: &RouteIntent,
        cache: &mut ShapeCache,
        changes: &mut Changes,
    ) {
        let want = self.shape_cached(prefix, intent, cache, &mut changes.warnings);
        match (want, self.sent.get(&prefix)) {
            (Some(w), Some(s)) if **s == *w => {}
            (Some(w), _) => changes.announce.push((prefix, w)),
            // Desired but unsendable now (e.g. the next hop went away):
            // what the peer has must go.
            (None, Some(_)) => changes.withdraw.push(prefix),
            (None, None) => {}
        }
    }

    fn plan_end_of_rib(&mut self, initial_done: bool, changes: &mut Changes) {
        if self.eor_pending && initial_done {
            self.eor_pending = false;
            changes.end_of_rib = self.shape.families.clone();
        }
    }

    /// Records `changes` as sent: what the peer has from us now.
    pub fn commit(&mut self, changes: &Changes) {
        self.commit_taking(changes.announce.clone(), &changes.withdraw);
    }

    /// [`AdjRibOut::commit`] of `announce` and `withdraw`, taking the
    /// announcements: a new session's whole table is built from their
    /// buffer in place. `BTreeMap`'s bulk build first collects its input
    /// into a `Vec`; from a borrowed list that was a second copy of the
    /// table's pairs (10,000 routes: 320 KB) beside the list and the new
    /// table, at the daemon's peak.
    pub fn commit_taking(&mut self, announce: Vec<(Prefix, Arc<PathAttrs>)>, withdraw: &[Prefix]) {
        if !self.established {
            return;
        }
        if self.sent.is_empty() {
            // The whole table of a new session: one bulk build (the
            // announcements are in prefix order) instead of a search per
            // route.
            self.sent = announce.into_iter().collect();
            return;
        }
        for p in withdraw {
            self.sent.remove(p);
        }
        for (p, a) in announce {
            self.sent.insert(p, a);
        }
    }

    /// RFC 2918 §4: on a ROUTE-REFRESH "the BGP speaker may re-advertise to
    /// that peer the Adj-RIB-Out of the <AFI, SAFI> carried in the message".
    pub fn route_refresh(&self, afi: Afi) -> Changes {
        Changes {
            announce: self
                .sent
                .iter()
                .filter(|(p, _)| p.afi() == afi)
                .map(|(p, a)| (*p, a.clone()))
                .collect(),
            ..Changes::default()
        }
    }

    fn shape_cached(
        &mut self,
        prefix: Prefix,
        intent: &RouteIntent,
        cache: &mut ShapeCache,
        warnings: &mut Vec<Warning>,
    ) -> Option<Arc<PathAttrs>> {
        // The family and next hop checks depend on the prefix, not the
        // intent: they run for every route (and report each prefix once).
        let afi = prefix.afi();
        if !self.shape.families.contains(&afi) {
            if !self.reported.contains(&prefix) {
                cache.reported.push(prefix);
                warnings.push(Warning::FamilyNotNegotiated { prefix });
            }
            return None;
        }
        let next_hop = match afi {
            Afi::Ipv4 => self.shape.next_hop_v4.map(IpAddr::V4),
            Afi::Ipv6 => self.shape.next_hop_v6.map(IpAddr::V6),
        };
        let Some(next_hop) = next_hop else {
            if !self.reported.contains(&prefix) {
                cache.reported.push(prefix);
                warnings.push(Warning::NoNextHop { prefix });
            }
            return None;
        };
        if let Some((_, a)) = cache
            .shaped
            .iter()
            .find(|(i, a)| i == intent && a.next_hop == next_hop)
        {
            return Some(a.clone());
        }
        let a = Arc::new(self.shape_route(prefix, intent, next_hop, warnings));
        if cache.shaped.len() < SHAPE_CACHE {
            cache.shaped.push((intent.clone(), a.clone()));
        }
        Some(a)
    }

    /// The attributes `intent` is sent with to this peer.
    fn shape_route(
        &mut self,
        prefix: Prefix,
        intent: &RouteIntent,
        next_hop: IpAddr,
        warnings: &mut Vec<Warning>,
    ) -> PathAttrs {
        let (as_path, local_pref) = if self.shape.ebgp {
            // RFC 4271 §5.1.2: "the originating speaker includes its own AS
            // number in a path segment, of type AS_SEQUENCE, in the AS_PATH
            // attribute of all UPDATE messages sent to an external peer";
            // the prepend adds copies of it.
            let copies = 1 + usize::from(intent.as_path_prepend);
            (vec![self.shape.local_as; copies], None)
        } else {
            if intent.as_path_prepend > 0 && !self.prepend_warned {
                self.prepend_warned = true;
                warnings.push(Warning::PrependIgnoredOnIbgp {
                    prefix,
                    prepend: intent.as_path_prepend,
                });
            }
            (Vec::new(), Some(IBGP_LOCAL_PREF))
        };
        PathAttrs {
            origin: Origin::Igp,
            as_path,
            next_hop,
            med: None,
            local_pref,
            communities: intent.communities.clone(),
            large_communities: intent.large_communities.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bgp::types::{Community, LargeCommunity};

    const AS: u32 = 65001;

    fn p(s: &str) -> Prefix {
        s.parse().unwrap()
    }

    fn nh4() -> Ipv4Addr {
        Ipv4Addr::new(127, 0, 0, 1)
    }

    fn nh6() -> Ipv6Addr {
        "2001:db8::1".parse().unwrap()
    }

    fn shape(ebgp: bool) -> PeerShape {
        PeerShape {
            ebgp,
            local_as: AS,
            next_hop_v4: Some(nh4()),
            next_hop_v6: Some(nh6()),
            families: Vec::new(),
        }
    }

    fn announced() -> RouteIntent {
        RouteIntent::default()
    }

    fn pessimized() -> RouteIntent {
        RouteIntent {
            as_path_prepend: 6,
            communities: vec![Community(65001, 666)],
            large_communities: vec![LargeCommunity(65001, 1, 2)],
        }
    }

    fn ebgp_attrs(copies: usize, intent: &RouteIntent, nh: IpAddr) -> Arc<PathAttrs> {
        Arc::new(PathAttrs {
            origin: Origin::Igp,
            as_path: vec![AS; copies],
            next_hop: nh,
            med: None,
            local_pref: None,
            communities: intent.communities.clone(),
            large_communities: intent.large_communities.clone(),
        })
    }

    fn v4() -> IpAddr {
        IpAddr::V4(nh4())
    }

    /// A RibOut with the initial evaluation done and `routes` desired.
    fn rib(routes: &[(&str, RouteIntent)]) -> RibOut {
        let mut r = RibOut::new();
        for (prefix, intent) in routes {
            r.set_desired(p(prefix), Some(intent.clone()));
        }
        r.mark_initial_done();
        r
    }

    /// A batch into an empty table (built in bulk) and into a filled one
    /// (one by one) leave the table a route at a time would, in prefix
    /// order, and report each prefix that changed with its new route.
    #[test]
    fn a_batch_is_the_changes_one_by_one() {
        let (a, pz) = (Arc::new(announced()), Arc::new(pessimized()));
        let batch = |items: &[(&str, Option<&Arc<RouteIntent>>)]| -> Vec<_> {
            items.iter().map(|(s, i)| (p(s), i.cloned())).collect()
        };
        // Out of order and a prefix replaced in the batch: built in bulk.
        let first = batch(&[
            ("10.0.0.3/32", Some(&a)),
            ("2001:db8::1/128", Some(&a)),
            ("10.0.0.1/32", Some(&a)),
            ("10.0.0.3/32", Some(&pz)),
        ]);
        let mut bulk = RibOut::new();
        let mut changed = Vec::new();
        bulk.set_desired_batch(first.clone(), |p, i| changed.push((p, i.cloned())));
        let mut one = RibOut::new();
        for (prefix, intent) in first {
            one.set_desired_shared(prefix, intent);
        }
        assert_eq!(bulk, one);
        let table: Vec<_> = bulk
            .desired()
            .iter()
            .map(|(p, i)| (*p, (**i).clone()))
            .collect();
        assert_eq!(
            table,
            [
                (p("10.0.0.1/32"), announced()),
                (p("10.0.0.3/32"), pessimized()),
                (p("2001:db8::1/128"), announced()),
            ]
        );
        assert_eq!(
            changed,
            [
                (p("10.0.0.1/32"), Some(a.clone())),
                (p("10.0.0.3/32"), Some(pz.clone())),
                (p("2001:db8::1/128"), Some(a.clone())),
            ]
        );
        // Into an empty table with withdraws (one set and removed again, one
        // the table never had): one by one.
        let mut empty = RibOut::new();
        changed.clear();
        empty.set_desired_batch(
            batch(&[
                ("10.0.0.2/32", Some(&a)),
                ("10.0.0.2/32", None),
                ("10.0.0.9/32", None),
                ("10.0.0.4/32", Some(&pz)),
            ]),
            |p, i| changed.push((p, i.cloned())),
        );
        assert_eq!(
            changed,
            [
                (p("10.0.0.2/32"), Some(a.clone())),
                (p("10.0.0.2/32"), None),
                (p("10.0.0.4/32"), Some(pz.clone())),
            ]
        );
        assert_eq!(
            empty.desired().keys().copied().collect::<Vec<_>>(),
            [p("10.0.0.4/32")]
        );
        // Into a filled table: replace, withdraw, withdraw of an absent
        // prefix (no change), the same route again (no change), a new one.
        let second = batch(&[
            ("10.0.0.1/32", Some(&pz)),
            ("10.0.0.3/32", None),
            ("10.0.0.7/32", None),
            ("2001:db8::1/128", Some(&a)),
            ("10.0.0.0/24", Some(&a)),
        ]);
        changed.clear();
        bulk.set_desired_batch(second.clone(), |p, i| changed.push((p, i.cloned())));
        for (prefix, intent) in second {
            one.set_desired_shared(prefix, intent);
        }
        assert_eq!(bulk, one);
        assert_eq!(
            changed,
            [
                (p("10.0.0.1/32"), Some(pz.clone())),
                (p("10.0.0.3/32"), None),
                (p("10.0.0.0/24"), Some(a.clone())),
            ]
        );
        assert_eq!(
            bulk.desired().keys().copied().collect::<Vec<_>>(),
            [p("10.0.0.0/24"), p("10.0.0.1/32"), p("2001:db8::1/128")]
        );
    }

    #[test]
    fn announce_pessimize_in_place_and_withdraw() {
        let mut rib = rib(&[]);
        let mut peer = AdjRibOut::new(shape(true));
        let up = peer.on_established(&[Afi::Ipv4], &rib);
        assert_eq!(
            up,
            Changes {
                end_of_rib: vec![Afi::Ipv4],
                ..Changes::default()
            }
        );

        assert!(rib.set_desired(p("10.100.1.1/32"), Some(announced())));
        let c = peer.sync(&rib);
        assert_eq!(
            c.announce,
            vec![(p("10.100.1.1/32"), ebgp_attrs(1, &announced(), v4()))]
        );
        assert!(c.withdraw.is_empty() && c.end_of_rib.is_empty());

        // Pessimize: one replacing announcement, no withdraw in between.
        rib.set_desired(p("10.100.1.1/32"), Some(pessimized()));
        let c = peer.sync(&rib);
        assert_eq!(
            c,
            Changes {
                announce: vec![(p("10.100.1.1/32"), ebgp_attrs(7, &pessimized(), v4()))],
                ..Changes::default()
            }
        );

        rib.set_desired(p("10.100.1.1/32"), None);
        let c = peer.sync(&rib);
        assert_eq!(
            c,
            Changes {
                withdraw: vec![p("10.100.1.1/32")],
                ..Changes::default()
            }
        );
        assert!(peer.advertised().is_empty());
    }

    #[test]
    fn sync_without_changes_emits_nothing() {
        let mut rib = rib(&[
            ("10.100.1.1/32", announced()),
            ("10.100.2.0/24", pessimized()),
        ]);
        let mut peer = AdjRibOut::new(shape(true));
        let up = peer.on_established(&[Afi::Ipv4], &rib);
        assert_eq!(up.announce.len(), 2);
        assert!(peer.sync(&rib).is_empty());
        assert_eq!(peer.sync(&rib), Changes::default());
        // Setting the same intent again is not a change either.
        assert!(!rib.set_desired(p("10.100.1.1/32"), Some(announced())));
        assert!(!rib.set_desired(p("10.9.9.9/32"), None));
        assert_eq!(peer.sync(&rib), Changes::default());
    }

    #[test]
    fn session_loss_forgets_and_resends_everything() {
        let mut rib = rib(&[("10.100.1.1/32", announced())]);
        let mut peer = AdjRibOut::new(shape(true));
        peer.on_established(&[Afi::Ipv4], &rib);
        peer.on_session_down();
        assert!(peer.advertised().is_empty());
        // Changes while down are not sent ...
        rib.set_desired(p("10.100.1.1/32"), Some(pessimized()));
        rib.set_desired(p("10.100.3.3/32"), Some(announced()));
        assert_eq!(peer.sync(&rib), Changes::default());
        // ... the next session gets the whole current table, then EoR.
        let up = peer.on_established(&[Afi::Ipv4], &rib);
        assert_eq!(
            up,
            Changes {
                announce: vec![
                    (p("10.100.1.1/32"), ebgp_attrs(7, &pessimized(), v4())),
                    (p("10.100.3.3/32"), ebgp_attrs(1, &announced(), v4())),
                ],
                end_of_rib: vec![Afi::Ipv4],
                ..Changes::default()
            }
        );
    }

    #[test]
    fn ibgp_gets_empty_as_path_and_local_pref_and_one_prepend_warning() {
        let rib = rib(&[
            ("10.100.1.1/32", pessimized()),
            ("10.100.2.2/32", pessimized()),
        ]);
        let mut peer = AdjRibOut::new(shape(false));
        let up = peer.on_established(&[Afi::Ipv4], &rib);
        let want = Arc::new(PathAttrs {
            origin: Origin::Igp,
            as_path: Vec::new(),
            next_hop: v4(),
            med: None,
            local_pref: Some(100),
            communities: vec![Community(65001, 666)],
            large_communities: vec![LargeCommunity(65001, 1, 2)],
        });
        assert_eq!(
            up.announce,
            vec![
                (p("10.100.1.1/32"), want.clone()),
                (p("10.100.2.2/32"), want)
            ]
        );
        assert_eq!(
            up.warnings,
            vec![Warning::PrependIgnoredOnIbgp {
                prefix: p("10.100.1.1/32"),
                prepend: 6
            }]
        );
        // Once per peer, even across sessions.
        peer.on_session_down();
        let up = peer.on_established(&[Afi::Ipv4], &rib);
        assert!(up.warnings.is_empty());
    }

    #[test]
    fn ibgp_pessimize_changes_only_communities() {
        let mut rib = rib(&[("10.100.1.1/32", announced())]);
        let mut peer = AdjRibOut::new(shape(false));
        peer.on_established(&[Afi::Ipv4], &rib);
        rib.set_desired(p("10.100.1.1/32"), Some(pessimized()));
        let c = peer.sync(&rib);
        assert_eq!(c.announce.len(), 1);
        assert!(c.announce[0].1.as_path.is_empty());
        assert_eq!(c.announce[0].1.communities, vec![Community(65001, 666)]);
    }

    #[test]
    fn ipv6_uses_the_ipv6_next_hop_and_needs_the_family() {
        let rib = rib(&[
            ("2001:db8:100::1/128", announced()),
            ("10.100.1.1/32", announced()),
        ]);
        let mut peer = AdjRibOut::new(shape(true));
        let up = peer.on_established(&[Afi::Ipv4, Afi::Ipv6], &rib);
        assert_eq!(
            up.announce,
            vec![
                (p("10.100.1.1/32"), ebgp_attrs(1, &announced(), v4())),
                (
                    p("2001:db8:100::1/128"),
                    ebgp_attrs(1, &announced(), IpAddr::V6(nh6()))
                ),
            ]
        );
        assert_eq!(up.end_of_rib, vec![Afi::Ipv4, Afi::Ipv6]);

        // Session without IPv6: the v6 route is not sent, reported once.
        peer.on_session_down();
        let up = peer.on_established(&[Afi::Ipv4], &rib);
        assert_eq!(up.announce.len(), 1);
        assert_eq!(
            up.warnings,
            vec![Warning::FamilyNotNegotiated {
                prefix: p("2001:db8:100::1/128")
            }]
        );
        assert_eq!(up.end_of_rib, vec![Afi::Ipv4]);
        assert_eq!(peer.sync(&rib), Changes::default());
    }

    /// The incremental pass (`plan`) keeps the "reported once" set as the
    /// full one does: each unsendable prefix is reported once while it is
    /// desired, again after it left and came back; the set's changes of a
    /// pass are applied at its end.
    #[test]
    fn plan_reports_unsendable_prefixes_once_while_desired() {
        let v6 = [
            "2001:db8:100::3/128",
            "2001:db8:100::1/128",
            "2001:db8:100::2/128",
        ];
        let mut rib = RibOut::new();
        rib.mark_initial_done();
        let mut peer = AdjRibOut::new(shape(true));
        let up = peer.on_established(&[Afi::Ipv4], &rib);
        assert_eq!(up.end_of_rib, vec![Afi::Ipv4]);
        let not_negotiated = |ps: &[&str]| -> Vec<Warning> {
            ps.iter()
                .map(|s| Warning::FamilyNotNegotiated { prefix: p(s) })
                .collect()
        };
        for s in v6 {
            rib.set_desired(p(s), Some(announced()));
        }
        rib.set_desired(p("10.100.1.1/32"), Some(announced()));
        let all: PrefixSet = v6
            .iter()
            .map(|s| p(s))
            .chain([p("10.100.1.1/32")])
            .collect();
        let c = peer.plan(&rib, &all);
        peer.commit(&c);
        assert_eq!(c.announce.len(), 1);
        // In prefix order, each once.
        assert_eq!(c.warnings, not_negotiated(&[v6[1], v6[2], v6[0]]));
        // Planned again: not reported again.
        let c = peer.plan(&rib, &all);
        assert!(c.warnings.is_empty(), "{c:?}");
        // Two leave, one of them comes back: only that one is reported.
        rib.set_desired(p(v6[0]), None);
        rib.set_desired(p(v6[1]), None);
        let gone: PrefixSet = [p(v6[0]), p(v6[1])].into_iter().collect();
        let c = peer.plan(&rib, &gone);
        assert!(c.warnings.is_empty() && c.withdraw.is_empty(), "{c:?}");
        rib.set_desired(p(v6[1]), Some(announced()));
        let c = peer.plan(&rib, &all);
        assert_eq!(c.warnings, not_negotiated(&[v6[1]]));
        let c = peer.plan(&rib, &all);
        assert!(c.warnings.is_empty(), "{c:?}");
    }

    #[test]
    fn prefix_set_is_sorted_without_repeats() {
        let mut s: PrefixSet = [p("10.0.0.2/32"), p("10.0.0.1/32"), p("10.0.0.2/32")]
            .into_iter()
            .collect();
        s.extend([p("2001:db8::1/128"), p("10.0.0.0/8")]);
        let v: Vec<Prefix> = s.iter().copied().collect();
        assert_eq!(
            v,
            vec![
                p("10.0.0.0/8"),
                p("10.0.0.1/32"),
                p("10.0.0.2/32"),
                p("2001:db8::1/128")
            ]
        );
        assert!(s.contains(&p("10.0.0.1/32")) && !s.contains(&p("10.0.0.3/32")));
        s.retain(|x| x.afi() == Afi::Ipv6);
        assert_eq!(s.len(), 1);
        s.clear();
        assert!(s.is_empty());
    }

    #[test]
    fn no_next_hop_of_the_family_means_not_sent() {
        let rib = rib(&[("2001:db8:100::1/128", announced())]);
        let mut s = shape(true);
        s.next_hop_v6 = None;
        let mut peer = AdjRibOut::new(s);
        let up = peer.on_established(&[Afi::Ipv4, Afi::Ipv6], &rib);
        assert!(up.announce.is_empty());
        assert_eq!(
            up.warnings,
            vec![Warning::NoNextHop {
                prefix: p("2001:db8:100::1/128")
            }]
        );
    }

    #[test]
    fn end_of_rib_waits_for_the_initial_evaluation() {
        let mut rib = RibOut::new();
        let mut peer = AdjRibOut::new(shape(true));
        let up = peer.on_established(&[Afi::Ipv4, Afi::Ipv6], &rib);
        assert_eq!(up, Changes::default());
        // First results arrive: routes go out, still no EoR.
        rib.set_desired(p("10.100.1.1/32"), Some(announced()));
        let c = peer.sync(&rib);
        assert_eq!(c.announce.len(), 1);
        assert!(c.end_of_rib.is_empty());
        // Evaluation complete: the next sync carries only the EoRs ...
        rib.mark_initial_done();
        assert_eq!(
            peer.sync(&rib),
            Changes {
                end_of_rib: vec![Afi::Ipv4, Afi::Ipv6],
                ..Changes::default()
            }
        );
        // ... once per session.
        assert_eq!(peer.sync(&rib), Changes::default());
        peer.on_session_down();
        let up = peer.on_established(&[Afi::Ipv4], &rib);
        assert_eq!(up.end_of_rib, vec![Afi::Ipv4]);
    }

    #[test]
    fn next_hop_change_reannounces() {
        let rib = rib(&[("10.100.1.1/32", announced())]);
        let mut peer = AdjRibOut::new(shape(true));
        peer.on_established(&[Afi::Ipv4], &rib);
        let mut s = shape(true);
        s.next_hop_v4 = Some(Ipv4Addr::new(127, 0, 0, 9));
        peer.set_shape(s);
        assert_eq!(peer.shape().families, vec![Afi::Ipv4]);
        let c = peer.sync(&rib);
        assert_eq!(
            c.announce,
            vec![(
                p("10.100.1.1/32"),
                ebgp_attrs(1, &announced(), IpAddr::V4(Ipv4Addr::new(127, 0, 0, 9)))
            )]
        );
        assert!(c.withdraw.is_empty());
    }

    #[test]
    fn route_refresh_resends_the_family() {
        let rib = rib(&[
            ("2001:db8:100::1/128", announced()),
            ("10.100.1.1/32", announced()),
        ]);
        let mut peer = AdjRibOut::new(shape(true));
        peer.on_established(&[Afi::Ipv4, Afi::Ipv6], &rib);
        let c = peer.route_refresh(Afi::Ipv6);
        assert_eq!(c.announce.len(), 1);
        assert_eq!(c.announce[0].0, p("2001:db8:100::1/128"));
        assert!(c.end_of_rib.is_empty());
    }

    mod random {
        //! Random desired-table edits, syncs and session flaps: what the peer
        //! holds after applying every `Changes` always equals the shaped
        //! desired table, and nothing is ever withdrawn then re-announced in
        //! one sync.
        use super::*;
        use proptest::prelude::*;

        #[derive(Debug, Clone)]
        enum Op {
            Set(usize, Option<u8>),
            Sync,
            Down,
            Up(bool),
            InitialDone,
        }

        const PREFIXES: [&str; 4] = [
            "10.0.0.1/32",
            "10.0.0.2/32",
            "2001:db8::1/128",
            "10.1.0.0/16",
        ];

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                4 => (0..PREFIXES.len(), proptest::option::of(0u8..3)).prop_map(|(i, v)| Op::Set(i, v)),
                3 => Just(Op::Sync),
                1 => Just(Op::Down),
                1 => any::<bool>().prop_map(Op::Up),
                1 => Just(Op::InitialDone),
            ]
        }

        proptest! {
            #[test]
            fn peer_view_tracks_desired(ebgp in any::<bool>(), ops in proptest::collection::vec(op(), 1..60)) {
                let mut rib = RibOut::new();
                let mut peer = AdjRibOut::new(shape(ebgp));
                // The peer's view, built only from the Changes we emitted.
                let mut view: BTreeMap<Prefix, Arc<PathAttrs>> = BTreeMap::new();
                let mut up = false;
                let mut eor_seen = false;
                for op in ops {
                    let changes = match op {
                        Op::Set(i, v) => {
                            let intent = v.map(|prepend| RouteIntent {
                                as_path_prepend: prepend,
                                communities: vec![Community(1, u16::from(prepend))],
                                large_communities: Vec::new(),
                            });
                            rib.set_desired(p(PREFIXES[i]), intent);
                            continue;
                        }
                        Op::InitialDone => {
                            rib.mark_initial_done();
                            continue;
                        }
                        Op::Sync => peer.sync(&rib),
                        Op::Down => {
                            peer.on_session_down();
                            view.clear();
                            up = false;
                            continue;
                        }
                        Op::Up(with_v6) => {
                            if up {
                                peer.on_session_down();
                                view.clear();
                            }
                            up = true;
                            eor_seen = false;
                            let fams: &[Afi] = if with_v6 { &[Afi::Ipv4, Afi::Ipv6] } else { &[Afi::Ipv4] };
                            peer.on_established(fams, &rib)
                        }
                    };
                    if !up {
                        prop_assert!(changes.is_empty());
                        continue;
                    }
                    for w in &changes.withdraw {
                        prop_assert!(view.remove(w).is_some(), "withdrew unsent {}", w);
                        prop_assert!(!changes.announce.iter().any(|(a, _)| a == w));
                    }
                    for (prefix, attrs) in &changes.announce {
                        prop_assert!(view.get(prefix) != Some(attrs), "re-announced unchanged {}", prefix);
                        view.insert(*prefix, attrs.clone());
                    }
                    if !changes.end_of_rib.is_empty() {
                        prop_assert!(rib.initial_done() && !eor_seen);
                        eor_seen = true;
                    }
                    prop_assert_eq!(&view, peer.advertised());
                    for (prefix, attrs) in &view {
                        let intent = &rib.desired()[prefix];
                        prop_assert!(peer.shape().families.contains(&prefix.afi()));
                        if ebgp {
                            prop_assert_eq!(attrs.as_path.len(), 1 + usize::from(intent.as_path_prepend));
                            prop_assert_eq!(attrs.local_pref, None);
                        } else {
                            prop_assert!(attrs.as_path.is_empty());
                            prop_assert_eq!(attrs.local_pref, Some(IBGP_LOCAL_PREF));
                        }
                        prop_assert_eq!(&attrs.communities, &intent.communities);
                    }
                    // Every sendable desired route is in the view.
                    for prefix in rib.desired().keys() {
                        if peer.shape().families.contains(&prefix.afi()) {
                            prop_assert!(view.contains_key(prefix), "missing {}", prefix);
                        }
                    }
                }
            }

            /// A pass over only the prefixes changed since the last one
            /// (`Scope::Changed`, a session between batches) sends what a
            /// pass over the whole table (`Scope::All`) sends, and leaves
            /// the same Adj-RIB-Out and the same unsendable prefixes
            /// reported.
            #[test]
            fn a_pass_over_the_changed_prefixes_equals_one_over_the_table(
                ebgp in any::<bool>(),
                ops in proptest::collection::vec(op(), 1..60),
            ) {
                let mut rib = RibOut::new();
                let mut whole = AdjRibOut::new(shape(ebgp));
                let mut changed = AdjRibOut::new(shape(ebgp));
                let mut dirty = PrefixSet::new();
                for op in ops {
                    let (a, b) = match op {
                        Op::Set(i, v) => {
                            let intent = v.map(|prepend| RouteIntent {
                                as_path_prepend: prepend,
                                ..RouteIntent::default()
                            });
                            if rib.set_desired(p(PREFIXES[i]), intent) {
                                dirty.extend([p(PREFIXES[i])]);
                            }
                            continue;
                        }
                        Op::InitialDone => {
                            rib.mark_initial_done();
                            continue;
                        }
                        Op::Down => {
                            whole.on_session_down();
                            changed.on_session_down();
                            continue;
                        }
                        Op::Up(with_v6) => {
                            let fams: &[Afi] = if with_v6 { &[Afi::Ipv4, Afi::Ipv6] } else { &[Afi::Ipv4] };
                            // A session that comes up plans the whole table.
                            whole.establish(fams);
                            changed.establish(fams);
                            dirty.clear();
                            (whole.plan_all(&rib), changed.plan_all(&rib))
                        }
                        Op::Sync => {
                            let a = whole.plan_all(&rib);
                            let b = changed.plan(&rib, &dirty);
                            dirty.clear();
                            (a, b)
                        }
                    };
                    whole.commit(&a);
                    changed.commit(&b);
                    let sorted = |c: &Changes| {
                        let mut w = c.withdraw.clone();
                        w.sort_unstable();
                        (c.announce.clone(), w, c.end_of_rib.clone(), c.warnings.len())
                    };
                    prop_assert_eq!(sorted(&a), sorted(&b));
                    prop_assert_eq!(whole.advertised(), changed.advertised());
                    prop_assert_eq!(&whole.reported, &changed.reported);
                }
            }
        }
    }
}
