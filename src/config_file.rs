//! The configuration's I/O, which the pure loader (`config::load`) leaves
//! to the driver: reading the file or standard input, bounded, and the
//! process environment that `%{VAR}` placeholders are looked up in.

use crate::config::load::{too_large, MAX_FILE_BYTES};
use crate::config::{check_str, load_string, Config, ConfigError, Format, RunConfig};
use std::io::Read;
use std::path::Path;

/// Where a configuration comes from: `-` is standard input.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Looks a `%{VAR}` placeholder up in the process environment.
pub fn env(name: &str) -> Option<String> {
    std::env::var_os(name).map(|v| v.to_string_lossy().into_owned())
}

/// Reads, expands, parses, decodes and validates the configuration at
/// `path` (`-`: standard input) into what the daemon runs on. With
/// `format` None the syntax is detected from the content.
pub fn load(path: &Path, format: Option<Format>) -> Result<RunConfig, Vec<ConfigError>> {
    // The text moves in, so the loader frees it once it is decoded.
    load_string(read(path)?, format, &env)
}

/// The decoded configuration at `path` once every rule passed, as the file
/// says it (`pathosd convert`).
pub fn check(path: &Path, format: Option<Format>) -> Result<Config, Vec<ConfigError>> {
    check_str(&read(path)?, format, &env)
}

/// The text at `path` (`-`: standard input), at most [`MAX_FILE_BYTES`]:
/// one byte more tells a file that is too large, so an endless one
/// (/dev/zero, a FIFO) fails at once instead of reading until memory runs
/// out.
pub fn read(path: &Path) -> Result<String, Vec<ConfigError>> {
    let (what, read) = if is_stdin(path) {
        (
            "standard input".to_string(),
            read_bounded(std::io::stdin().lock(), 0),
        )
    } else {
        let what = path.display().to_string();
        let read = std::fs::File::open(path).and_then(|f| {
            // Room for the file as it is now (plus the byte that tells it
            // grew past the cap), not grown by doubling: a 0.77 MB file
            // held 1 MB.
            let size = f
                .metadata()
                .ok()
                .and_then(|m| usize::try_from(m.len()).ok())
                .unwrap_or(0);
            read_bounded(f, size)
        });
        (what, read)
    };
    let fail = |message: String| {
        vec![ConfigError {
            path: String::new(),
            message: format!("reading {what}: {message}"),
        }]
    };
    let buf = read.map_err(|e| fail(e.to_string()))?;
    if buf.len() > MAX_FILE_BYTES {
        return Err(fail(too_large()));
    }
    String::from_utf8(buf).map_err(|e| {
        fail(format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// Reads until the end or until past [`MAX_FILE_BYTES`], whichever comes
/// first. A plain loop of `read`s: std's `read_to_end` compiled once for
/// the file and once for standard input cost more flash than the two loops.
fn read_bounded(mut r: impl Read, size: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(size.min(MAX_FILE_BYTES).saturating_add(1));
    let mut chunk = [0u8; 8192];
    while buf.len() <= MAX_FILE_BYTES {
        // At most one byte past the limit, as a `take` would read.
        let room = (MAX_FILE_BYTES + 1 - buf.len()).min(chunk.len());
        match r.read(&mut chunk[..room]) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(buf)
}
