//! The Python of `target/harbor-venv` (Harbor 0.26 and the ACP SDK; `.ci/test` makes
//! it), for the tests that run Harbor's own code.

use std::path::PathBuf;

/// The venv's Python. Without the venv the test fails, saying how to make it (a test
/// may not install it: that needs the network; `.ci/test` does, and fails when the
/// machine has no Python >= 3.12 to make it with).
pub fn venv_python() -> PathBuf {
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/harbor-venv/bin/python");
    if python.exists() {
        return python;
    }
    panic!(
        "no {}: make it with `bash .ci/test` (or: python3.12 -m venv target/harbor-venv && \
         target/harbor-venv/bin/pip install harbor==0.26.0 agent-client-protocol==0.12.1)",
        python.display()
    );
}
