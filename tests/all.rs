//! One integration-test binary (keeps link time down); the suites live in `suite/`.

#[cfg(not(feature = "test-hooks"))]
compile_error!(
    "the black-box tests drive Troupe's test hooks: run them with `--features test-hooks` (`bash .ci/test` does)"
);

mod common;
mod suite;
