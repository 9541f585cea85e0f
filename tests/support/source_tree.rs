//! The daemon's own source files, for the tests that read the code itself
//! (tests/pure_layers.rs, tests/lock_sites.rs). Included by `#[path]`, not
//! through `support`, so those tests build nothing else.

use std::fs;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `p`, in sorted order.
pub fn rust_files(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        let mut entries: Vec<PathBuf> = fs::read_dir(p)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            .map(|e| e.expect("read_dir entry").path())
            .collect();
        entries.sort();
        // The source tree is a few folders deep: the recursion is bounded
        // by it, not by input.
        for e in entries {
            rust_files(&e, out);
        }
    } else if p.extension().is_some_and(|x| x == "rs") {
        out.push(p.to_path_buf());
    }
}
