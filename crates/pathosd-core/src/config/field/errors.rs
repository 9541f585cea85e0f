//! The errors a config collects, each at its field path, and how their
//! messages show the values they name.

use serde_json::Value;
use std::collections::BTreeMap;
use std::ops::Bound;

/// One config problem: where, and what is wrong (the message names the bad value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Most errors listed for one file; the rest are counted. A generated file
/// with a systematic mistake must not write a hundred thousand lines to the
/// terminal or, on reload, to the router's log.
pub const MAX_ERRORS: usize = 100;

/// Errors recorded before checking stops. Past MAX_ERRORS an error costs
/// only its path (kept for the one-error-per-path rule and for the rules
/// that stay quiet where their input already failed), so the paths of a
/// file with a mistake in every line would otherwise grow with the file:
/// 300,000 of them took tens of MB. What a file with more errors than this
/// holds is of no use to anyone reading the list.
pub const MAX_RECORDED: usize = 10_000;

/// Most list items (communities, headers, arguments, DNS names, …) decoded
/// from one file, all lists together. A decoded item can take more memory
/// than its text (an empty string is 24 bytes, a header 90), so this bounds
/// what a file within the 4 MiB limit can make the loader hold.
pub const MAX_LIST_ITEMS: usize = 65_536;

/// Collects errors. A second error at a path that already has one is dropped:
/// a value that failed to decode must not also be reported as "required".
///
/// The first [`MAX_ERRORS`] are kept whole (the `.0` list); the rest are
/// counted up to [`MAX_RECORDED`], when checking stops ([`Errors::stopped`]),
/// and [`Errors::into_vec`] adds one line saying how many there were. The
/// memory of any number of mistakes is bounded.
///
/// The paths of the errors are indexed, so that a file with a huge number
/// of mistakes is checked in n log n, not n² (a linear search per error
/// took minutes). The index is a map of path to nothing (an empty
/// `String`, which allocates nothing) of the type the configuration's
/// `headers` and `metadata` already have, not a `BTreeSet<String>`: the
/// B-tree's code is then compiled once for both (≈ 4 KB of mips code).
#[derive(Debug, Default, Clone)]
pub struct Errors(pub Vec<ConfigError>, Recorded);

/// What [`Errors`] keeps besides the listed errors.
#[derive(Debug, Default, Clone)]
pub struct Recorded {
    paths: BTreeMap<String, String>,
    /// Errors recorded, listed or not (at most MAX_RECORDED).
    count: usize,
    /// Which listed errors already name their place as written (UCI's own
    /// errors); the loader of a UCI file translates the others' v1 paths.
    as_written: Vec<bool>,
    /// List items decoded so far (see MAX_LIST_ITEMS).
    list_items: usize,
}

impl Errors {
    pub fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        let mut message = Some(message);
        self.record(
            path.into(),
            &mut || message.take().map(Into::into).unwrap_or_default(),
            false,
        );
    }

    /// `push` of a formatted message, formatted here: the caller passes
    /// the arguments, not a `String` it made and must drop (a free and an
    /// unwind cleanup at each of validation's error sites). Past the listed
    /// errors the message is not formatted at all.
    pub fn push_fmt(&mut self, path: impl Into<String>, message: std::fmt::Arguments<'_>) {
        self.record(path.into(), &mut || message.to_string(), false);
    }

    /// An error whose path already names the place as the file writes it
    /// (a UCI section, option and line), which is not translated again.
    /// Both are formatted only if the error is recorded.
    pub(crate) fn push_as_written(
        &mut self,
        path: std::fmt::Arguments<'_>,
        message: std::fmt::Arguments<'_>,
    ) {
        if !self.stopped() {
            self.record(path.to_string(), &mut || message.to_string(), true);
        }
    }

    /// Records one error; `message` is made only for a listed one.
    #[inline(never)]
    fn record(&mut self, path: String, message: &mut dyn FnMut() -> String, as_written: bool) {
        let r = &mut self.1;
        if r.count >= MAX_RECORDED {
            return;
        }
        // `insert`, not `entry`: the map's `insert` is already compiled
        // for the headers; a path seen before gets its "" replaced by "".
        if !path.is_empty() && r.paths.insert(path.clone(), String::new()).is_some() {
            return;
        }
        r.count += 1;
        if self.0.len() < MAX_ERRORS {
            self.0.push(ConfigError {
                path,
                message: message(),
            });
            r.as_written.push(as_written);
        }
    }

    pub fn has(&self, path: &str) -> bool {
        if path.is_empty() {
            return self.0.iter().any(|e| e.path.is_empty());
        }
        self.1.paths.contains_key(path)
    }

    /// Whether there is an error at `path` or anywhere below it.
    pub(crate) fn has_under(&self, path: &str) -> bool {
        if path.is_empty() {
            return self
                .0
                .iter()
                .any(|e| e.path.is_empty() || e.path.starts_with(['.', '[']));
        }
        // The paths starting with `path` are contiguous in the ordered set;
        // among them, only `path` itself and `path.…` / `path[…` count.
        self.1
            .paths
            .range::<str, _>((Bound::Included(path), Bound::Unbounded))
            .map(|(p, _)| p)
            .take_while(|p| p.starts_with(path))
            .any(|p| {
                let r = &p[path.len()..];
                r.is_empty() || r.starts_with('.') || r.starts_with('[')
            })
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether so many errors were recorded that checking stops: later
    /// errors are not recorded, and the loaders skip the rest of the work.
    pub fn stopped(&self) -> bool {
        self.1.count >= MAX_RECORDED
    }

    /// Counts `n` more decoded list items; false (and an error at `path`,
    /// once) when that passes MAX_LIST_ITEMS: the list is then not decoded.
    pub(crate) fn take_list_items(&mut self, n: usize, path: &str) -> bool {
        let before = self.1.list_items;
        self.1.list_items = before.saturating_add(n);
        if self.1.list_items <= MAX_LIST_ITEMS {
            return true;
        }
        if before <= MAX_LIST_ITEMS {
            self.push_fmt(
                path,
                format_args!(
                    "the lists hold more than the limit of {MAX_LIST_ITEMS} items in all (communities, headers, arguments, …)"
                ),
            );
        }
        false
    }

    /// Adds the errors of `other` after these, as if they had been pushed
    /// here in order: the listed ones again (one per path), the others
    /// counted with their paths.
    pub(crate) fn absorb(&mut self, other: Errors) {
        let Errors(list, r) = other;
        let listed = list.len();
        let listed_with_path = list.iter().filter(|e| !e.path.is_empty()).count();
        for (e, written) in list
            .into_iter()
            .zip(r.as_written.iter().chain(std::iter::repeat(&false)))
        {
            let mut message = Some(e.message);
            self.record(e.path, &mut || message.take().unwrap_or_default(), *written);
        }
        let unlisted = r.count - listed;
        let unlisted_with_path = r.paths.len().saturating_sub(listed_with_path);
        for (p, _) in r.paths {
            if self.1.count >= MAX_RECORDED {
                break;
            }
            // `insert`, as in `record`: the map's other calls are compiled
            // for the headers already.
            if self.1.paths.insert(p, String::new()).is_none() {
                self.1.count += 1;
            }
        }
        let without_path = unlisted.saturating_sub(unlisted_with_path);
        self.1.count = (self.1.count + without_path).min(MAX_RECORDED);
        self.1.list_items = self.1.list_items.saturating_add(r.list_items);
    }

    /// The listed errors, each translated by `locate` unless it already
    /// names its place as written, then one line saying how many more
    /// there were, if any.
    pub fn into_vec_located(self, locate: &dyn Fn(ConfigError) -> ConfigError) -> Vec<ConfigError> {
        let Errors(list, r) = self;
        let listed = list.len();
        let mut out: Vec<ConfigError> = list
            .into_iter()
            .zip(r.as_written.iter().chain(std::iter::repeat(&false)))
            .map(|(e, &written)| if written { e } else { locate(e) })
            .collect();
        let more = r.count - listed;
        if more > 0 {
            let message = if r.count >= MAX_RECORDED {
                format!("… and at least {more} more errors (only the first {MAX_ERRORS} are listed; checking stopped after {MAX_RECORDED})")
            } else {
                format!("… and {more} more errors (only the first {MAX_ERRORS} are listed)")
            };
            out.push(ConfigError {
                path: String::new(),
                message,
            });
        }
        out
    }

    /// [`Errors::into_vec_located`] for errors that need no translation.
    pub fn into_vec(self) -> Vec<ConfigError> {
        self.into_vec_located(&|e| e)
    }
}

/// Joins a parent path and a key: `join("vips[0]", "name")` is `vips[0].name`.
pub fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

/// Longest part of a value an error message quotes, in bytes: a 5 MB value
/// must not become a 5 MB log line.
pub(crate) const QUOTE_MAX: usize = 64;

/// Quotes a value for an error message as `{:?}` does, but at most its first
/// QUOTE_MAX bytes (cut at a character boundary), followed by
/// `… (N bytes)` when it was longer.
pub fn quote(s: &str) -> String {
    Quote(s).to_string()
}

/// `quote` as a `Display`, for a message that quotes a value: the quoted
/// text is written into the message, not made as a `String` first and
/// dropped (a call, a free and an unwind cleanup less at each of the many
/// error sites of validation).
pub struct Quote<'a>(pub &'a str);

impl std::fmt::Display for Quote<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.0;
        if s.len() <= QUOTE_MAX {
            write!(f, "{s:?}")
        } else {
            write!(f, "{:?}… ({} bytes)", prefix(s), s.len())
        }
    }
}

/// The first QUOTE_MAX bytes of `s` or fewer, ending at a char boundary.
fn prefix(s: &str) -> &str {
    let mut end = QUOTE_MAX.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Shows a JSON value as the user wrote it, for error messages (shortened
/// like `quote`).
pub fn show(v: &Value) -> String {
    match v {
        Value::String(s) => quote(s),
        other => {
            let text = other.to_string();
            if text.len() <= QUOTE_MAX {
                text
            } else {
                format!("{}… ({} bytes)", prefix(&text), text.len())
            }
        }
    }
}
