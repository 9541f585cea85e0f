//! Wall-clock times as text. The caller reads the clock (a driver, or a
//! snapshot that carries the time) and passes it in.

use std::time::SystemTime;

/// `t` in UTC: (year, month 1 to 12, day, hours, minutes, seconds).
fn civil(t: SystemTime) -> (i64, i64, i64, u64, u64, u64) {
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
    (y, m, d, rem / 3600, (rem / 60) % 60, rem % 60)
}

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (UTC, no crate needed).
pub fn utc_timestamp(t: SystemTime) -> String {
    let (y, m, d, hh, mm, ss) = civil(t);
    format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")
}

/// RFC 3164's `Mmm dd hh:mm:ss` (the day padded with a space, English
/// month names) in UTC: what musl's syslog() writes (gmtime_r, then
/// strftime's "%b %e %T" in the C locale), so what every program on
/// OpenWrt sends to logd.
pub fn syslog_timestamp(t: SystemTime) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (_, m, d, hh, mm, ss) = civil(t);
    let month = MONTHS.get((m - 1) as usize).unwrap_or(&"Jan");
    format!("{month} {d:2} {hh:02}:{mm:02}:{ss:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn syslog_timestamps_are_musls() {
        let at = |s| SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(s);
        // One-digit days are padded with a space ("%e"): always 15 bytes.
        assert_eq!(syslog_timestamp(at(1_796_000_000)), "Nov 30 00:53:20");
        assert_eq!(syslog_timestamp(at(1_796_800_000)), "Dec  9 07:06:40");
        assert_eq!(syslog_timestamp(SystemTime::UNIX_EPOCH), "Jan  1 00:00:00");
        assert_eq!(syslog_timestamp(at(951_782_400)), "Feb 29 00:00:00");
        for s in (0..400).map(|i| at(i * 7_919_999)) {
            assert_eq!(syslog_timestamp(s).len(), 15);
        }
    }
}
