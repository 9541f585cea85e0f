//! Command line: `pathosd run|validate|convert`, `pathosd --version`.

use std::ffi::OsString;

/// Runs the CLI and returns the process exit code: 0 ok, 1 invalid config, 2 usage.
pub fn main(args: Vec<OsString>) -> i32 {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    match args.get(1).map(String::as_str) {
        Some("--version") | Some("-V") => {
            println!("pathosd {}", env!("CARGO_PKG_VERSION"));
            0
        }
        _ => {
            eprintln!("usage: pathosd run|validate|convert --config FILE");
            2
        }
    }
}
