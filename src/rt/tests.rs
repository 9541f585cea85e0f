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
                    // A reactor timer on purpose: a task woken from
                    // async-io's thread still runs here.
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

/// Waits end at their deadlines, in order, whatever order they were
/// made in; one dropped before its deadline never wakes anything.
#[test]
fn shared_timer_wakes_each_wait_at_its_deadline() {
    use std::time::Duration;
    let order = Rc::new(RefCell::new(Vec::new()));
    let t0 = Instant::now();
    block_on(async {
        let mut tasks = Vec::new();
        for ms in [30u64, 10, 20, 10] {
            let order = order.clone();
            tasks.push(spawn(async move {
                sleep_until(t0 + Duration::from_millis(ms)).await;
                let late = t0.elapsed().saturating_sub(Duration::from_millis(ms));
                order.borrow_mut().push(ms);
                late
            }));
        }
        // A wait cancelled early (as a probe's timeout when the probe ends).
        let mut cancelled = Box::pin(sleep_until(t0 + Duration::from_millis(5)));
        assert!(smol::future::poll_once(&mut cancelled).await.is_none());
        let queued = || TIMERS.with(|t| t.borrow().queue.0.len());
        let before = queued();
        drop(cancelled);
        assert_eq!(queued(), before - 1);
        for t in tasks {
            let late = t.await;
            assert!(late < Duration::from_millis(200), "late by {late:?}");
        }
    });
    assert_eq!(*order.borrow(), [10, 10, 20, 30]);
    assert!(t0.elapsed() >= Duration::from_millis(30));
    TIMERS.with(|t| assert!(t.borrow().queue.0.is_empty() && t.borrow().latest.0.is_empty()));
}

/// A window wait ends at the first wake-up of the thread inside its
/// window (here another task's wait ending), long before its latest
/// time; one that nothing wakes early ends at its latest time, not at
/// its earliest.
#[test]
fn window_wait_rides_on_another_wake_up() {
    use std::time::Duration;
    let ms = Duration::from_millis;
    let t0 = Instant::now();
    let rode = block_on(async {
        let rider = spawn(async move {
            sleep_window(t0 + ms(20), t0 + Duration::from_secs(5)).await;
            t0.elapsed()
        });
        sleep_until(t0 + ms(60)).await;
        rider.await
    });
    assert!(rode >= ms(60) && rode < ms(1000), "{rode:?}");
    let t0 = Instant::now();
    let alone = block_on(async {
        sleep_window(t0 + ms(10), t0 + ms(80)).await;
        t0.elapsed()
    });
    assert!(alone >= ms(80), "{alone:?}");
}

/// A wait with a slack ends with another wait's wake-up when that is
/// within its slack, later (one wake-up for both) or earlier (idle
/// CPU: a tick rides on a wake-up the thread has anyway), but never before
/// `at - slack`; alone it ends at `at + slack`.
#[test]
fn slack_wait_shares_a_wake_up_before_or_after_it() {
    use std::time::Duration;
    let ms = Duration::from_millis;
    let t0 = Instant::now();
    // Late: this one's time is 100 ms, the other wait ends at 120 ms
    // (plus its own slack), inside this one's 60 ms.
    let (a, b) = block_on(async {
        let a = spawn(async move {
            sleep_around(t0 + ms(100), ms(60)).await;
            t0.elapsed()
        });
        sleep_until(t0 + ms(120)).await;
        (a.await, t0.elapsed())
    });
    assert!(a >= ms(120) && a < ms(400), "{a:?}");
    assert!(b >= ms(120), "{b:?}");
    // Early: another wait ends 300 ms before this one's time, inside
    // its slack of 400 ms: both end then.
    let t0 = Instant::now();
    let (early, other) = block_on(async {
        let early = spawn(async move {
            sleep_around(t0 + ms(500), ms(400)).await;
            t0.elapsed()
        });
        sleep_until(t0 + ms(200)).await;
        let other = t0.elapsed();
        (early.await, other)
    });
    assert!(other >= ms(200), "{other:?}");
    assert!(early >= ms(200) && early < ms(400), "{early:?}");
    // Not earlier than its slack allows: the other wait ends before
    // `at - slack` (here 400 ms), so this one waits on, and alone it
    // ends at `at + slack`, not at `at`.
    let t0 = Instant::now();
    let (late, other) = block_on(async {
        let late = spawn(async move {
            sleep_around(t0 + ms(500), ms(100)).await;
            t0.elapsed()
        });
        sleep_until(t0 + ms(50)).await;
        let other = t0.elapsed();
        (late.await, other)
    });
    assert!(other >= ms(50) && other < ms(400), "{other:?}");
    assert!(late >= ms(600), "{late:?}");
}

/// The park deadline of a joining wait (a KEEPALIVE's window): the
/// first instant inside its window at which another wait may end.
/// Pure: virtual instants, no thread parks.
#[test]
fn joining_wait_parks_until_it_meets_another() {
    let ms = Duration::from_millis;
    let t0 = Instant::now();
    let noop = || Waker::noop().clone();
    let at = |m: u64| t0 + ms(m);
    // A KEEPALIVE due at 1000 ms, latest 1050 ms (the runtime's slack).
    let ka = |t: &mut Timers| t.insert(1, at(1000), at(1050), true, noop());
    // Alone: its latest.
    let mut t = Timers::default();
    ka(&mut t);
    assert_eq!(t.park_deadline(), Some(at(1050)));
    // Next to a tick's window (earliest, latest) => the park's end.
    for (earliest, latest, park) in [
        // Open at 1000 ms: the thread wakes at 1000 ms, both are due
        // (before: 1050 ms).
        (875, 1125, 1000),
        // Opening inside the KEEPALIVE's window: when it opens.
        (1030, 1280, 1030),
        // Opening after its window: not met, its latest as alone.
        (1060, 1310, 1050),
    ] {
        let mut t = Timers::default();
        ka(&mut t);
        t.insert(2, at(earliest), at(latest), false, noop());
        assert_eq!(
            t.park_deadline(),
            Some(at(park)),
            "tick {earliest}..={latest}"
        );
    }
    // A window that closed before 1000 ms ends the park itself first,
    // and is not a partner: once it is gone, the KEEPALIVE's latest.
    let mut t = Timers::default();
    ka(&mut t);
    t.insert(2, at(700), at(990), false, noop());
    assert_eq!(t.park_deadline(), Some(at(990)));
    assert_eq!(t.pop_due(at(990)).map(|(id, _)| id), Some(2));
    assert_eq!(t.park_deadline(), Some(at(1050)));
    // A wait that does not join parks until its latest, as before.
    let mut t = Timers::default();
    t.insert(2, at(875), at(1125), false, noop());
    t.insert(3, at(1000), at(1050), false, noop());
    assert_eq!(t.park_deadline(), Some(at(1050)));
    // Removing the joining wait removes its rule.
    let mut t = Timers::default();
    ka(&mut t);
    t.insert(2, at(875), at(1125), false, noop());
    t.remove(1, at(1000), at(1050));
    assert_eq!(t.park_deadline(), Some(at(1125)));
    assert!(t.joining.is_empty());
}

/// The rule over many rounds, in virtual time: a KEEPALIVE every
/// 1 s after the last one sent (RFC 4271 §4.4's floor at hold time
/// 3 s) next to a check's tick every 1 s (window ±125 ms), nothing
/// else waking the thread. Joining, the KEEPALIVE keeps meeting the
/// tick and each wake-up runs both; parking until the earliest latest
/// (the old rule), it drifts 50 ms a round off the tick's grid and
/// shares about a quarter of the rounds. And no KEEPALIVE ever leaves
/// less than 1 s after the previous one.
#[test]
fn keepalive_keeps_meeting_the_tick() {
    let ms = Duration::from_millis;
    let t0 = Instant::now();
    let mut t = Timers::default();
    let tick_id = 1u64;
    let mut next_id = 2u64;
    // The first KEEPALIVE 400 ms off the tick's grid.
    let mut ka = t0 + ms(1400);
    let mut tick = t0 + ms(1000);
    t.insert(
        tick_id,
        tick - ms(125),
        tick + ms(125),
        false,
        Waker::noop().clone(),
    );
    t.insert(next_id, ka, ka + ms(50), true, Waker::noop().clone());
    let (mut wakes, mut kas, mut last_sent) = (0u32, 0u32, None::<Instant>);
    for _ in 0..2000 {
        let Some(now) = t.park_deadline() else { break };
        wakes += 1;
        let mut due = Vec::new();
        while let Some((id, _)) = t.pop_due(now) {
            due.push(id);
        }
        assert!(!due.is_empty(), "a wake-up for nothing at {:?}", now - t0);
        for id in due {
            if id == tick_id {
                tick += ms(1000);
                t.insert(
                    tick_id,
                    tick - ms(125),
                    tick + ms(125),
                    false,
                    Waker::noop().clone(),
                );
            } else {
                if let Some(l) = last_sent {
                    assert!(now - l >= ms(1000), "KEEPALIVEs {:?} apart", now - l);
                }
                last_sent = Some(now);
                kas += 1;
                // Sent 0.2 ms after the wake-up (the thread's latency).
                ka = now + ms(1000) + Duration::from_micros(200);
                next_id += 1;
                t.insert(next_id, ka, ka + ms(50), true, Waker::noop().clone());
            }
        }
        if kas >= 600 {
            break;
        }
    }
    // 600 KEEPALIVEs and about as many ticks: shared, about 600
    // wake-ups; the old rule needed about 1.75 a round.
    let per_ka = f64::from(wakes) / f64::from(kas);
    assert!(per_ka < 1.1, "{wakes} wake-ups for {kas} KEEPALIVEs");
}

/// `sleep` is a wait of this thread's list, for its duration; one too
/// long for the clock never ends (as an async-io timer's would not).
#[test]
fn sleep_waits_its_duration_on_the_threads_list() {
    let ms = Duration::from_millis;
    let t0 = Instant::now();
    block_on(async {
        let mut wait = Box::pin(sleep(ms(20)));
        assert!(smol::future::poll_once(&mut wait).await.is_none());
        assert_eq!(TIMERS.with(|t| t.borrow().queue.0.len()), 1);
        wait.await;
        let mut never = Box::pin(sleep(Duration::MAX));
        assert!(smol::future::poll_once(&mut never).await.is_none());
    });
    assert!(t0.elapsed() >= ms(20));
    TIMERS.with(|t| assert!(t.borrow().queue.0.is_empty()));
}

#[test]
fn sleep_outside_the_runtime_uses_its_own_timer() {
    let t0 = Instant::now();
    async_io::block_on(sleep_until(t0 + std::time::Duration::from_millis(5)));
    assert!(t0.elapsed() >= std::time::Duration::from_millis(5));
}

/// `sleep_exact` ends at its deadline, not within `sleep`'s slack: alone
/// on the thread an 800 ms `sleep` ends 50 ms late (its slack, so that
/// waits close together share a wake-up), a `sleep_exact` on time. The
/// shutdown drain is one: 2 s were 2.05 s.
#[test]
fn sleep_exact_ends_at_its_deadline_without_the_slack() {
    let ms = Duration::from_millis;
    block_on(async {
        let t0 = Instant::now();
        sleep(ms(800)).await;
        let loose = t0.elapsed();
        let t1 = Instant::now();
        sleep_exact(ms(800)).await;
        let exact = t1.elapsed();
        assert!(loose >= ms(849), "sleep ended after {loose:?}");
        assert!(
            exact >= ms(800) && exact < ms(820),
            "sleep_exact ended after {exact:?}"
        );
    });
}
