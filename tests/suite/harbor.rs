//! Harbor (Terminal-Bench's harness, `harbor==0.26.0`) runs Troupe through its ACP
//! agent: `tests/harbor/run_harbor_acp.py` drives a real Harbor trial (its agent's
//! install, configure and run, its verifier, its trajectory) with Troupe's registry
//! entry, a local directory standing in for the container and a loopback Gemini
//! server. The script needs the virtualenv `target/harbor-venv` (`.ci/test` makes
//! it); without it the test fails saying how to make it, or skips, saying so, on a
//! machine with no Python 3.12 to make it with.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use std::time::{Duration, Instant};

/// A whole trial with a debug build: setup, two model requests, the verifier.
const LIMIT: Duration = Duration::from_secs(300);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn harbors_acp_agent_runs_a_trial_with_troupe() {
    let python = crate::common::harbor::venv_python();
    let scratch = tempfile::tempdir().expect("tempdir");
    let dir = scratch.path();
    for sub in ["home", "cache", "config", "data", "tmp"] {
        std::fs::create_dir_all(dir.join(sub)).expect("scratch dirs");
    }
    let stdout = std::fs::File::create(dir.join("stdout")).expect("stdout file");
    let stderr = std::fs::File::create(dir.join("stderr")).expect("stderr file");
    let mut child = Command::new(&python)
        .arg(repo().join("tests/harbor/run_harbor_acp.py"))
        .arg("--troupe")
        .arg(env!("CARGO_BIN_EXE_troupe"))
        .arg("--work")
        .arg(dir.join("work"))
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir.join("home"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("TMPDIR", dir.join("tmp"))
        .env("LANG", "C.UTF-8")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr))
        .spawn()
        .expect("start the Harbor script");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break Some(status);
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let output = output_of(dir);
    match status {
        Some(status) if status.success() => {
            assert!(
                output.contains("every check passed"),
                "the script exited 0 without its closing line:\n{output}"
            );
        }
        Some(status) => panic!("the Harbor script failed ({status}):\n{output}"),
        None => panic!("the Harbor script did not finish within {LIMIT:?}:\n{output}"),
    }
}

/// The script's stdout, then its stderr.
fn output_of(dir: &Path) -> String {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    format!(
        "--- stdout\n{}\n--- stderr\n{}",
        read("stdout"),
        read("stderr")
    )
}
