//! The VIPs' running check loops, as the owner keeps them: started from
//! the engine's configs and ids, asked for trigger runs, replaced on reload.

use crate::chan::Tx;
use crate::check::scheduler;
use crate::config::VipSpec as Vip;
use crate::daemon::engine::{CheckId, CheckRun, Engine};
use smol::Task;
use std::rc::Rc;
use std::sync::Arc;

/// A VIP's running check loops, in config order; dropping it cancels them.
#[derive(Default)]
pub(super) struct VipRuntime {
    pub(super) loops: Vec<CheckLoopHandle>,
}

/// The VIPs' running check loops by VIP name, sorted by it (VIPs with
/// checks only). A sorted `Vec`, not a `BTreeMap`: the map's node code
/// (insert, remove, rebalancing: ≈ 12 KB on mips) would be
/// compiled for this one key and value type, and the owner builds this in
/// one go (at start and at each reload) and then only looks it up.
#[derive(Default)]
pub(super) struct Runtimes(Vec<(Arc<str>, VipRuntime)>);

impl Runtimes {
    /// From (name, runtime) pairs in any order; VIP names are unique
    /// (validation), so an unstable sort is exact.
    pub(super) fn new(mut v: Vec<(Arc<str>, VipRuntime)>) -> Runtimes {
        v.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Runtimes(v)
    }

    pub(super) fn find(&self, vip: &str) -> Option<usize> {
        self.0.binary_search_by(|(n, _)| (**n).cmp(vip)).ok()
    }

    pub(super) fn get(&self, vip: &str) -> Option<&VipRuntime> {
        self.find(vip).map(|i| &self.0[i].1)
    }

    pub(super) fn get_mut(&mut self, vip: &str) -> Option<&mut VipRuntime> {
        let i = self.find(vip)?;
        Some(&mut self.0[i].1)
    }

    /// Takes `vip`'s loops out, for a reload's new table (an empty runtime
    /// is left: a stored one always has loops, `spawn`).
    pub(super) fn take(&mut self, vip: &str) -> Option<VipRuntime> {
        let rt = std::mem::take(self.get_mut(vip)?);
        (!rt.loops.is_empty()).then_some(rt)
    }
}

/// One running check loop.
pub(super) struct CheckLoopHandle {
    pub(super) id: CheckId,
    /// Asks the loop for an ad-hoc run tagged with a trigger id.
    pub(super) trigger: Rc<scheduler::TriggerSlot>,
    _task: Task<()>,
}

/// The ids the engine gave the checks of `vip`, in config order.
pub(super) fn check_ids(engine: &Engine, vip: &str) -> Vec<CheckId> {
    engine
        .vip(vip)
        .map(|s| s.checks.iter().map(|c| c.id).collect())
        .unwrap_or_default()
}

/// Starts the check loops of `vip`, tagged with the engine's ids.
pub(super) fn spawn_checks(
    vip: &Vip,
    ids: &[CheckId],
    result_tx: &Tx<CheckRun>,
) -> Option<VipRuntime> {
    spawn(scheduler::build(vip, ids), vip, result_tx)
}

pub(super) fn spawn(
    checks: Result<Vec<scheduler::CheckLoop>, String>,
    vip: &Vip,
    result_tx: &Tx<CheckRun>,
) -> Option<VipRuntime> {
    match checks {
        // No runtime for a VIP without checks (`always`): no map entry, no
        // name copy (10,000 `always` VIPs). A trigger finds none
        // and answers "no checks to run"; its drain file is polled each second
        // (`poll_drain_files`), there being no result to poll it on.
        Ok(loops) if loops.is_empty() => None,
        Ok(loops) => {
            // Exactly sized: collected in place from the CheckLoops, the
            // Vec would keep their (larger) allocation.
            let mut handles = Vec::with_capacity(loops.len());
            for c in loops {
                let trigger = Rc::new(scheduler::TriggerSlot::default());
                handles.push(CheckLoopHandle {
                    id: c.id(),
                    trigger: trigger.clone(),
                    _task: crate::rt::spawn(scheduler::run_check_loop(
                        c,
                        trigger,
                        result_tx.clone(),
                    )),
                });
            }
            let loops = handles;
            Some(VipRuntime { loops })
        }
        Err(e) => {
            // Validation passed, so this is e.g. an unreadable CA file: the
            // VIP stays withdrawn (fail closed) and says why.
            log::error!("vip {}: checks not started: {e}", vip.name);
            None
        }
    }
}
