//! Configuration: the v1 schema, defaults, validation, JSON and UCI loaders.
