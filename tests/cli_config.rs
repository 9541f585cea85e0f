//! The real binary: exit statuses, what goes to stdout and stderr.

use std::path::PathBuf;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_pathosd");

/// A file in a directory of this test's own.
fn temp_file(test: &str, name: &str, contents: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pathosd-cli-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, contents).unwrap();
    p
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).env_clear().output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn example(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn version_is_the_cargo_version() {
    let out = run(&["--version"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text(&out.stdout),
        format!("pathosd {}\n", env!("CARGO_PKG_VERSION"))
    );
    let toml =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
            .unwrap();
    let line = toml.lines().find(|l| l.starts_with("version = ")).unwrap();
    assert_eq!(line, format!("version = \"{}\"", env!("CARGO_PKG_VERSION")));
}

#[test]
fn five_mistakes_give_five_path_named_errors() {
    let cfg = r#"{
  "schema": "v1",
  "router": {"asn": 65001, "router_id": "2001:db8::1"},
  "bgp": {"neighbors": [{"name": "bird", "address": "127.0.0.2", "peer_asn": 65000}]},
  "logging": {"level": "info", "colour": "yes"},
  "vips": [
    {"name": "a", "prefix": "10.0.0.1/32", "check": {"type": "tcp", "tcp": {"port": 80}}},
    {"name": "b", "prefix": "10.0.0.1/32", "check": {"type": "tcp", "tcp": {"port": 81}}},
    {"name": "c", "prefix": "10.0.0.3/32", "checks_policy": "web && pnig", "checks": [
      {"name": "web", "type": "tcp", "tcp": {"port": 80}},
      {"type": "ping", "timeout": "1s"}
    ]}
  ]
}"#;
    let f = temp_file("five", "bad.json", cfg);
    let out = run(&["validate", "--config", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "");
    let err = text(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines,
        vec![
            format!("pathosd: {}: invalid configuration (5 errors):", f.display()).as_str(),
            "logging.colour: unknown field",
            "router.router_id: 2001:db8::1 is not an IPv4 address (the BGP identifier is 32 bits)",
            "vips[1].prefix: duplicate prefix 10.0.0.1/32 (also vips[0].prefix)",
            "vips[2].checks[1].timeout: 1s must be less than interval 1s",
            "vips[2].checks_policy: column 8 of \"web && pnig\": unknown check \"pnig\" (checks: web, ping)",
        ]
    );
    // `run` refuses the same file the same way.
    let out = run(&["run", "--config", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stderr), err);
}

#[test]
fn examples_validate_and_convert() {
    for name in ["pathosd.json", "pathosd.uci", "openwrt-bird.uci"] {
        let path = example(name);
        let out = run(&["validate", "--config", &path]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "configuration is valid\n");
        let out = run(&["convert", "--config", &path]);
        assert_eq!(out.status.code(), Some(0), "{name}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["schema"], "v1");
        // The converted JSON is itself a valid config.
        let f = temp_file("convert", &format!("{name}.json"), &text(&out.stdout));
        let out = run(&[
            "validate",
            "--config",
            f.to_str().unwrap(),
            "--format",
            "json",
        ]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out.stderr));
    }
}

/// Until the daemon is wired into `cli::run`, `run` stops after validating.
/// Whoever wires the daemon replaces this test (run would then not return).
#[test]
fn run_loads_and_returns() {
    let out = run(&["run", "--config", &example("pathosd.json"), "--debug"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // pathosd's default command: flags alone mean run.
    let out = run(&["--config", &example("pathosd.uci")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &[][..],
        &["frobnicate"],
        &["validate"],
        &["validate", "--config"],
        &["validate", "--config", "x", "--format", "yaml"],
        &["convert", "--config", "x", "--debug"],
        &["run", "-c", "x", "--bogus"],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.starts_with("pathosd: "), "{args:?}: {err}");
        assert!(
            err.contains("usage: pathosd run --config FILE"),
            "{args:?}: {err}"
        );
    }
    let out = run(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).starts_with("usage: "));
}

#[test]
fn unreadable_file_is_exit_1() {
    let out = run(&["validate", "--config", "/nonexistent/pathosd.json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("reading /nonexistent/pathosd.json: "),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn placeholders_come_from_the_environment() {
    let cfg = r#"{"schema": "v1",
  "router": {"asn": 65001, "router_id": "%{PATHOSD_TEST_RID}"},
  "bgp": {"neighbors": [{"name": "n", "address": "%{PATHOSD_TEST_PEER}", "peer_asn": 65000,
                         "auth_password": "%{PATHOSD_TEST_MD5}"}]},
  "vips": [{"name": "v", "prefix": "10.0.0.9/32", "always": true}]}"#;
    let f = temp_file("env", "env.json", cfg);
    let f = f.to_str().unwrap();
    let out = run(&["validate", "--config", f]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(
            "expanding environment placeholders: missing environment variables for placeholders: PATHOSD_TEST_MD5, PATHOSD_TEST_PEER, PATHOSD_TEST_RID"
        ),
        "{}",
        text(&out.stderr)
    );
    let out = Command::new(BIN)
        .args(["convert", "--config", f])
        .env_clear()
        .env("PATHOSD_TEST_RID", "10.0.0.1")
        .env("PATHOSD_TEST_PEER", "10.0.0.2")
        .env("PATHOSD_TEST_MD5", "")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["router"]["router_id"], "10.0.0.1");
    assert_eq!(v["bgp"]["neighbors"][0]["auth_password"], "");
}

#[test]
fn uci_mistakes_are_named_by_section_and_option() {
    let cfg = "\
package pathosd

config pathosd 'main'
\toption asn '65001'
\toption router_id '10.0.0.1'
\toption listen_port '0'

config neighbor 'bird'
\toption address '127.0.0.2'
\toption peer_asn '65000'
\toption auth_password 'it'\\''s'

config vip 'web'
\toption prefix '10.0.0.1/32'
\toption fail_action 'explode'

config check 'web_tcp'
\toption vip 'web'
\toption type 'tcp'
\toption port '80'
\toption timout '50ms'
";
    let f = temp_file("uci", "pathosd", cfg);
    let out = run(&["validate", "--config", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    let lines: Vec<&str> = err.lines().skip(1).collect();
    assert_eq!(
        lines,
        vec![
            "check 'web_tcp' option timout (line 21): unknown option for a check section",
            "vip 'web' option fail_action (line 15): \"explode\" is not one of withdraw, lower_priority, drain_then_withdraw",
            "pathosd 'main' option listen_port (line 6): 0 must be -1 (disabled) or in range 1..65535",
        ]
    );
}
