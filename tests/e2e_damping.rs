//! Damping (`policy.damping`) end to end: two real pathosd, each with its
//! own BIRD, check one TCP backend of this test that is up 2 s and down
//! 2 s for 60 s (tcp check every 200 ms, rise 1, fall 1, so each change
//! of the backend changes the VIP's health). One has damping off, the
//! other on with its times scaled to the run (half_life 10 s,
//! max_suppress 30 s). Counted: the UPDATEs BIRD received (its import
//! counter) during the flapping, and whether the damped VIP is announced
//! again on its own once the backend is steady. The backend's schedule is
//! the stimulus, so it runs on the clock; everything else is awaited.
// A scenario against real peers, read top to bottom.
#![allow(clippy::too_many_lines)]

mod support;

use serde_json::{json, Value};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use support::bird::{Bird, BirdPeer};
use support::daemon::{config, Pathosd, API_PORT};
use support::{poll, Addrs};

const PREFIX: &str = "10.77.0.1/32";
const FLAPPING: Duration = Duration::from_secs(60);
const HALF: Duration = Duration::from_secs(2);

/// The backend while it is up: a listener that accepts and closes each
/// connection (one that never accepted would fill its queue and time the
/// checks out).
struct Backend {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Backend {
    fn up(addr: SocketAddr) -> Backend {
        let l = TcpListener::bind(addr).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            for s in l.incoming() {
                if flag.load(Ordering::SeqCst) {
                    return;
                }
                drop(s);
            }
        });
        Backend { addr, stop, thread }
    }

    /// Closes the listener: the flag is set, and a connection of our own
    /// wakes the accept to see it.
    fn down(self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        self.thread.join().unwrap();
    }
}

struct Side {
    d: Pathosd,
    bird: Bird,
}

impl Side {
    fn start(block: u8, backend: SocketAddr, damping: bool) -> Side {
        let a = Addrs::new(block);
        let bird = Bird::start(BirdPeer::new(a.peer, a.ours));
        let vips = json!([{
            "name": "web", "prefix": PREFIX,
            "check": {"type": "tcp", "interval": "200ms", "timeout": "150ms", "rise": 1, "fall": 1,
                      "tcp": {"host": backend.ip().to_string(), "port": backend.port()}},
            "policy": {"fail_action": "withdraw",
                       "damping": {"enabled": damping, "half_life": "10s", "max_suppress": "30s"}}
        }]);
        let cfg = config(a, vips);
        let d = Pathosd::start(&cfg, SocketAddr::from((a.ours, API_PORT)));
        Side { d, bird }
    }

    /// Route changes BIRD received on the session: its "Import updates"
    /// and "Import withdraws" rows, received column (an UPDATE of ours
    /// carries one change of the one prefix).
    fn received(&self) -> u64 {
        let out = self
            .bird
            .birdc(&["show", "protocols", "all", "pathosd"])
            .unwrap_or_default();
        let row = |name: &str| -> u64 {
            out.lines()
                .find_map(|l| l.trim().strip_prefix(name))
                .and_then(|r| r.split_whitespace().next()?.parse().ok())
                .unwrap_or_else(|| panic!("no {name} row in {out}"))
        };
        row("Import updates:") + row("Import withdraws:")
    }

    fn wait_route(&self, present: bool, limit: Duration) -> bool {
        poll(limit, || {
            (self.bird.route(PREFIX).is_some() == present).then_some(())
        })
        .is_some()
    }
}

#[test]
fn a_flapping_backend_costs_few_updates_with_damping() {
    let third = (std::process::id() % 200) as u8;
    let backend_ip = Ipv4Addr::new(127, 160, third, 3);
    let port = support::free_tcp_port(backend_ip);
    let backend = SocketAddr::from((backend_ip, port));
    let mut listener = Some(Backend::up(backend));

    let plain = Side::start(160, backend, false);
    let damped = Side::start(161, backend, true);
    for s in [&plain, &damped] {
        let up = poll(Duration::from_secs(10), || {
            s.bird.established().then_some(())
        });
        assert!(up.is_some(), "BIRD not Established\n{}", s.d.log());
        assert!(s.wait_route(true, Duration::from_secs(10)), "{}", s.d.log());
    }
    let base = [plain.received(), damped.received()];

    // Down 2 s, up 2 s, ..., for 60 s; the schedule is on the clock.
    let start = Instant::now();
    let mut damped_seen = None;
    let mut metric_seen = false;
    let mut k = 1u32;
    while start.elapsed() < FLAPPING {
        let next = start + HALF * k;
        if damped_seen.is_none() {
            let v = damped.d.vip("web");
            if v["damping"]["suppressed"] == true {
                damped_seen = Some(start.elapsed());
                assert_eq!(v["state_name"], "withdrawn", "{v}");
                let m = damped.d.get("/metrics").map(|r| r.body).unwrap_or_default();
                metric_seen = m.lines().any(|l| {
                    l.starts_with("pathosd_vip_damped{") && l.contains("web") && l.ends_with(" 1")
                });
            }
        }
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
        listener = match listener {
            Some(b) => {
                b.down();
                None
            }
            None => Some(Backend::up(backend)),
        };
        k += 1;
    }
    // Steady from here on.
    if listener.is_none() {
        listener = Some(Backend::up(backend));
    }
    let last_flap = Instant::now();
    let during = [plain.received() - base[0], damped.received() - base[1]];

    // The damped VIP comes back on its own: the penalty (at most about
    // 4,100 with a flap every 4 s) decays below 750 within 25 s.
    let back = damped.wait_route(true, Duration::from_secs(45));
    let back_after = last_flap.elapsed();
    let v: Value = damped.d.vip("web");
    let total = damped.received() - base[1];
    eprintln!(
        "60 s of a backend flapping every 2 s: {} UPDATEs received by BIRD without damping, {} with (damped {:?} in); announced again {:.1} s after the last flap, {} UPDATEs in all",
        during[0],
        during[1],
        damped_seen,
        back_after.as_secs_f64(),
        total
    );
    assert!(back, "never announced again: {v}\n{}", damped.d.log());
    assert_eq!(v["damping"]["suppressed"], false, "{v}");
    assert!(during[0] >= 25, "{} UPDATEs without damping", during[0]);
    assert!(during[1] <= 6, "{} UPDATEs with damping", during[1]);
    assert!(damped_seen.is_some(), "never damped");
    assert!(metric_seen, "pathosd_vip_damped 1 not in /metrics");
    assert!(back_after <= Duration::from_secs(35), "{back_after:?}");
    if let Some(b) = listener {
        b.down();
    }
}
