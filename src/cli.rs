//! Command line: `pathosd run|validate|convert`, `pathosd --version`.
//! Hand-written rather than clap: the binary has to fit a router's flash.

use crate::config::{self, Format, LogLevel};
use std::ffi::OsString;
use std::path::PathBuf;

const USAGE: &str = "\
usage: pathosd run --config FILE [--format json|uci] [--debug]
       pathosd validate --config FILE|- [--format json|uci] [--json]
       pathosd convert --config FILE|- [--format json|uci]
       pathosd --version

  run       load and validate FILE, then run the daemon
  validate  check FILE and list every error (--json: as one JSON object
            on standard output, for programs)
  convert   print FILE (for example /etc/config/pathosd) as v1 JSON

FILE is JSON or UCI, told apart by its content unless --format says;
- reads it from standard input, for example staged changes:
  uci export pathosd | pathosd validate --config -
Exit status: 0 ok, 1 invalid configuration, 2 usage error.";

/// Exit statuses.
pub(crate) const EXIT_OK: i32 = 0;
pub(crate) const EXIT_INVALID: i32 = 1;
pub(crate) const EXIT_USAGE: i32 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Run,
    Validate,
    Convert,
}

/// A parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Invocation {
    Version,
    Help,
    Config {
        command: Command,
        config: PathBuf,
        format: Option<Format>,
        debug: bool,
        /// `validate --json`: the verdict as JSON on standard output.
        json: bool,
    },
}

/// Parses the arguments after the program name.
pub(crate) fn parse_args(args: &[String]) -> Result<Invocation, String> {
    let mut it = args.iter().peekable();
    let command = match it.peek().map(|s| s.as_str()) {
        None => return Err("a command is required".into()),
        Some("--version") | Some("-V") | Some("version") => {
            return match args.len() {
                1 => Ok(Invocation::Version),
                _ => Err(format!("unexpected argument {:?} after --version", args[1])),
            };
        }
        Some("--help") | Some("-h") | Some("help") => return Ok(Invocation::Help),
        Some("run") => Command::Run,
        Some("validate") => Command::Validate,
        Some("convert") => Command::Convert,
        // pathosd's `run` is the default command: `pathosd --config FILE`.
        Some(flag) if flag.starts_with('-') => {
            return parse_flags(Command::Run, args);
        }
        Some(other) => return Err(format!("unknown command {other:?}")),
    };
    it.next();
    parse_flags(command, &args[1..])
}

fn parse_flags(command: Command, args: &[String]) -> Result<Invocation, String> {
    let mut config: Option<PathBuf> = None;
    let mut format: Option<Format> = None;
    let mut debug = false;
    let mut json = false;
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            if let Some(v) = inline.clone() {
                return Ok(v);
            }
            match args.get(i) {
                Some(v) => {
                    i += 1;
                    Ok(v.clone())
                }
                None => Err(format!("{name} needs a value")),
            }
        };
        match flag {
            "--config" | "-c" => {
                let v = value("--config")?;
                if v.is_empty() {
                    return Err("--config needs a file name".into());
                }
                if config.replace(PathBuf::from(v)).is_some() {
                    return Err("--config given twice".into());
                }
            }
            "--format" => {
                let v = value("--format")?;
                if format.replace(v.parse()?).is_some() {
                    return Err("--format given twice".into());
                }
            }
            "--debug" if command == Command::Run && inline.is_none() => debug = true,
            "--debug" => return Err("--debug applies only to run".into()),
            "--json" if inline.is_some() => return Err("--json takes no value".into()),
            "--json" if command == Command::Validate => json = true,
            "--json" => return Err("--json applies only to validate".into()),
            other if other.starts_with('-') => return Err(format!("unknown option {other:?}")),
            other => return Err(format!("unexpected argument {other:?}")),
        }
    }
    let name = match command {
        Command::Run => "run",
        Command::Validate => "validate",
        Command::Convert => "convert",
    };
    let config = config.ok_or_else(|| format!("{name} needs --config FILE"))?;
    // The daemon rereads its file on SIGHUP: standard input cannot be reread.
    if command == Command::Run && config.as_os_str() == "-" {
        return Err("run needs a file, not - (it rereads the file on reload)".into());
    }
    Ok(Invocation::Config {
        command,
        config,
        format,
        debug,
        json,
    })
}

/// A loaded configuration: what the daemon runs on, or (`convert`) the
/// file as it is written, once valid.
enum Loaded {
    Run(config::RunConfig),
    AsWritten(config::Config),
}

/// Runs the CLI and returns the process exit code: 0 ok, 1 invalid config, 2 usage.
pub fn main(args: Vec<OsString>) -> i32 {
    let args: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let inv = match parse_args(&args) {
        Ok(inv) => inv,
        Err(e) => {
            eprintln!("pathosd: {e}\n{USAGE}");
            return EXIT_USAGE;
        }
    };
    match inv {
        Invocation::Version => {
            // The first line alone is what OpenWrt's CI version check and
            // the package builder compare with PKG_VERSION.
            println!("pathosd {}", env!("CARGO_PKG_VERSION"));
            println!("{}", crate::features_line());
            EXIT_OK
        }
        Invocation::Help => {
            println!("{USAGE}");
            EXIT_OK
        }
        Invocation::Config {
            command,
            config: path,
            format,
            debug,
            json,
        } => {
            // Before loading: the loader's large buffers are the first to
            // be freed.
            crate::sys::fix_mmap_threshold();
            // `convert` prints the file as it is, the others run on it.
            let loaded = match command {
                Command::Convert => crate::config_file::check(&path, format).map(Loaded::AsWritten),
                _ => crate::config_file::load(&path, format).map(Loaded::Run),
            };
            if json {
                let errs = loaded.err().unwrap_or_default();
                println!("{}", verdict_json(&errs));
                return if errs.is_empty() {
                    EXIT_OK
                } else {
                    EXIT_INVALID
                };
            }
            let cfg = match loaded {
                Ok(c) => c,
                Err(errs) => {
                    let from = match path.to_str() {
                        Some("-") => "standard input".into(),
                        _ => path.display().to_string(),
                    };
                    eprintln!(
                        "pathosd: {from}: invalid configuration ({} error{}):",
                        errs.len(),
                        if errs.len() == 1 { "" } else { "s" }
                    );
                    for e in &errs {
                        eprintln!("{e}");
                    }
                    return EXIT_INVALID;
                }
            };
            match (command, cfg) {
                (_, Loaded::AsWritten(raw)) => {
                    print!("{}", config::convert::to_json(&raw));
                    EXIT_OK
                }
                (Command::Validate | Command::Convert, Loaded::Run(_)) => {
                    println!("configuration is valid");
                    EXIT_OK
                }
                (Command::Run, Loaded::Run(mut cfg)) => {
                    if debug {
                        cfg.set_log_level(LogLevel::Debug);
                    }
                    // What loading freed is not needed again.
                    crate::sys::trim_heap();
                    crate::daemon::run(
                        crate::daemon::Options {
                            config_path: path,
                            format,
                            debug,
                        },
                        cfg,
                    )
                }
            }
        }
    }
}

/// `validate --json`: `{"valid", "errors"}`, each error with its `text`
/// (the line `validate` prints), `path` and `message`, and where the path
/// is a UCI place also its `section` (`vip 'web'`, `@check[2]`,
/// `config pathosd`), `option` and `line`. The loader lists at most 100
/// errors and then one saying how many more there were, so the object
/// stays small: its reader is rpcd, whose reply is one ubus message.
fn verdict_json(errs: &[config::ConfigError]) -> serde_json::Value {
    let list = errs
        .iter()
        .map(|e| {
            let (section, option, line) = uci_place(&e.path);
            let mut o = serde_json::Map::new();
            o.insert("text".into(), e.to_string().into());
            o.insert("path".into(), e.path.clone().into());
            o.insert("message".into(), e.message.clone().into());
            if let Some(s) = section {
                o.insert("section".into(), s.into());
            }
            if let Some(op) = option {
                o.insert("option".into(), op.into());
            }
            if let Some(n) = line {
                o.insert("line".into(), n.into());
            }
            serde_json::Value::Object(o)
        })
        .collect::<Vec<_>>();
    // Built by hand: json!() would serialize the list into a Value again,
    // code the binary has no other use for.
    let mut verdict = serde_json::Map::new();
    verdict.insert("valid".into(), errs.is_empty().into());
    verdict.insert("errors".into(), serde_json::Value::Array(list));
    serde_json::Value::Object(verdict)
}

/// The section, option and line a UCI error path names, as
/// crates/pathosd-core/src/config/uci_map.rs writes them:
/// `vip 'web' option prefix (line 14)`, `@check[2] (line 7) option port`,
/// `neighbor 'up' list x (line 3) rest`, `config pathosd option asn` (not
/// written), `line 4` (the file does not parse). Nothing for a JSON path.
fn uci_place(path: &str) -> (Option<String>, Option<String>, Option<u64>) {
    let words: Vec<&str> = path.split(' ').collect();
    let section = match words.as_slice() {
        [s, ..] if s.starts_with('@') && s.ends_with(']') => Some(s.to_string()),
        ["config", t, ..] => Some(format!("config {t}")),
        [t, n, ..] if n.len() > 1 && n.starts_with('\'') && n.ends_with('\'') => {
            Some(format!("{t} {n}"))
        }
        _ => None,
    };
    let line = path
        .split_once("(line ")
        .and_then(|(_, r)| r.split_once(')').and_then(|(n, _)| n.parse::<u64>().ok()));
    let line = line.or_else(|| path.strip_prefix("line ").and_then(|n| n.parse().ok()));
    if section.is_none() {
        return (None, None, line);
    }
    let option = words
        .windows(2)
        .find(|w| w[0] == "option" || w[0] == "list")
        .map(|w| w[1].to_string());
    (section, option, line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Invocation, String> {
        parse_args(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    fn cfg(command: Command, file: &str, format: Option<Format>, debug: bool) -> Invocation {
        Invocation::Config {
            command,
            config: PathBuf::from(file),
            format,
            debug,
            json: false,
        }
    }

    #[test]
    fn parses_commands_and_flags() {
        assert_eq!(p(&["--version"]), Ok(Invocation::Version));
        assert_eq!(p(&["-h"]), Ok(Invocation::Help));
        assert_eq!(
            p(&["run", "--config", "f", "--debug"]),
            Ok(cfg(Command::Run, "f", None, true))
        );
        assert_eq!(
            p(&["--debug", "-c", "f"]),
            Ok(cfg(Command::Run, "f", None, true))
        );
        assert_eq!(
            p(&["validate", "--config=f", "--format=uci"]),
            Ok(cfg(Command::Validate, "f", Some(Format::Uci), false))
        );
        assert_eq!(
            p(&["convert", "--format", "json", "-c", "f"]),
            Ok(cfg(Command::Convert, "f", Some(Format::Json), false))
        );
        assert_eq!(
            p(&["validate", "--json", "-c", "-"]),
            Ok(Invocation::Config {
                command: Command::Validate,
                config: PathBuf::from("-"),
                format: None,
                debug: false,
                json: true,
            })
        );
    }

    #[test]
    fn uci_places_of_error_paths() {
        let place = |p: &str| {
            let (s, o, l) = uci_place(p);
            (s.as_deref().map(str::to_string), o, l)
        };
        let some = |s: &str| Some(s.to_string());
        assert_eq!(
            place("vip 'api' option prefix (line 14)"),
            (some("vip 'api'"), some("prefix"), Some(14))
        );
        assert_eq!(
            place("@check[0] (line 17) option port"),
            (some("@check[0]"), some("port"), Some(17))
        );
        assert_eq!(
            place("vip 'web' list community (line 5) [1]"),
            (some("vip 'web'"), some("community"), Some(5))
        );
        assert_eq!(
            place("pathosd 'again' (line 3)"),
            (some("pathosd 'again'"), None, Some(3))
        );
        assert_eq!(
            place("config pathosd option asn"),
            (some("config pathosd"), some("asn"), None)
        );
        assert_eq!(place("config vip"), (some("config vip"), None, None));
        assert_eq!(place("line 4"), (None, None, Some(4)));
        assert_eq!(place("vips[0].prefix"), (None, None, None));
        assert_eq!(place(""), (None, None, None));
    }

    #[test]
    fn usage_errors() {
        assert_eq!(p(&[]), Err("a command is required".into()));
        assert_eq!(p(&["start"]), Err("unknown command \"start\"".into()));
        assert_eq!(p(&["run"]), Err("run needs --config FILE".into()));
        assert_eq!(
            p(&["validate", "--config"]),
            Err("--config needs a value".into())
        );
        assert_eq!(
            p(&["validate", "-c", "a", "-c", "b"]),
            Err("--config given twice".into())
        );
        assert_eq!(
            p(&["validate", "-c", "a", "--debug"]),
            Err("--debug applies only to run".into())
        );
        assert_eq!(
            p(&["run", "-c", "a", "--json"]),
            Err("--json applies only to validate".into())
        );
        assert_eq!(
            p(&["validate", "-c", "a", "--json=1"]),
            Err("--json takes no value".into())
        );
        assert_eq!(
            p(&["validate", "-c", "a", "--format", "yaml"]),
            Err("unknown format \"yaml\" (json or uci)".into())
        );
        assert_eq!(
            p(&["validate", "-c", "a", "--verbose"]),
            Err("unknown option \"--verbose\"".into())
        );
        assert_eq!(
            p(&["validate", "-c", "a", "extra"]),
            Err("unexpected argument \"extra\"".into())
        );
        assert_eq!(
            p(&["run", "-c", "-"]),
            Err("run needs a file, not - (it rereads the file on reload)".into())
        );
        assert_eq!(
            p(&["validate", "-c", "-"]),
            Ok(cfg(Command::Validate, "-", None, false))
        );
        assert_eq!(
            p(&["--version", "x"]),
            Err("unexpected argument \"x\" after --version".into())
        );
    }
}
