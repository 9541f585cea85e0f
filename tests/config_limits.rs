//! Hardening of everything that reads the config, through the real binary
//! (`validate`, `convert` and `run`): deep or long expressions, huge files, huge
//! values and counts each give a clear, path-named error and exit 1 — never
//! an abort (exit 134), a hang or a multi-megabyte error line. Each limit is
//! tested at the bound (accepted) and just past it (rejected).

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_pathosd");

/// This test's own directory.
fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pathosd-limits-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Removes the test's directory (a few MiB of generated files) at the end,
/// also when the test fails.
struct Cleanup(&'static str);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(dir(self.0));
    }
}

struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// Runs pathosd with a 60 s bound (killed and failed beyond it); output goes
/// to files, so a huge output cannot block the child on a full pipe.
fn pathosd(test: &str, args: &[&str], env: &[(&str, &str)]) -> Out {
    let d = dir(test);
    let (o, e) = (d.join("stdout"), d.join("stderr"));
    let start = Instant::now();
    let mut child = Command::new(BIN)
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&o).unwrap())
        .stderr(std::fs::File::create(&e).unwrap())
        .spawn()
        .unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("pathosd {args:?} still running after 60 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Out {
        code: status.code(),
        stdout: std::fs::read_to_string(o).unwrap(),
        stderr: std::fs::read_to_string(e).unwrap(),
        took: start.elapsed(),
    }
}

/// `validate`, `convert` and `run` of `file` all exit 1 with exactly
/// `errors` after the header line (`run` checks the file before starting).
fn rejected(test: &str, file: &Path, errors: &[&str]) {
    for cmd in ["validate", "convert", "run"] {
        let out = pathosd(test, &[cmd, "--config", file.to_str().unwrap()], &[]);
        assert_eq!(out.code, Some(1), "{cmd}: {}", out.stderr);
        assert_eq!(out.stdout, "");
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert_eq!(lines.len(), errors.len() + 1, "{cmd}: {}", out.stderr);
        assert!(lines[0].ends_with(&format!(
            "invalid configuration ({} error{}):",
            errors.len(),
            if errors.len() == 1 { "" } else { "s" }
        )));
        assert_eq!(&lines[1..], errors, "{cmd}");
    }
}

/// `validate` of `file` succeeds.
fn accepted(test: &str, file: &Path) -> Out {
    let out = pathosd(test, &["validate", "--config", file.to_str().unwrap()], &[]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "configuration is valid\n");
    out
}

fn write(test: &str, name: &str, contents: &[u8]) -> PathBuf {
    let p = dir(test).join(name);
    std::fs::write(&p, contents).unwrap();
    p
}

fn write_json(test: &str, v: &Value) -> PathBuf {
    write(test, "pathosd.json", v.to_string().as_bytes())
}

/// A valid config with one HTTP-checked VIP.
fn base() -> Value {
    json!({
        "schema": "v1",
        "router": {"asn": 65001, "router_id": "10.0.0.1"},
        "bgp": {"neighbors": [{"name": "bird", "address": "10.0.0.2", "peer_asn": 65000}]},
        "vips": [{"name": "web", "prefix": "10.0.1.1/32", "checks": [
            {"name": "up", "type": "tcp", "tcp": {"port": 80}},
            {"name": "api", "type": "http", "http": {"url": "http://10.0.1.1/health"}}
        ]}]
    })
}

fn with_jq(jq: &str) -> Value {
    let mut v = base();
    v["vips"][0]["checks"][1]["http"]["response_jq"] = json!(jq);
    v
}

fn with_policy(policy: &str) -> Value {
    let mut v = base();
    v["vips"][0]["checks_policy"] = json!(policy);
    v
}

const JQ: &str = "vips[0].checks[1].http.response_jq";

#[test]
fn deep_response_jq_is_an_error_not_an_abort() {
    let t = "jq";
    let _clean = Cleanup(t);
    let parens = |n: usize| "(".repeat(n) + ".ok" + &")".repeat(n);
    accepted(t, &write_json(t, &with_jq(&parens(64))));
    rejected(
        t,
        &write_json(t, &with_jq(&parens(65))),
        &[&format!(
            "{JQ}: \"{}\"… (133 bytes): \
             response_jq: nesting of \"(\" and not deeper than 64 at offset 65",
            "(".repeat(64)
        )],
    );
    let nots = |n: usize| "not ".repeat(n) + ".ok";
    accepted(t, &write_json(t, &with_jq(&nots(64))));
    let out = pathosd(
        t,
        &[
            "validate",
            "--config",
            write_json(t, &with_jq(&nots(65))).to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr
            .contains("… (263 bytes): response_jq: nesting of \"(\" and not deeper than 64"),
        "{}",
        out.stderr
    );
    let ands = |n: usize| {
        let mut s = ".ok".to_string();
        s.push_str(&" and .ok".repeat(n - 1));
        s
    };
    accepted(t, &write_json(t, &with_jq(&ands(256))));
    let out = pathosd(
        t,
        &[
            "validate",
            "--config",
            write_json(t, &with_jq(&ands(257))).to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.code, Some(1));
    assert!(out
        .stderr
        .contains("response_jq: more than 256 paths and comparisons at offset 2048"));
    // The inputs: 7,300 parentheses, 15,400 nots, 130,000 terms.
    for (jq, want) in [
        (parens(7_300), "longer than 4096 bytes (14603 bytes)"),
        (nots(15_400), "longer than 4096 bytes (61603 bytes)"),
        (ands(130_000), "longer than 4096 bytes (1039995 bytes)"),
    ] {
        let f = write_json(t, &with_jq(&jq));
        for cmd in ["validate", "convert", "run"] {
            let out = pathosd(t, &[cmd, "--config", f.to_str().unwrap()], &[]);
            assert_eq!(out.code, Some(1), "{}", out.stderr);
            assert_eq!(out.stderr.lines().count(), 2);
            let line = out.stderr.lines().nth(1).unwrap();
            assert!(line.starts_with(&format!("{JQ}: \"")), "{line}");
            assert!(line.ends_with(want), "{line}");
            assert!(line.len() < 200, "{line}");
        }
    }
}

#[test]
fn long_checks_policy_is_an_error_not_an_abort() {
    let t = "policy";
    let _clean = Cleanup(t);
    let chain = |op: &str, n: usize| {
        let mut s = "up".to_string();
        s.push_str(&format!(" {op} api").repeat(n - 1));
        s
    };
    accepted(t, &write_json(t, &with_policy(&chain("&&", 256))));
    accepted(t, &write_json(t, &with_policy(&chain("||", 256))));
    let out = pathosd(
        t,
        &[
            "validate",
            "--config",
            write_json(t, &with_policy(&chain("&&", 257)))
                .to_str()
                .unwrap(),
        ],
        &[],
    );
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr
            .ends_with("… (1794 bytes): more than 256 operands\n"),
        "{}",
        out.stderr
    );
    assert!(out
        .stderr
        .contains("vips[0].checks_policy: column 1792 of \"up && api && api"));
    let parens = |n: usize| "(".repeat(n) + "up" + &")".repeat(n);
    accepted(t, &write_json(t, &with_policy(&parens(64))));
    rejected(
        t,
        &write_json(t, &with_policy(&parens(65))),
        &[&format!(
            "vips[0].checks_policy: column 66 of \"{}\"… (132 bytes): nested deeper than 64 levels",
            "(".repeat(64)
        )],
    );
    // The 47,600-term chains.
    for op in ["&&", "||"] {
        rejected(
            t,
            &write_json(t, &with_policy(&chain(op, 47_600))),
            &["vips[0].checks_policy: column 1 of \"up && api && api && api && api && api && api && api && api && ap\"… (333195 bytes): longer than 4096 bytes (333195 bytes)"
                .replace("&&", op)
                .as_str()],
        );
    }
}

#[test]
fn endless_and_oversized_files_are_refused_at_once() {
    let t = "size";
    let _clean = Cleanup(t);
    let out = pathosd(t, &["validate", "--config", "/dev/zero"], &[]);
    assert_eq!(out.code, Some(1));
    assert_eq!(
        out.stderr,
        "pathosd: /dev/zero: invalid configuration (1 error):\n\
         reading /dev/zero: larger than the limit of 4194304 bytes (4 MiB)\n"
    );
    assert!(out.took < Duration::from_secs(10), "{:?}", out.took);
    // Exactly 4 MiB (JSON padded with spaces) is read; one byte more is not.
    let mut text = base().to_string().into_bytes();
    text.resize(4 * 1024 * 1024, b' ');
    accepted(t, &write(t, "at.json", &text));
    text.push(b' ');
    let f = write(t, "past.json", &text);
    rejected(
        t,
        &f,
        &[&format!(
            "reading {}: larger than the limit of 4194304 bytes (4 MiB)",
            f.display()
        )],
    );
}

#[test]
fn environment_expansion_is_bounded() {
    let t = "expand";
    let _clean = Cleanup(t);
    let mut v = base();
    v["vips"][0]["checks"][0]["tcp"]["send"] = json!("%{BIG}".repeat(50));
    let f = write_json(t, &v);
    let big = "x".repeat(100_000);
    // 50 × 100,000 bytes = 5 MB after expansion.
    let out = pathosd(
        t,
        &["validate", "--config", f.to_str().unwrap()],
        &[("BIG", &big)],
    );
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert_eq!(
        out.stderr.lines().nth(1),
        Some("expanding environment placeholders: the expanded config is larger than the limit of 4194304 bytes")
    );
    // 40 × 100,000 bytes fits.
    v["vips"][0]["checks"][0]["tcp"]["send"] = json!("%{BIG}".repeat(40));
    let f = write_json(t, &v);
    let out = pathosd(
        t,
        &["validate", "--config", f.to_str().unwrap()],
        &[("BIG", &big)],
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
}

#[test]
fn counts_at_and_past_their_limits() {
    let t = "counts";
    let _clean = Cleanup(t);
    // 10,000 VIPs (benches/convergence.sh's largest run) are fine.
    let vips = |n: usize| -> Value {
        (0..n)
            .map(|i| {
                json!({"name": format!("v{i}"), "prefix": format!("10.{}.{}.{}/32", i >> 16, (i >> 8) & 255, i & 255), "always": true})
            })
            .collect()
    };
    let mut v = base();
    v["vips"] = vips(10_000);
    let out = accepted(t, &write_json(t, &v));
    assert!(out.took < Duration::from_secs(30), "{:?}", out.took);
    v["vips"] = vips(10_001);
    rejected(
        t,
        &write_json(t, &v),
        &["vips: 10001 VIPs, more than the limit of 10000"],
    );

    let checks = |n: usize| -> Value {
        (0..n)
            .map(|i| json!({"name": format!("c{i}"), "type": "tcp", "tcp": {"port": 80}}))
            .collect()
    };
    let mut v = base();
    v["vips"][0]["checks"] = checks(64);
    accepted(t, &write_json(t, &v));
    v["vips"][0]["checks"] = checks(65);
    rejected(
        t,
        &write_json(t, &v),
        &["vips[0].checks: 65 checks, more than the limit of 64"],
    );

    // 10,000 checks in all, and one more; the count is checked before the
    // checks are decoded.
    let mut v = base();
    v["vips"] = (0..5_000)
        .map(|i| {
            json!({"name": format!("v{i}"), "prefix": format!("10.0.{}.{}/32", i >> 8, i & 255), "checks": checks(2)})
        })
        .collect();
    accepted(t, &write_json(t, &v));
    v["vips"][0]["checks"] = checks(3);
    rejected(
        t,
        &write_json(t, &v),
        &["vips: 10001 checks in all VIPs, more than the limit of 10000"],
    );

    let neighbors = |n: usize| -> Value {
        (0..n)
            .map(|i| json!({"name": format!("n{i}"), "address": format!("10.2.{}.{}", i >> 8, i & 255), "peer_asn": 65000}))
            .collect()
    };
    let mut v = base();
    v["bgp"]["neighbors"] = neighbors(256);
    accepted(t, &write_json(t, &v));
    v["bgp"]["neighbors"] = neighbors(257);
    rejected(
        t,
        &write_json(t, &v),
        &["bgp.neighbors: 257 neighbors, more than the limit of 256"],
    );
}

#[test]
fn names_at_and_past_their_limit() {
    let t = "names";
    let _clean = Cleanup(t);
    let n64 = "n".repeat(64);
    let n65 = "n".repeat(65);
    let mut v = base();
    v["vips"][0]["name"] = json!(n64);
    v["bgp"]["neighbors"][0]["name"] = json!(n64);
    v["vips"][0]["checks"][0]["name"] = json!(n64);
    v["vips"][0]["checks_policy"] = json!(format!("{n64} || api"));
    accepted(t, &write_json(t, &v));
    v["vips"][0]["name"] = json!(n65);
    v["bgp"]["neighbors"][0]["name"] = json!(n65);
    v["vips"][0]["checks"][0]["name"] = json!(n65);
    let q = format!("\"{n64}\"… (65 bytes) is longer than 64 bytes");
    rejected(
        t,
        &write_json(t, &v),
        &[
            &format!("bgp.neighbors[0].name: {q}"),
            &format!("vips[0].name: {q}"),
            &format!("vips[0].checks[0].name: {q}"),
        ],
    );
}

#[test]
fn errors_quote_only_a_prefix_of_long_values() {
    let t = "quote";
    let _clean = Cleanup(t);
    // A 1 MB bad value in UCI and in JSON: the error line stays short.
    let long = "é".repeat(500_000);
    let uci = format!("config pathosd 'main'\n\toption asn '65001'\n\toption router_id '{long}'\n");
    let out = pathosd(
        t,
        &[
            "validate",
            "--config",
            write(t, "pathosd", uci.as_bytes()).to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.code, Some(1));
    let line = out
        .stderr
        .lines()
        .find(|l| l.contains("router_id"))
        .unwrap_or_else(|| panic!("{}", out.stderr));
    assert_eq!(
        line,
        format!(
            "pathosd 'main' option router_id (line 3): \"{}\"… (1000000 bytes) is not an IP address",
            "é".repeat(32)
        )
    );
    assert!(out.stderr.len() < 2000, "{} bytes", out.stderr.len());

    let mut v = base();
    v["vips"][0]["prefix"] = json!("1".repeat(1_000_000));
    v["vips"][0]["checks"][0]["timeout"] = json!("9".repeat(1_000_000));
    v["vips"][0]["x".repeat(1_000_000)] = json!(1);
    let out = pathosd(
        t,
        &["validate", "--config", write_json(t, &v).to_str().unwrap()],
        &[],
    );
    assert_eq!(out.code, Some(1));
    assert!(out.stderr.len() < 2000, "{}", out.stderr);
    for want in [
        "vips[0].prefix: \"1111111111111111111111111111111111111111111111111111111111111111\"… (1000000 bytes)",
        "vips[0].checks[0].timeout: \"9999999999999999999999999999999999999999999999999999999999999999\"… (1000000 bytes)",
        "vips[0]: unknown field \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"… (1000000 bytes)",
    ] {
        assert!(out.stderr.contains(want), "{want}\n{}", out.stderr);
    }
}

#[test]
fn byte_order_mark_and_empty_files() {
    let t = "bom";
    let _clean = Cleanup(t);
    let mut text = "\u{feff}".as_bytes().to_vec();
    text.extend_from_slice(base().to_string().as_bytes());
    accepted(t, &write(t, "bom.json", &text));
    let uci =
        "\u{feff}config pathosd 'main'\n\toption asn '65001'\n\toption router_id '10.0.0.1'\n\
               config neighbor 'bird'\n\toption address '10.0.0.2'\n\toption peer_asn '65000'\n\
               config vip 'web'\n\toption prefix '10.0.1.1/32'\n\toption always '1'\n";
    accepted(t, &write(t, "pathosd", uci.as_bytes()));
    for (name, contents) in [
        ("empty", ""),
        ("blank", " \n\t\n"),
        ("bom-only", "\u{feff}"),
        ("comments", "# pathosd\n\n# nothing yet\n"),
    ] {
        rejected(
            t,
            &write(t, name, contents.as_bytes()),
            &["the config is empty (nothing but whitespace and comments)"],
        );
    }
}

#[test]
fn deep_json_and_huge_regexes_are_errors() {
    let t = "deep";
    let _clean = Cleanup(t);
    // serde_json's recursion limit (128) turns deep JSON into an error.
    let deep = "[".repeat(100_000) + &"]".repeat(100_000);
    let text = format!("{{\"schema\": \"v1\", \"x\": {deep}}}");
    let out = pathosd(
        t,
        &[
            "validate",
            "--config",
            write(t, "deep.json", text.as_bytes()).to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert_eq!(
        out.stderr.lines().nth(1),
        Some("invalid JSON: recursion limit exceeded at line 1 column 149")
    );
    // regex-lite's own limits: nesting (250) and compiled size.
    for (re, want) in [
        (
            "(".repeat(100_000) + &")".repeat(100_000),
            "too much nesting",
        ),
        ("a{1000}{1000}{1000}".to_string(), "exceeded size limit"),
    ] {
        let mut v = base();
        v["vips"][0]["checks"][1]["http"]["response_regex"] = json!(re);
        let out = pathosd(
            t,
            &["validate", "--config", write_json(t, &v).to_str().unwrap()],
            &[],
        );
        assert_eq!(out.code, Some(1), "{}", out.stderr);
        let line = out.stderr.lines().nth(1).unwrap();
        assert!(
            line.starts_with("vips[0].checks[1].http.response_regex: \""),
            "{line}"
        );
        assert!(line.contains(want), "{line}");
        assert!(line.len() < 300, "{line}");
    }
}

#[test]
fn uci_names_and_large_files() {
    let t = "uci";
    let _clean = Cleanup(t);
    let name = |n: usize| "s".repeat(n);
    let file = |sec: &str| {
        format!(
            "config pathosd 'main'\n\toption asn '65001'\n\toption router_id '10.0.0.1'\n\
             config neighbor 'bird'\n\toption address '10.0.0.2'\n\toption peer_asn '65000'\n\
             config vip '{sec}'\n\toption prefix '10.0.1.1/32'\n\toption always '1'\n"
        )
    };
    accepted(t, &write(t, "at", file(&name(64)).as_bytes()));
    let out = pathosd(
        t,
        &[
            "validate",
            "--config",
            write(t, "past", file(&name(65)).as_bytes())
                .to_str()
                .unwrap(),
        ],
        &[],
    );
    assert_eq!(out.code, Some(1));
    assert_eq!(
        out.stderr.lines().nth(1),
        Some(
            format!(
                "line 7: section name \"{}\"… (65 bytes) is longer than 64 bytes",
                name(64)
            )
            .as_str()
        )
    );
    // Nearly 4 MiB of sections and options: linear, so quick.
    let mut big = file("web");
    let mut i = 0;
    while big.len() < 4 * 1024 * 1024 - 100 {
        big.push_str(&format!(
            "config check 'c{i}'\n\toption vip 'web'\n\toption type 'tcp'\n\toption port '80'\n"
        ));
        i += 1;
    }
    let out = pathosd(
        t,
        &[
            "validate",
            "--config",
            write(t, "big", big.as_bytes()).to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.code, Some(1));
    assert!(out.took < Duration::from_secs(20), "{:?}", out.took);
    assert!(out.stderr.len() < 1 << 20);

    // 9,999 VIP sections, each with two mistakes: only the listed errors
    // are translated to UCI places (all of them took 15 s), and checking
    // stops after 10,000 errors.
    let mut bad = file("web").replace("10.0.1.1/32", "bad");
    for i in 0..9_998 {
        bad.push_str(&format!(
            "config vip 'v{i}'\n\toption prefix 'bad'\n\toption always '1'\n\toption bogus '1'\n"
        ));
    }
    let out = pathosd(
        t,
        &[
            "validate",
            "--config",
            write(t, "bad", bad.as_bytes()).to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.code, Some(1));
    assert!(out.took < Duration::from_secs(5), "{:?}", out.took);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 102);
    assert_eq!(
        lines[1],
        "vip 'web' option prefix (line 8): \"bad\" is not a prefix such as 192.0.2.1/32"
    );
    assert_eq!(
        lines[2],
        "vip 'v0' option bogus (line 13): unknown option for a vip section"
    );
    assert_eq!(
        lines[101],
        "… and at least 9900 more errors (only the first 100 are listed; checking stopped after 10000)"
    );
}

#[test]
fn at_most_a_hundred_errors_are_listed() {
    let t = "many";
    let _clean = Cleanup(t);
    let prefixes = |n: usize| -> Value {
        (0..n)
            .map(|i| json!({"name": format!("v{i}"), "prefix": "bad", "always": true}))
            .collect()
    };
    let mut v = base();
    v["vips"] = prefixes(100);
    let out = pathosd(
        t,
        &["validate", "--config", write_json(t, &v).to_str().unwrap()],
        &[],
    );
    assert_eq!(out.code, Some(1));
    assert_eq!(out.stderr.lines().count(), 101);
    assert!(out
        .stderr
        .lines()
        .nth(100)
        .unwrap()
        .starts_with("vips[99].prefix: "));
    v["vips"] = prefixes(5_000);
    let out = pathosd(
        t,
        &["validate", "--config", write_json(t, &v).to_str().unwrap()],
        &[],
    );
    assert_eq!(out.code, Some(1));
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 102);
    assert!(lines[0].ends_with("invalid configuration (101 errors):"));
    assert!(lines[100].starts_with("vips[99].prefix: "));
    assert_eq!(
        lines[101],
        "… and 4900 more errors (only the first 100 are listed)"
    );

    // 16,000 unknown keys: checking each error's path by a linear search
    // took minutes for many more.
    let mut v = base();
    for i in 0..16_000 {
        v["router"][format!("k{i}")] = json!(1);
    }
    let out = pathosd(
        t,
        &["validate", "--config", write_json(t, &v).to_str().unwrap()],
        &[],
    );
    assert_eq!(out.code, Some(1));
    assert!(out.took < Duration::from_secs(10), "{:?}", out.took);
    assert_eq!(
        out.stderr.lines().last(),
        Some("… and at least 9900 more errors (only the first 100 are listed; checking stopped after 10000)")
    );
    // 300,000 fit in 4 MiB: they are more values than the rest of a config
    // may hold, refused while the file is read.
    for i in 16_000..300_000 {
        v["router"][format!("k{i}")] = json!(1);
    }
    let f = write_json(t, &v);
    assert!(std::fs::metadata(&f).unwrap().len() < 4 << 20);
    let out = pathosd(t, &["validate", "--config", f.to_str().unwrap()], &[]);
    assert_eq!(out.code, Some(1));
    let last = out.stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with(
            "the config outside vips holds more than the limit of 16384 values at line 1 column "
        ),
        "{last}"
    );
}
