//! The UCI reader and the UCI → v1 mapping never panic, and whatever parses
//! reads back the same after `uci export`-style writing.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pathosd::config::uci::{export, parse, UciFile, UciValue};
use pathosd::config::{load_str, Format};

/// The file without line numbers, which writing changes.
fn shape(f: &UciFile) -> Vec<(String, Option<String>, Vec<(String, Vec<String>, bool)>)> {
    f.sections
        .iter()
        .map(|s| {
            let opts = s
                .options
                .iter()
                .map(|o| match &o.value {
                    UciValue::Single(v) => (o.name.clone(), vec![v.clone()], false),
                    UciValue::List(l) => (
                        o.name.clone(),
                        l.iter().map(|(v, _)| v.clone()).collect(),
                        true,
                    ),
                })
                .collect();
            (s.kind.clone(), s.name.clone(), opts)
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(f) = parse(text) {
        let again = parse(&export(&f)).expect("exported UCI must parse");
        assert_eq!(shape(&again), shape(&f));
        assert_eq!(again.package, f.package);
    }
    let _ = load_str(text, Some(Format::Uci), &|name| {
        (name.len() < 4).then(|| "1".to_string())
    });
});
