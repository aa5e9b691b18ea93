//! Whether this process serves the black-box tests' hooks: the test tools, the pause
//! points inside writes and the Chat's panic on demand.
//!
//! Only a build with the `test-hooks` feature (what `.ci/test` builds) reads
//! `TROUPE_TEST_TOOLS`; in any other build [`enabled`] is a constant `false` and the
//! hooks compile to nothing, so a shipped `troupe` registers nothing extra whatever its
//! environment says.

/// `TROUPE_TEST_TOOLS=1` in a `test-hooks` build, read once.
#[cfg(feature = "test-hooks")]
pub fn enabled() -> bool {
    static ENABLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ENABLED.get_or_init(|| std::env::var("TROUPE_TEST_TOOLS").is_ok_and(|v| v == "1"))
}

/// Always `false`: this build has no test hooks.
#[cfg(not(feature = "test-hooks"))]
pub const fn enabled() -> bool {
    false
}
