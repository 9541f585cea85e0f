//! The `log` facade's backend: syslog on OpenWrt (logd keeps only 16 KiB, so
//! pathosd is quiet by default: one line per transition), stderr elsewhere;
//! and the rate limit of lines a client or a stranger can provoke
//! ([`LogLimit`]); and the copy of the records exported over OTLP
//! ([`set_otel`], [`take_otel`]).

mod limit;

pub(crate) use limit::LogLimit;

use log::{Level, LevelFilter, Log, Metadata, Record};
use std::io::Write;
use std::os::unix::net::UnixDatagram;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::SystemTime;

/// Where log lines go.
pub enum Sink {
    Syslog(UnixDatagram),
    Stderr { timestamps: bool },
}

struct Logger {
    sink: Mutex<Sink>,
    level: LevelFilter,
}

/// RFC 3164 priority: facility daemon (3) * 8 + severity.
fn priority(level: Level) -> u8 {
    let severity = match level {
        Level::Error => 3,
        Level::Warn => 4,
        Level::Info => 6,
        Level::Debug | Level::Trace => 7,
    };
    3 * 8 + severity
}

/// One syslog datagram as musl's syslog() writes it, the one form both
/// OpenWrt's logd and busybox syslogd read right:
/// `<PRI>Mmm dd hh:mm:ss pathosd[PID]: msg`, the time `t` in UTC.
///
/// The timestamp is not optional. logd (`log_add` in ubox's log/syslog.c)
/// drops the first 16 bytes of a message, after `<PRI>`, whose 16th byte is
/// a space, taking them for this timestamp without looking further; without
/// one, `pathosd[12345]: ` is exactly such 16 bytes, so with a five-digit
/// PID every line lost its tag and `logread -e pathosd` missed it. busybox
/// syslogd takes the 16 bytes for a timestamp only when they have its shape.
/// UTC, as musl writes it (gmtime_r): every program on OpenWrt logs through
/// musl, so the stamps agree; logd keeps its own time of arrival anyway.
pub fn syslog_line(level: Level, pid: u32, msg: &str, t: SystemTime) -> String {
    format!(
        "<{}>{} pathosd[{}]: {}",
        priority(level),
        syslog_timestamp(t),
        pid,
        msg
    )
}

pub use pathosd_core::time::{syslog_timestamp, utc_timestamp};

/// The level a reload set (index into `LevelFilter::iter()`), usize::MAX
/// while none did: then the logger's own level applies.
static RELOADED_LEVEL: AtomicUsize = AtomicUsize::new(usize::MAX);

/// The least level copied for OTLP (index into `LevelFilter::iter()`);
/// [`OTEL_OFF`] while no logs collector is set, [`OTEL_CONSOLE`] to follow
/// the console's level.
static OTEL_LEVEL: AtomicUsize = AtomicUsize::new(OTEL_OFF);
const OTEL_OFF: usize = usize::MAX;
const OTEL_CONSOLE: usize = usize::MAX - 1;
/// Records kept for the exporter between two drains, at the least: the
/// oldest go first.
const OTEL_MIN: usize = 512;
/// Records kept between two drains now: [`OTEL_MIN`] and one per VIP and
/// per check ([`otel_room`]). One step of the owner, which the exporter
/// cannot drain in the middle of, logs up to a line per VIP or check (the
/// start, or a backend every VIP shares going down): a fixed 512 lost a
/// hundred of the start's lines at 1,000 VIPs. A record is its line and
/// 48 bytes, and the buffer is emptied every 5 s.
static OTEL_MAX: AtomicUsize = AtomicUsize::new(OTEL_MIN);

/// One record copied for OTLP.
pub(crate) struct OtelRecord {
    pub time: SystemTime,
    pub level: Level,
    pub body: String,
}

/// The records waiting for the exporter. A logger that finds it locked
/// (the exporter draining it) drops its record rather than wait: counted
/// in [`OTEL_DROPPED`].
static OTEL_BUF: Mutex<std::collections::VecDeque<OtelRecord>> =
    Mutex::new(std::collections::VecDeque::new());
static OTEL_DROPPED: AtomicU32 = AtomicU32::new(0);

/// The exporter's own lines never go to the collector: a collector that
/// is down would otherwise be told so in a loop.
const OTEL_TARGET: &str = "pathosd::daemon::otel";

fn console_level(own: LevelFilter) -> LevelFilter {
    let reloaded = RELOADED_LEVEL.load(Ordering::Relaxed);
    LevelFilter::iter().nth(reloaded).unwrap_or(own)
}

fn otel_level(console: LevelFilter) -> LevelFilter {
    match OTEL_LEVEL.load(Ordering::Relaxed) {
        _ if !pathosd_core::OTEL => LevelFilter::Off,
        OTEL_OFF => LevelFilter::Off,
        OTEL_CONSOLE => console,
        i => LevelFilter::iter().nth(i).unwrap_or(LevelFilter::Off),
    }
}

/// Starts (Some: the level, None: the console's) or stops (`on` false)
/// copying records for OTLP; what was kept is dropped either way.
pub(crate) fn set_otel(on: bool, level: Option<LevelFilter>) {
    let i = match (on, level) {
        (false, _) => OTEL_OFF,
        (true, None) => OTEL_CONSOLE,
        (true, Some(l)) => LevelFilter::iter().position(|x| x == l).unwrap_or(OTEL_OFF),
    };
    OTEL_LEVEL.store(i, Ordering::Relaxed);
    if let Ok(mut b) = OTEL_BUF.lock() {
        b.clear();
    }
    let console = console_level(
        LevelFilter::iter()
            .nth(CONSOLE_AT_INIT.load(Ordering::Relaxed))
            .unwrap_or(LevelFilter::Info),
    );
    log::set_max_level(console.max(otel_level(console)));
}

/// Sizes the OTLP copy for `lines` more lines than [`OTEL_MIN`]: the
/// VIPs and checks of the configuration running.
pub(crate) fn otel_room(lines: usize) {
    OTEL_MAX.store(OTEL_MIN.saturating_add(lines), Ordering::Relaxed);
}

/// The records kept since the last call, oldest first.
pub(crate) fn take_otel() -> std::collections::VecDeque<OtelRecord> {
    OTEL_BUF
        .lock()
        // Taken whole, not drained (no draining iterator compiled for it),
        // and not made a Vec (no rotation compiled for it).
        .map(|mut b| std::mem::take(&mut *b))
        .unwrap_or_default()
}

/// Records dropped from the OTLP copy since the daemon started.
pub(crate) fn otel_dropped() -> u32 {
    OTEL_DROPPED.load(Ordering::Relaxed)
}

/// The console level [`init`] was given (index into `LevelFilter::iter()`).
static CONSOLE_AT_INIT: AtomicUsize = AtomicUsize::new(3);

impl Logger {
    fn copy(&self, r: &Record, console: LevelFilter) {
        if r.level() > otel_level(console) || r.target().starts_with(OTEL_TARGET) {
            return;
        }
        let rec = OtelRecord {
            time: SystemTime::now(),
            level: r.level(),
            body: r.args().to_string(),
        };
        match OTEL_BUF.try_lock() {
            Ok(mut b) => {
                if b.len() >= OTEL_MAX.load(Ordering::Relaxed) {
                    b.pop_front();
                    OTEL_DROPPED.fetch_add(1, Ordering::Relaxed);
                }
                b.push_back(rec);
            }
            Err(_) => {
                OTEL_DROPPED.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

impl Log for Logger {
    fn enabled(&self, m: &Metadata) -> bool {
        let console = console_level(self.level);
        m.level() <= console || m.level() <= otel_level(console)
    }

    fn log(&self, r: &Record) {
        let console = console_level(self.level);
        self.copy(r, console);
        if r.level() > console {
            return;
        }
        let msg = r.args().to_string();
        let Ok(mut sink) = self.sink.lock() else {
            return;
        };
        match &mut *sink {
            Sink::Syslog(sock) => {
                let line = syslog_line(r.level(), std::process::id(), &msg, SystemTime::now());
                if sock.send(line.as_bytes()).is_err() {
                    // logd restarted or gone: the line still reaches someone.
                    eprintln!("{} {msg}", r.level());
                }
            }
            Sink::Stderr { timestamps } => {
                let mut e = std::io::stderr().lock();
                if *timestamps {
                    let _ = write!(e, "{} ", utc_timestamp(SystemTime::now()));
                }
                let _ = writeln!(e, "{:<5} {msg}", r.level());
            }
        }
    }

    fn flush(&self) {}
}

/// Picks the sink: syslog when asked (or, unset, when /dev/log exists),
/// falling back to stderr if /dev/log cannot be reached.
pub(crate) fn choose_sink(syslog: Option<bool>, timestamps: Option<bool>) -> Sink {
    let want_syslog = syslog.unwrap_or_else(|| std::path::Path::new("/dev/log").exists());
    if want_syslog {
        if let Ok(sock) = UnixDatagram::unbound() {
            if sock.connect("/dev/log").is_ok() {
                return Sink::Syslog(sock);
            }
        }
    }
    Sink::Stderr {
        timestamps: timestamps.unwrap_or(true),
    }
}

/// Changes the level at runtime (reload of `logging.level`).
pub(crate) fn set_level(level: LevelFilter) {
    if let Some(i) = LevelFilter::iter().position(|l| l == level) {
        RELOADED_LEVEL.store(i, Ordering::Relaxed);
    }
    log::set_max_level(level.max(otel_level(level)));
}

/// Installs the logger once; later calls (tests, reload) are ignored.
pub fn init(level: LevelFilter, sink: Sink) {
    let logger = Logger {
        sink: Mutex::new(sink),
        level,
    };
    if log::set_boxed_logger(Box::new(logger)).is_ok() {
        if let Some(i) = LevelFilter::iter().position(|l| l == level) {
            CONSOLE_AT_INIT.store(i, Ordering::Relaxed);
        }
        log::set_max_level(level);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syslog_priorities_use_the_daemon_facility() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_796_800_000);
        assert_eq!(
            syslog_line(Level::Error, 7, "x", t),
            "<27>Dec  9 07:06:40 pathosd[7]: x"
        );
        assert_eq!(
            syslog_line(Level::Info, 7, "x", t),
            "<30>Dec  9 07:06:40 pathosd[7]: x"
        );
    }

    #[test]
    fn syslog_sink_sends_datagrams_to_the_socket() {
        let dir = std::env::temp_dir().join(format!("pathosd-log-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("log.sock");
        let _ = std::fs::remove_file(&path);
        let server = UnixDatagram::bind(&path).unwrap();
        let client = UnixDatagram::unbound().unwrap();
        client.connect(&path).unwrap();
        let logger = Logger {
            sink: Mutex::new(Sink::Syslog(client)),
            level: LevelFilter::Info,
        };
        logger.log(
            &Record::builder()
                .level(Level::Warn)
                .args(format_args!("vip web withdrawn"))
                .build(),
        );
        logger.log(
            &Record::builder()
                .level(Level::Debug)
                .args(format_args!("hidden"))
                .build(),
        );
        let mut buf = [0u8; 256];
        server
            .set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let n = server.recv(&mut buf).unwrap();
        let line = std::str::from_utf8(&buf[..n]).unwrap();
        assert!(line.starts_with("<28>"), "{line}");
        let pid = format!(" pathosd[{}]: vip web withdrawn", std::process::id());
        assert_eq!(line.get(19..), Some(pid.as_str()), "{line}");
        server.set_nonblocking(true).unwrap();
        assert!(
            server.recv(&mut buf).is_err(),
            "debug line must be filtered"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn records_at_the_otel_level_are_copied_and_the_exporters_own_are_not() {
        let logger = Logger {
            sink: Mutex::new(Sink::Stderr { timestamps: false }),
            level: LevelFilter::Error,
        };
        set_otel(true, Some(LevelFilter::Warn));
        let rec = |level: Level, target: &str, msg: &str| {
            logger.log(
                &Record::builder()
                    .level(level)
                    .target(target)
                    .args(format_args!("{msg}"))
                    .build(),
            )
        };
        rec(Level::Info, "pathosd::daemon::owner", "below");
        rec(Level::Warn, "pathosd::daemon::owner", "at");
        rec(Level::Error, "pathosd::daemon::otel", "own");
        // Other tests log through loggers of their own meanwhile, into the
        // same buffer: only this test's records are looked at.
        let ours = ["below", "at", "own"];
        let got: Vec<String> = take_otel()
            .into_iter()
            .map(|r| r.body)
            .filter(|b| ours.contains(&b.as_str()))
            .collect();
        assert_eq!(got, ["at"]);
        // Room for a line per VIP and check: a start's 1,000 lines are all
        // kept until the drain; with none, the oldest go past 512.
        let burst = |n: usize| {
            for i in 0..n {
                rec(Level::Warn, "pathosd::daemon::owner", &format!("burst {i}"));
            }
            take_otel()
                .into_iter()
                .filter(|r| r.body.starts_with("burst "))
                .count()
        };
        otel_room(1000);
        assert_eq!(burst(1000), 1000);
        otel_room(0);
        assert!(burst(1000) <= OTEL_MIN);
        set_otel(false, None);
        rec(Level::Error, "pathosd::daemon::owner", "off");
        assert!(take_otel().is_empty());
    }
}
