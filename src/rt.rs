//! The daemon's runtime: one thread, one local executor.
//!
//! Every daemon task (the owner, the BGP sessions, the check loops, the
//! HTTP API and ubus) is spawned with [`spawn`] onto the executor of the
//! thread that runs [`block_on`] — in `pathosd run`, the main thread. So no
//! task needs `Send`, state one task owns needs no lock, and nothing crosses
//! a thread on the way from a probe to a BGP UPDATE. The I/O reactor
//! (async-io) is driven by the same `block_on` while the executor is idle.
//!
//! Work that can only block (ureq for https and proxies, the gRPC client)
//! goes to the small fixed pool in [`crate::check::probe::blocking`], never
//! onto this thread.

use smol::{LocalExecutor, Task};
use std::cell::Cell;
use std::future::Future;

thread_local! {
    static EXECUTOR: LocalExecutor<'static> = const { LocalExecutor::new() };
    /// Whether [`block_on`] runs on this thread right now.
    static RUNNING: Cell<bool> = const { Cell::new(false) };
}

/// Spawns `fut` on this thread's executor; it runs while [`block_on`] runs
/// here. Dropping the returned task cancels it; `.detach()` lets it run on.
///
/// Spawning on a thread that does not run [`block_on`] is a bug (the task
/// would never run); debug builds, which every test runs, panic on it.
pub fn spawn<T: 'static>(fut: impl Future<Output = T> + 'static) -> Task<T> {
    debug_assert!(
        RUNNING.with(Cell::get),
        "rt::spawn on a thread that does not run rt::block_on: the task would never run"
    );
    EXECUTOR.with(|ex| ex.spawn(fut))
}

/// Runs `fut` and every task [`spawn`]ed on this thread until `fut` ends.
pub fn block_on<T>(fut: impl Future<Output = T>) -> T {
    /// Restores the flag however `block_on` ends (a panic included).
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            RUNNING.with(|r| r.set(self.0));
        }
    }
    let _restore = Restore(RUNNING.with(|r| r.replace(true)));
    EXECUTOR.with(|ex| async_io::block_on(ex.run(fut)))
}

/// Whether the current thread runs [`block_on`] (for assertions).
pub fn is_running() -> bool {
    RUNNING.with(Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    /// Tasks need no `Send` (an `Rc` crosses into one) and run on the
    /// thread that called block_on.
    #[test]
    fn tasks_run_on_the_calling_thread_without_send() {
        let me = std::thread::current().id();
        let shared = Rc::new(Cell::new(0u32));
        let got = block_on(async {
            let tasks: Vec<_> = (0..3)
                .map(|i| {
                    let shared = shared.clone();
                    spawn(async move {
                        async_io::Timer::after(std::time::Duration::from_millis(1)).await;
                        shared.set(shared.get() + i);
                        std::thread::current().id()
                    })
                })
                .collect();
            let mut ids = Vec::new();
            for t in tasks {
                ids.push(t.await);
            }
            ids
        });
        assert_eq!(shared.get(), 3);
        assert!(got.iter().all(|id| *id == me));
        assert!(!is_running());
    }
}
