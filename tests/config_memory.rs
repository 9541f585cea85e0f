//! Memory of the config loader at the largest config allowed (10,000 VIPs;
//! issue 11). Each load runs in a process of its own, this test binary run
//! again with one test selected, which reports its peak RSS (VmHWM): two
//! loads in one process would share malloc's state, and the test harness's
//! other threads would share its peak.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Set in the child: the config file to load.
const CHILD_FILE: &str = "PATHOSD_TEST_LOAD_FILE";
/// The variable the config's placeholder names.
const KEY_VAR: &str = "PATHOSD_TEST_MD5";
const KEY: &str = "k3y";

/// A JSON config of `n` `always` VIPs whose neighbor's `auth_password` is
/// `password` (a placeholder or its value).
fn config(n: usize, password: &str) -> String {
    let mut s = format!(
        r#"{{
  "schema": "v1",
  "router": {{ "asn": 65001, "router_id": "127.0.0.1" }},
  "bgp": {{ "listen_port": -1, "neighbors": [
    {{ "name": "r", "address": "127.0.0.2", "peer_asn": 65000, "auth_password": "{password}" }}
  ] }},
  "api": {{ "listen": "" }},
  "vips": [
"#
    );
    for i in 0..n {
        let sep = if i + 1 < n { "," } else { "" };
        s.push_str(&format!(
            "    {{ \"name\": \"v{}\", \"prefix\": \"10.{}.{}.{}/32\", \"always\": true }}{sep}\n",
            i + 1,
            i / 65536,
            (i / 256) % 256,
            i % 256
        ));
    }
    s.push_str("  ]\n}\n");
    s
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// VmHWM of a child that loaded `file`, KiB.
fn peak_kib(file: &Path) -> u64 {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args([
            "--exact",
            "loading_a_config_with_a_placeholder_keeps_one_text",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_FILE, file)
        // As the daemon runs (`sys::fix_mmap_threshold`, before it loads):
        // glibc's threshold fixed at its default, not raised by each large
        // free, so large blocks are mapped and unmapped whole.
        .env("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=131072")
        .env(KEY_VAR, KEY)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        // The harness may print its "test … " before it on the same line.
        .find_map(|l| l.split("peak_kib ").nth(1))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak in the child's output: {stdout}"))
}

/// The child's part: load, check, report the process's peak RSS.
fn child(file: &str) {
    let c = pathosd::config_file::load(Path::new(file), None).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(c.vips.len(), 10_000);
    assert_eq!(c.neighbors[0].settings.password.as_deref(), Some(KEY));
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let hwm = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .expect("VmHWM in /proc/self/status");
    println!("\npeak_kib {}", hwm.trim().trim_end_matches("kB").trim());
}

/// A placeholder makes the loader expand the file into a copy. The file's
/// own text is freed then, not kept beside the copy while the copy is
/// parsed and the 10,000 VIPs decoded and validated: the load's peak is
/// that of the same config written without the placeholder. Keeping both
/// texts added the whole file (≈ 0.7 MB here) to the daemon's peak RSS.
#[test]
fn loading_a_config_with_a_placeholder_keeps_one_text() {
    if let Ok(file) = std::env::var(CHILD_FILE) {
        child(&file);
        return;
    }
    let dir = std::env::temp_dir().join(format!("pathosd-config-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let with = config(10_000, &format!("%{{{KEY_VAR}}}"));
    let without = config(10_000, KEY);
    let text_kib = u64::try_from(with.len() / 1024).unwrap();
    let (with, without) = (
        write(&dir, "with.json", &with),
        write(&dir, "without.json", &without),
    );
    // The lower of two runs each: a page fault more or less is noise.
    let a = peak_kib(&with).min(peak_kib(&with));
    let b = peak_kib(&without).min(peak_kib(&without));
    std::fs::remove_dir_all(&dir).unwrap();
    eprintln!("peak with a placeholder {a} KiB, without {b} KiB, text {text_kib} KiB");
    assert!(
        a < b + text_kib / 2,
        "peak with a placeholder {a} KiB, without {b} KiB: the file's {text_kib} KiB stayed alive"
    );
}
