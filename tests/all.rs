//! One integration-test binary (keeps link time down); the suites live in `suite/`.

mod common;
mod suite;
