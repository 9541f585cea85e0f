//! Commands for the tests that build network namespaces (they run as root).

use std::process::Command;

/// Runs `args[0]` with the rest as arguments; it must succeed.
pub fn sh(args: &[&str]) {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `ip args`; it must succeed.
pub fn ip(args: &[&str]) {
    let mut a = vec!["ip"];
    a.extend_from_slice(args);
    sh(&a);
}

/// A named network namespace, deleted on drop (also after a panic).
pub struct Netns(pub String);

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// Runs this test binary's ignored test `test` alone inside `ns`, with the
/// environment variable `env` set to the namespace's name (the inner test
/// refuses to run without it); it must have run and passed.
pub fn run_ignored_in(ns: &str, test: &str, env: &str) {
    let out = Command::new("ip")
        .args(["netns", "exec", ns])
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            test,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(env, ns)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{test} failed in {ns}:\n{text}");
    assert!(text.contains("1 passed"), "{test} did not run:\n{text}");
}

/// A BIRD inside a namespace with its own config, control socket and log,
/// ended (by PID) on drop.
pub struct NsBird {
    dir: super::TempDir,
    _daemon: super::Daemon,
}

impl NsBird {
    /// Starts `bird -f` with `conf` in namespace `ns`; the files live in a
    /// temporary directory named after `tag`. Returns once BIRD answers
    /// `birdc show status` (within 10 s, or the test fails with its log).
    pub fn start(ns: &str, conf: &str, tag: &str) -> NsBird {
        let dir = super::TempDir::new(tag);
        let path = dir.path("bird.conf");
        std::fs::write(&path, conf).unwrap();
        let log = std::fs::File::create(dir.path("bird.log")).unwrap();
        let child = Command::new("ip")
            .args(["netns", "exec", ns, "bird", "-f", "-c"])
            .arg(&path)
            .arg("-s")
            .arg(dir.path("bird.ctl"))
            .arg("-P")
            .arg(dir.path("bird.pid"))
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("ip netns exec ... bird (iproute2, bird2): {e}"));
        let b = NsBird {
            dir,
            _daemon: super::Daemon(child),
        };
        let up = super::poll(std::time::Duration::from_secs(10), || {
            b.birdc(&["show", "status"])
        });
        assert!(up.is_some(), "BIRD in {ns} did not come up: {}", b.log());
        b
    }

    /// `birdc` on this BIRD's control socket, bounded at 3 s; None when it
    /// failed or timed out.
    pub fn birdc(&self, args: &[&str]) -> Option<String> {
        super::run(
            Command::new("birdc")
                .arg("-s")
                .arg(self.dir.path("bird.ctl"))
                .args(args),
            std::time::Duration::from_secs(3),
        )
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path("bird.log")).unwrap_or_default()
    }

    /// Rewrites bird.conf and applies it with `birdc configure`.
    pub fn configure(&self, conf: &str) {
        std::fs::write(self.dir.path("bird.conf"), conf).unwrap();
        let out = self.birdc(&["configure"]).unwrap_or_default();
        assert!(out.contains("Reconfigur"), "birdc configure: {out}");
    }

    /// Whether BGP protocol `proto` is Established.
    pub fn established(&self, proto: &str) -> bool {
        self.birdc(&["show", "protocols", "all", proto])
            .is_some_and(|o| o.contains("BGP state:          Established"))
    }

    /// The best route BIRD picked for `prefix` (`show route ... primary`).
    pub fn best(&self, prefix: &str) -> Option<String> {
        let out = self.birdc(&["show", "route", prefix, "primary", "all"])?;
        out.lines().any(|l| l.starts_with(prefix)).then_some(out)
    }
}
