//! Configuration: the v1 schema, defaults, validation, JSON and UCI loaders.

pub mod duration;
pub mod field;
pub mod policy_expr;
pub mod schema;

pub use duration::Dur;
pub use field::{ConfigError, Errors, Field};
pub use schema::*;
