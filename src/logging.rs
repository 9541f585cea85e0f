//! The `log` facade's backend: syslog on OpenWrt (logd keeps only 16 KiB, so
//! pathosd is quiet by default: one line per transition), stderr elsewhere;
//! and the rate limit of lines a client or a stranger can provoke
//! ([`LogLimit`]).

mod limit;

pub(crate) use limit::LogLimit;

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

pub use pathosd_core::time::utc_timestamp;

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
pub(crate) fn set_level(level: LevelFilter) {
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
