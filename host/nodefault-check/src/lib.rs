//! No code. This package is a list of dependency features (Cargo.toml) that
//! `scripts/test.sh` selects beside `corral` when it builds the library
//! without its default features, so that the shared dependencies resolve to
//! the test build's features and that build is reused, not redone.
