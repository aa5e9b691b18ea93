//! One integration-test binary (keeps link time down); the suites live in `suite/`.
//! It needs `--features test-hooks` (`required-features` in Cargo.toml).

mod common;
mod suite;
