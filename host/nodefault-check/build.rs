//! Empty: it exists so that the `[build-dependencies]` in Cargo.toml are
//! resolved (the procedural macros' side of the features this package
//! lines up; see Cargo.toml).

fn main() {}
