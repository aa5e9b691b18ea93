//! The one guard of the tests that need Landlock (`tests/suite/sandbox*`,
//! `tests/kernel_sandbox.rs`, which includes this file by path).

/// Fails when the kernel has no Landlock, unless `TROUPE_ALLOW_NO_LANDLOCK=1` is set:
/// then the test says SKIPPED and passes without checking anything (docs/testing.md).
macro_rules! require_landlock {
    () => {
        if troupe::platform::sandbox::landlock_abi().is_none() {
            if std::env::var("TROUPE_ALLOW_NO_LANDLOCK").as_deref() == Ok("1") {
                eprintln!("SKIPPED: Landlock is not available on this kernel (TROUPE_ALLOW_NO_LANDLOCK=1)");
                return;
            }
            panic!(
                "Landlock is not available on this kernel, so this sandbox test cannot check \
                 anything; set TROUPE_ALLOW_NO_LANDLOCK=1 to skip it"
            );
        }
    };
}
pub(crate) use require_landlock;
