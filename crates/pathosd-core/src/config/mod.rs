//! Configuration: the v1 schema, defaults, validation, JSON and UCI loaders.
//!
//! Both input formats meet in one place: JSON is decoded directly, UCI is
//! first mapped to the same v1 JSON value (`uci_map`), and then one decoder
//! and one validator run for both (`load`).

pub mod convert;
pub mod dns_name;
pub mod duration;
pub mod env;
pub mod field;
// Only the staleness test (tests/config_schema.rs) writes the schema: not
// in the shipped binary (feature json-schema, which the root's dev build
// turns on).
#[cfg(any(test, feature = "json-schema"))]
pub mod json_schema;
pub mod load;
pub mod otel;
pub mod policy_expr;
pub mod proxy;
pub mod run;
pub mod schema;
pub mod target;
pub mod uci;
pub mod uci_map;
pub mod validate;

pub use duration::Dur;
pub use field::{ConfigError, Errors, Field};
pub use load::{check_str, load_str, load_string, Format};
pub use run::{CheckSpec, NeedKind, Needs, ProbeSpec, RunConfig, VipSpec};
pub use schema::*;
