//! The Python of `target/harbor-venv` (Harbor 0.26 and the ACP SDK; `.ci/test` makes
//! it), for the tests that run Harbor's own code.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Whether this machine has a Python 3.12 to make the virtualenv with (as `.ci/test`
/// looks for it: `python3.12` on PATH, or pyenv's 3.12.1).
fn python312_available() -> bool {
    let runs = |cmd: &mut Command| {
        cmd.stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    runs(Command::new("python3.12").arg("--version"))
        || runs(
            Command::new("python")
                .arg("--version")
                .env("PYENV_VERSION", "3.12.1"),
        ) && runs(Command::new("pyenv").arg("--version"))
}

/// The venv's Python. Without the venv: `None` (the caller skips, and this prints
/// why) on a machine with no Python 3.12 to make it with; a failure saying how to
/// make it otherwise (a test may not install it: that needs the network).
pub fn venv_python() -> Option<PathBuf> {
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/harbor-venv/bin/python");
    if python.exists() {
        return Some(python);
    }
    if !python312_available() {
        println!(
            "SKIPPED: no {} and no Python 3.12 on this machine (python3.12, or pyenv's 3.12.1) \
             to make it with: Harbor 0.26 needs Python >= 3.12",
            python.display()
        );
        return None;
    }
    panic!(
        "no {}: make it with `bash .ci/test` (or: python3.12 -m venv target/harbor-venv && \
         target/harbor-venv/bin/pip install harbor==0.26.0 agent-client-protocol==0.12.1)",
        python.display()
    );
}
