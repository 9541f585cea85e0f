//! Counting the active flows of the VIPs whose drain waits for them
//! (`drain_until_flows_below`): the router's connection tracking table,
//! `/proc/net/nf_conntrack` of the daemon's network namespace (OpenWrt's
//! kmod-nf-conntrack has it, procfs being on by default), read once a
//! second while some VIP waits, and never otherwise.
//!
//! The read is on the blocking pool ([`crate::pool`]):
//! a table of 100,000 entries is about 25 MB of text, which the owner's
//! thread must not spend its time on. It streams through a fixed buffer
//! and only counts ([`pathosd_core::vip::flows`]). One read at a time; a
//! read that fails is logged once until one succeeds, and the drain then
//! ends at its drain_time.

use crate::bgp::types::Prefix;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

/// The table Linux prints for the namespace the daemon runs in.
pub(super) const TABLE: &str = "/proc/net/nf_conntrack";

/// Time between two reads while some VIP waits for its flows.
const INTERVAL: Duration = Duration::from_secs(1);

/// The pool's own future, boxed as it is (no async block around it: one
/// state machine less in the binary); the outer Err is the pool's.
type Read = Pin<Box<dyn Future<Output = Result<Result<Vec<u32>, String>, String>>>>;

/// The reads of the table, one at a time.
pub(super) struct FlowReader {
    /// The read under way, with the names of the VIPs its counts are for.
    pending: Option<(Vec<String>, Read)>,
    /// No read starts before then.
    next: Instant,
    /// The last read failed (and said so): the next failure is not logged.
    failing: bool,
}

impl FlowReader {
    pub(super) fn new(now: Instant) -> FlowReader {
        FlowReader {
            pending: None,
            next: now,
            failing: false,
        }
    }

    /// When the next read is due, if one may start (none is under way).
    pub(super) fn due(&self) -> Option<Instant> {
        self.pending.is_none().then_some(self.next)
    }

    /// Starts a read for `vips` (name, prefix), if one is due; a VIP with
    /// several prefixes has an entry for each, one after the other.
    pub(super) fn start(&mut self, vips: Vec<(String, Prefix)>, now: Instant) {
        if self.pending.is_some() || now < self.next || vips.is_empty() {
            return;
        }
        self.next = now + INTERVAL;
        let (names, prefixes): (Vec<String>, Vec<Prefix>) = vips.into_iter().unzip();
        let read: Read = Box::pin(crate::pool::pool().run(move || {
            let f = std::fs::File::open(TABLE).map_err(|e| format!("{TABLE}: {e}"))?;
            pathosd_core::vip::flows::count(f, &prefixes).map_err(|e| format!("{TABLE}: {e}"))
        }));
        self.pending = Some((names, read));
    }

    /// The read under way, once it ends; never while none is.
    pub(super) async fn done(&mut self) -> Result<Vec<u32>, String> {
        match self.pending.as_mut() {
            Some((_, read)) => read.await.and_then(|r| r),
            None => std::future::pending().await,
        }
    }

    /// The counts of the read that ended, by VIP name; None (logged once)
    /// when it failed.
    pub(super) fn finish(&mut self, r: Result<Vec<u32>, String>) -> Option<Vec<(String, u32)>> {
        let (names, _) = self.pending.take()?;
        match r {
            Ok(counts) => {
                if self.failing {
                    log::info!("flows: {TABLE} read again");
                }
                self.failing = false;
                // A VIP's entries are next to each other: their sum is its count.
                let mut out: Vec<(String, u32)> = Vec::new();
                for (name, c) in names.into_iter().zip(counts) {
                    match out.last_mut() {
                        Some((last, sum)) if *last == name => *sum = sum.saturating_add(c),
                        _ => out.push((name, c)),
                    }
                }
                Some(out)
            }
            Err(e) => {
                if !self.failing {
                    log::warn!(
                        "flows: cannot count the draining VIPs' flows ({e}; kmod-nf-conntrack and procfs needed): their drains end at drain_time"
                    );
                }
                self.failing = true;
                None
            }
        }
    }
}
