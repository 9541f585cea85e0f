//! The `log` facade's backend: syslog on OpenWrt (logd keeps only 16 KiB, so
//! pathosd is quiet by default: one line per transition), stderr elsewhere.

use log::{Level, LevelFilter, Log, Metadata, Record};
use std::io::Write;
use std::os::unix::net::UnixDatagram;
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

/// Formats one syslog datagram as busybox syslogd and logd accept it.
pub(crate) fn syslog_line(level: Level, pid: u32, msg: &str) -> String {
    format!("<{}>pathosd[{}]: {}", priority(level), pid, msg)
}

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (UTC, no crate needed).
pub fn utc_timestamp(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// The level a reload set (index into `LevelFilter::iter()`), usize::MAX
/// while none did: then the logger's own level applies.
static RELOADED_LEVEL: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(usize::MAX);

impl Log for Logger {
    fn enabled(&self, m: &Metadata) -> bool {
        let reloaded = RELOADED_LEVEL.load(std::sync::atomic::Ordering::Relaxed);
        let level = LevelFilter::iter().nth(reloaded).unwrap_or(self.level);
        m.level() <= level
    }

    fn log(&self, r: &Record) {
        if !self.enabled(r.metadata()) {
            return;
        }
        let msg = r.args().to_string();
        let Ok(mut sink) = self.sink.lock() else {
            return;
        };
        match &mut *sink {
            Sink::Syslog(sock) => {
                let line = syslog_line(r.level(), std::process::id(), &msg);
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
pub fn set_level(level: LevelFilter) {
    if let Some(i) = LevelFilter::iter().position(|l| l == level) {
        RELOADED_LEVEL.store(i, std::sync::atomic::Ordering::Relaxed);
    }
    log::set_max_level(level);
}

/// Installs the logger once; later calls (tests, reload) are ignored.
pub fn init(level: LevelFilter, sink: Sink) {
    let logger = Logger {
        sink: Mutex::new(sink),
        level,
    };
    if log::set_boxed_logger(Box::new(logger)).is_ok() {
        log::set_max_level(level);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syslog_priorities_use_the_daemon_facility() {
        assert_eq!(syslog_line(Level::Error, 7, "x"), "<27>pathosd[7]: x");
        assert_eq!(syslog_line(Level::Info, 7, "x"), "<30>pathosd[7]: x");
    }

    #[test]
    fn timestamps_are_utc_civil_dates() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_796_000_000);
        assert_eq!(utc_timestamp(t), "2026-11-30T00:53:20Z");
        assert_eq!(
            utc_timestamp(SystemTime::UNIX_EPOCH),
            "1970-01-01T00:00:00Z"
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
        assert!(line.starts_with("<28>pathosd["), "{line}");
        assert!(line.ends_with("]: vip web withdrawn"));
        server.set_nonblocking(true).unwrap();
        assert!(
            server.recv(&mut buf).is_err(),
            "debug line must be filtered"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
