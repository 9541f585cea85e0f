//! Every shipped example loads and validates, and the UCI examples say the
//! same as their JSON conversion.

use pathosd::config::convert::to_json;
use pathosd::config::load::detect;
use pathosd::config::{check_str, Format};
use pathosd::config_file;
use std::path::PathBuf;

/// pathosd's example configs; a `.conf` file is the router's BIRD side,
/// which tests/packaging/bird_recipe_test.sh runs against pathosd instead.
fn examples() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_none_or(|e| e != "conf"))
        .collect();
    files.sort();
    files
}

/// A build without TLS (pathosd-nossl) refuses the examples' https checks
/// and nothing else: true when every error of `f` is that one.
fn refused_only_for_tls(f: &std::path::Path, errs: &[String]) -> bool {
    !pathosd::TLS
        && !errs.is_empty()
        && errs.iter().all(|e| e.contains(pathosd::NEEDS_TLS))
        && std::fs::read_to_string(f).unwrap().contains("https")
}

#[test]
fn every_example_validates() {
    let files = examples();
    assert!(files.len() >= 3, "examples/ has {files:?}");
    for f in &files {
        if let Err(errs) = config_file::load(f, None) {
            let lines: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
            if refused_only_for_tls(f, &lines) {
                continue;
            }
            panic!("{} is invalid:\n{}", f.display(), lines.join("\n"));
        }
    }
}

#[test]
fn examples_are_detected_by_content() {
    for f in examples() {
        let text = std::fs::read_to_string(&f).unwrap();
        let want = match f.extension().and_then(|e| e.to_str()) {
            Some("json") => Format::Json,
            Some("uci") => Format::Uci,
            other => panic!("unexpected example {other:?}"),
        };
        assert_eq!(detect(&text), want, "{}", f.display());
    }
}

#[test]
fn converted_examples_load_back_equal() {
    for f in examples() {
        let c = match config_file::check(&f, None) {
            Ok(c) => c,
            Err(errs) => {
                let lines: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
                assert!(
                    refused_only_for_tls(&f, &lines),
                    "{}: {lines:?}",
                    f.display()
                );
                continue;
            }
        };
        let again = check_str(&to_json(&c), Some(Format::Json), &|_| None).unwrap();
        assert_eq!(again, c, "{}", f.display());
    }
}
