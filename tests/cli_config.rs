//! The real binary: exit statuses, what goes to stdout and stderr.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_pathosd");

/// A file in a directory of its own ([`TempDir`]), removed with it on drop.
struct TempFile {
    _dir: TempDir,
    path: PathBuf,
}

impl std::ops::Deref for TempFile {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

fn temp_file(test: &str, name: &str, contents: &str) -> TempFile {
    let dir = TempDir::new(&format!("cli-{test}"));
    let path = dir.path(name);
    std::fs::write(&path, contents).unwrap();
    TempFile { _dir: dir, path }
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
    // Line 1 is what OpenWrt's version check compares; line 2 names the
    // variant (pathosd or pathosd-nossl) by its TLS feature.
    let tls = if cfg!(feature = "tls") {
        "+tls"
    } else {
        "-tls"
    };
    assert_eq!(
        text(&out.stdout),
        format!("pathosd {}\nfeatures: {tls}\n", env!("CARGO_PKG_VERSION"))
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
        if !cfg!(feature = "tls") && name != "openwrt-bird.uci" {
            // Their https check is the one thing a build without TLS
            // (pathosd-nossl) refuses, naming the option and the package.
            assert_eq!(out.status.code(), Some(1), "{name}");
            let err = text(&out.stderr);
            let lines: Vec<&str> = err.lines().skip(1).collect();
            assert_eq!(lines.len(), 1, "{name}: {err}");
            assert!(
                lines[0].contains(
                    "https needs pathosd built with TLS (package pathosd, not pathosd-nossl)"
                ),
                "{name}: {err}"
            );
            continue;
        }
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

/// The example config moved onto this test's own addresses: the HTTP
/// endpoint on 127.77.(pid).`n`, no BGP listener (the neighbor dials), no ubus.
fn example_on_own_address(test: &str, n: u8) -> (TempFile, String) {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(example("pathosd.json")).unwrap()).unwrap();
    let api = format!("127.77.{}.{n}:59179", std::process::id() % 250);
    v["api"]["listen"] = api.clone().into();
    v["api"]["ubus_socket"] = "".into();
    v["bgp"]["listen_port"] = (-1).into();
    // Without a listener the neighbor must dial (nobody answers: that is fine).
    v["bgp"]["neighbors"][0]["passive"] = false.into();
    // A build without TLS refuses the example's https check: plain http.
    if !cfg!(feature = "tls") {
        let check = &mut v["vips"][1]["checks"][0];
        assert_eq!(check["type"], "https");
        check["type"] = "http".into();
        check["http"]
            .as_object_mut()
            .unwrap()
            .remove("tls_insecure");
    }
    let p = temp_file(test, "pathosd.json", &v.to_string());
    (p, api)
}

fn http_get(addr: &str, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(2)))
        .ok()?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nConnection: close\r\n\r\n").as_bytes())
        .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

/// `pathosd run` (and pathosd's default command, flags alone) starts the
/// daemon: it answers /healthz, and SIGTERM stops it with exit status 0.
#[test]
fn run_starts_the_daemon_and_sigterm_stops_it() {
    for (n, args) in [(1u8, &["run", "--debug"][..]), (2, &[][..])] {
        let (cfg, api) = example_on_own_address("run", n);
        let mut child = Command::new(BIN)
            .args(args)
            .args(["--config", cfg.to_str().unwrap()])
            .env_clear()
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut healthy = false;
        while std::time::Instant::now() < deadline {
            if http_get(&api, "/healthz").is_some_and(|r| r.starts_with("HTTP/1.1 200")) {
                healthy = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break Some(st);
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                break None;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let out = child.wait_with_output().unwrap();
        assert!(healthy, "no /healthz: {}", text(&out.stderr));
        assert_eq!(
            status.and_then(|s| s.code()),
            Some(0),
            "{}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains("stopped"),
            "{}",
            text(&out.stderr)
        );
    }
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

/// `--config -` reads standard input, so that `uci export pathosd | pathosd
/// validate --config -` checks staged changes before `uci commit`; `run`
/// refuses it (it rereads its file on reload).
#[test]
fn validate_and_convert_read_standard_input() {
    use std::io::Write;
    use std::process::Stdio;
    let piped = |args: &[&str], input: &[u8]| {
        let mut child = Command::new(BIN)
            .args(args)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        child.wait_with_output().unwrap()
    };
    let uci = "config pathosd 'main'\n\toption asn '65001'\n\toption router_id '10.0.0.1'\n\
               config neighbor 'n'\n\toption address '127.0.0.1'\n\toption peer_asn '65000'\n\
               config vip 'web'\n\toption prefix '10.10.1.5/32'\n\toption always '1'\n";
    let out = piped(&["validate", "--config", "-"], uci.as_bytes());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "configuration is valid\n");
    let out = piped(&["convert", "-c", "-"], uci.as_bytes());
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("\"router_id\""));

    let bad = "config pathosd 'main'\n\toption asn '65001'\n\toption router_id '10.0.0.1'\n\
               config neighbor 'n'\n\toption address '127.0.0.1'\n\toption peer_asn '65000'\n\
               config vip 'web'\n\toption prefix '10.10.1.5/24'\n\toption always '1'\n";
    let out = piped(&["validate", "--config", "-"], bad.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "pathosd: standard input: invalid configuration (1 error):\n\
         vip 'web' option prefix (line 8): \"10.10.1.5/24\" has host bits set: \
         write 10.10.1.5/32 for the address or 10.10.1.0/24 for the network\n"
    );
    let out = piped(
        &["validate", "--config", "-"],
        b"config pathosd 'main'\n\xff\n",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr)
        .contains("reading standard input: not UTF-8 text (invalid byte at offset 22)"));
    let out = run(&["run", "--config", "-"]);
    assert_eq!(out.status.code(), Some(2));
}

/// `validate --json`: the verdict for programs (LuCI's rpcd plugin reads it
/// from `uci export`): one JSON object on standard output, every error with
/// its text and the UCI section, option and line it names, at most 100 of
/// them and a last one saying how many more; nothing on standard error.
#[test]
fn validate_json_names_uci_places() {
    let cfg = "\
config pathosd 'main'
\toption asn '65001'
\toption router_id '10.0.0.1'
\toption listen_port '-1'

config neighbor 'bird'
\toption address '127.0.0.2'
\toption peer_asn '65000'
\toption passive '1'

config vip 'api'
\toption name 'api-v2'
\toption prefix '010.10.1.1/32'
\toption always '1'

config check
\toption vip 'api'
\toption type 'tcp'
";
    let f = temp_file("json", "pathosd", cfg);
    let out = run(&["validate", "--json", "--config", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stderr), "");
    let v: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(v["valid"], false);
    let places: Vec<(&str, &str, u64)> = v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let text = e["text"].as_str().unwrap();
            assert!(text.ends_with(e["message"].as_str().unwrap()), "{e}");
            assert!(text.starts_with(e["path"].as_str().unwrap()), "{e}");
            (
                e["section"].as_str().unwrap(),
                e["option"].as_str().unwrap_or(""),
                e["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        places,
        vec![
            ("vip 'api'", "prefix", 13),
            ("neighbor 'bird'", "passive", 9),
            ("@check[0]", "", 16),
            ("@check[0]", "port", 16),
        ]
    );

    // Valid: exit 0, an empty list.
    let ok = temp_file(
        "json",
        "ok",
        &cfg.replace("010.", "10.")
            .replace("\toption passive '1'\n", "")
            .replace(
                "config check\n\toption vip 'api'\n\toption type 'tcp'\n",
                "",
            ),
    );
    let out = run(&["validate", "--json", "--config", ok.to_str().unwrap()]);
    assert_eq!(text(&out.stdout), "{\"errors\":[],\"valid\":true}\n");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    // 300 mistakes: 100 listed, then how many more.
    let mut many = String::from(cfg);
    for i in 0..300 {
        many.push_str(&format!("\toption bogus_{i} 'x'\n"));
    }
    let f = temp_file("json", "many", &many);
    let out = run(&["validate", "--json", "--config", f.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    let errors = v["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 101);
    assert!(
        errors[100]["text"].as_str().unwrap().starts_with("… and "),
        "{}",
        errors[100]
    );
}
