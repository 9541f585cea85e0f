//! The JSON loader (placeholders, decode, validate) never panics, and a
//! config it accepts survives `pathosd convert` unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pathosd::config::load::to_json;
use pathosd::config::{load_str, Format};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let env = |name: &str| (name.len() < 4).then(|| "10.0.0.1".to_string());
    if let Ok(c) = load_str(text, None, &env) {
        let json = to_json(&c);
        let again =
            load_str(&json, Some(Format::Json), &|_| None).expect("converted config must load");
        assert_eq!(again, c);
    }
});
