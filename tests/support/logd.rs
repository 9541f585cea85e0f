//! A stand-in of OpenWrt's logd for CI, which has none: what `log_add` in
//! ubox's log/syslog.c (6f78fa4) keeps of a datagram from /dev/log, ported
//! step by step, and logread's `-e` filter. The real logd is run by hand
//! (docs/testing.md).

/// `SOURCE_SYSLOG` of log/syslog.h: a datagram from /dev/log.
pub const SOURCE_SYSLOG: u8 = 1;
/// `SOURCE_KLOG`: a line of /proc/kmsg.
pub const SOURCE_KLOG: u8 = 0;

/// `LOG_LINE_SIZE`: `syslog_handle_fd` receives at most this less one byte.
const LOG_LINE_SIZE: usize = 1024;
/// `SYSLOG_PADDING`: the length of RFC 3164's `Mmm dd hh:mm:ss `.
const SYSLOG_PADDING: usize = 16;

/// One received datagram as logd stores it: (priority, message). The
/// message is what `logread` prints and what its `-e` matches.
pub fn receive(datagram: &[u8]) -> (u32, String) {
    // syslog_handle_fd: recv(..., LOG_LINE_SIZE - 1), then NUL-terminated
    // and handed on with strlen(buf) + 1.
    let got = &datagram[..datagram.len().min(LOG_LINE_SIZE - 1)];
    let len = got.iter().position(|&b| b == 0).unwrap_or(got.len());
    log_add(&got[..len], SOURCE_SYSLOG)
}

/// `log_add(buf, size, source)` with `buf` the bytes before the NUL.
pub fn log_add(buf: &[u8], source: u8) -> (u32, String) {
    // Newlines become spaces.
    let mut buf: Vec<u8> = buf
        .iter()
        .map(|&b| if b == b'\n' { b' ' } else { b })
        .collect();
    // Trailing white space goes (isspace: space, \t \n \v \f \r). The C
    // loop has no lower bound; a message of spaces only is cut to nothing.
    while buf.last().is_some_and(|&b| b" \t\n\x0b\x0c\r".contains(&b)) {
        buf.pop();
    }
    // "^<([0-9]*)>(.*)": the priority is stripped; atoi of no digits is 0.
    let mut priority = 0u32;
    let mut start = 0;
    if buf.first() == Some(&b'<') {
        let digits = buf[1..].iter().take_while(|b| b.is_ascii_digit()).count();
        if buf.get(1 + digits) == Some(&b'>') {
            priority = std::str::from_utf8(&buf[1..1 + digits])
                .ok()
                .and_then(|d| d.parse().ok())
                .unwrap_or(0);
            start = 2 + digits;
        }
    }
    let rest = &buf[start..];
    // "strip syslog timestamp": `size` counts the NUL, so `size > 16` is
    // 16 bytes or more; the 16th byte being a space is all it checks.
    let rest = if source == SOURCE_SYSLOG
        && rest.len() + 1 > SYSLOG_PADDING
        && rest[SYSLOG_PADDING - 1] == b' '
    {
        &rest[SYSLOG_PADDING..]
    } else {
        rest
    };
    (priority, String::from_utf8_lossy(rest).into_owned())
}

/// `logread -e PATTERN`: regcomp(PATTERN, REG_NOSUB), a basic regular
/// expression matched anywhere in the message; only literal patterns here.
pub fn logread_matches(pattern: &str, message: &str) -> bool {
    assert!(
        !pattern.contains(['.', '[', ']', '*', '^', '$', '\\']),
        "the stand-in knows only literal patterns: {pattern}"
    );
    message.contains(pattern)
}
