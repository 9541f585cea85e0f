//! What pathosd writes to /dev/log, read back as OpenWrt's logd and busybox
//! syslogd read it, for PIDs of every width: logd (a faithful stand-in of
//! ubox's `log_add`, tests/support/logd.rs) must keep the `pathosd[PID]: `
//! tag that `logread -e pathosd` looks for, and busybox syslogd (Debian's,
//! the real one) must take the timestamp and keep the tag.

mod support;

use std::os::unix::net::UnixDatagram;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use log::Level;
use pathosd::logging::syslog_line;
use support::logd::{log_add, logread_matches, receive, SOURCE_KLOG, SOURCE_SYSLOG};
use support::{poll, TempDir};

/// 1 to 7 digits: a fresh boot, a busy router's respawn (five digits are
/// common past PID 9999), and a 64-bit kernel's pid_max of 4194304.
const PIDS: [u32; 8] = [1, 42, 123, 4567, 10006, 12345, 99999, 1234567];

const MSG: &str = "vip web 10.0.0.1/32: announced -> withdrawn (web: fall threshold reached)";

/// Dec 9 07:06:40 UTC: a one-digit day, padded as "%e" pads it.
fn t() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_800_000)
}

#[test]
fn logd_keeps_the_tag_of_every_pid_width() {
    for pid in PIDS {
        let line = syslog_line(Level::Info, pid, MSG, t());
        let (priority, stored) = receive(line.as_bytes());
        assert_eq!(priority, 3 * 8 + 6, "daemon.info: {line}");
        assert_eq!(stored, format!("pathosd[{pid}]: {MSG}"), "{line}");
        assert!(logread_matches("pathosd", &stored), "{stored}");
    }
    // Every level keeps its priority (facility daemon).
    for (level, want) in [
        (Level::Error, 27),
        (Level::Warn, 28),
        (Level::Info, 30),
        (Level::Debug, 31),
    ] {
        assert_eq!(
            receive(syslog_line(level, 12345, MSG, t()).as_bytes()).0,
            want
        );
    }
}

/// The stand-in does what log_add does to lines of other forms too: a
/// 16th byte that is a space is taken for a timestamp's end whatever the
/// 15 before it, trailing white space and newlines are cleaned, the
/// kernel's lines keep their first 16 bytes.
#[test]
fn the_stand_in_follows_log_add() {
    // The old form, without a timestamp: the tag survives only while the
    // 16th byte is not a space, i.e. for PIDs other than five digits.
    assert_eq!(receive(b"<30>pathosd[1234]: x").1, "pathosd[1234]: x");
    assert_eq!(receive(b"<30>pathosd[12345]: x").1, "x");
    assert_eq!(receive(b"<30>pathosd[1234567]: x").1, "pathosd[1234567]: x");
    // musl's syslog() form.
    assert_eq!(receive(b"<13>Dec  9 07:06:40 ntpd[77]: y").1, "ntpd[77]: y");
    assert_eq!(
        receive(b"<13>Dec  9 07:06:40 ntpd[77]: y\n\n").1,
        "ntpd[77]: y"
    );
    assert_eq!(receive(b"<13>a\nb\nc").1, "a b c");
    assert_eq!(receive(b"<13>short line").1, "short line");
    assert_eq!(receive(b"no priority at all").0, 0);
    assert_eq!(receive(b"<>x"), (0, "x".to_string()));
    assert_eq!(
        log_add(b"<6>[    1.000000] eth0: link up", SOURCE_KLOG).1,
        "[    1.000000] eth0: link up"
    );
    assert_eq!(log_add(b"<6>123456789012345 rest", SOURCE_SYSLOG).1, "rest");
    // Cut at LOG_LINE_SIZE - 1 bytes, and at a NUL.
    let long = format!("<30>{}", "x".repeat(2000));
    assert_eq!(receive(long.as_bytes()).1.len(), 1023 - 4);
    assert_eq!(receive(b"<30>abc\0def").1, "abc");
}

/// Debian's busybox syslogd, on a /dev/log of its own (a private mount
/// namespace; the test reaches the socket through /proc/PID/root): it takes
/// pathosd's timestamp as the line's time and keeps the tag.
#[test]
fn busybox_syslogd_takes_the_timestamp_and_keeps_the_tag() {
    let dir = TempDir::new("bb-syslogd");
    let out = dir.path("messages");
    // /run too: busybox writes /var/run/syslogd.pid.
    let script = "mount -t tmpfs tmpfs /dev && mount -t tmpfs tmpfs /run \
                  && exec busybox syslogd -n -O \"$0\"";
    let mut child = Command::new("unshare")
        .args([
            "--mount",
            "--propagation",
            "private",
            "--",
            "sh",
            "-c",
            script,
        ])
        .arg(&out)
        .stdin(Stdio::null())
        .spawn()
        .expect("unshare (util-linux) and busybox are needed");
    let sock = format!("/proc/{}/root/dev/log", child.id());
    let up = poll(Duration::from_secs(5), || {
        std::path::Path::new(&sock).exists().then_some(())
    });
    if up.is_none() {
        let _ = child.kill();
        panic!(
            "busybox syslogd did not open {sock}: {:?}",
            child.try_wait()
        );
    }
    let tx = UnixDatagram::unbound().unwrap();
    for pid in PIDS {
        let line = syslog_line(Level::Info, pid, MSG, t());
        tx.send_to(line.as_bytes(), &sock).unwrap();
    }
    let lines = poll(Duration::from_secs(5), || {
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        let ours: Vec<String> = text
            .lines()
            .filter(|l| l.contains(" pathosd["))
            .map(str::to_string)
            .collect();
        (ours.len() >= PIDS.len()).then_some(ours)
    });
    let _ = child.kill();
    let _ = child.wait();
    let ours = lines.unwrap_or_else(|| {
        panic!(
            "busybox wrote: {:?}",
            std::fs::read_to_string(&out).unwrap_or_default()
        )
    });
    // "%s %.64s %s %s": the message's time, the host, facility.priority,
    // the rest (after busybox's own "syslogd started" line).
    assert_eq!(ours.len(), PIDS.len(), "{ours:#?}");
    for (line, pid) in ours.iter().zip(PIDS) {
        assert!(line.starts_with("Dec  9 07:06:40 "), "{line}");
        let tail = format!(" daemon.info pathosd[{pid}]: {MSG}");
        assert!(line.ends_with(&tail), "{line}");
    }
}
