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

    /// Adds community `c` to every route that lacks it, in place (the
    /// stop's GRACEFUL_SHUTDOWN, RFC 8326). Equal intents stay one `Arc`
    /// while there are at most [`SHAPE_CACHE`] distinct ones (beyond, each
    /// route gets its own), so the routes still share UPDATEs as before.
    pub fn add_community(&mut self, c: super::types::Community) {
        let mut done: Vec<(Arc<RouteIntent>, Arc<RouteIntent>)> = Vec::new();
        for intent in self.desired.values_mut() {
            if intent.communities.contains(&c) {
                continue;
            }
            if let Some((_, new)) = done.iter().find(|(old, _)| **old == **intent) {
                *intent = new.clone();
                continue;
            }
            let mut i = (**intent).clone();
            i.communities.push(c);
            let new = Arc::new(i);
            if done.len() < SHAPE_CACHE {
                done.push((intent.clone(), new.clone()));
            }
            *intent = new;
        }
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
#[derive(Debug, Clone, PartialEq, Eq, Default)]
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
    /// RFC 8950 negotiated: IPv4 routes carry `next_hop_v6`.
    pub ipv4_next_hop_v6: bool,
    /// RFC 9234 §5 Only to Customer value our routes carry to this peer:
    /// the local AS when it is our Customer, Peer or RS-Client.
    pub otc: Option<u32>,
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
/// bisection (O(log n), as a B-tree). A sorted `Vec` for bytes: −8 KB on
/// mips against the `BTreeSet<Prefix>` it replaced, whose node code was
/// compiled for this one key type (and less memory than B-tree nodes).
/// Sets are filled many prefixes at a time ([`PrefixSet::extend`]:
/// appended, then sorted once), never by inserting into the middle one by
/// one, so a batch of 10,000 costs n log n, not n².
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
            Afi::Ipv4 if !self.shape.ipv4_next_hop_v6 => self.shape.next_hop_v4.map(IpAddr::V4),
            _ => self.shape.next_hop_v6.map(IpAddr::V6),
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
            // RFC 4271 §5.1.5: "A BGP speaker MUST include this attribute
            // in UPDATE messages it sends to other internal peers"; and
            // MUST NOT to external ones (None above).
            (Vec::new(), Some(intent.local_pref))
        };
        PathAttrs {
            origin: Origin::Igp,
            as_path,
            next_hop,
            // RFC 4271 §5.1.4: MULTI_EXIT_DISC may be sent to any peer; the
            // receiver compares it between routes from one neighboring AS.
            med: intent.med,
            local_pref,
            communities: intent.communities.clone(),
            large_communities: intent.large_communities.clone(),
            otc: self.shape.otc,
        }
    }
}

#[cfg(test)]
mod tests;
