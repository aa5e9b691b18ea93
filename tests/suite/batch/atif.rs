//! ATIF trajectories checked by Harbor's own model (`harbor.models.trajectories.
//! Trajectory`, from the `harbor` package in `target/harbor-venv`, which `.ci/test`
//! makes), and `--trajectory` on a `-p` run.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::common::{call, stderr, text, turn, Scratch};

/// The Python of the venv holding Harbor; `None` only where no Python 3.12 exists to
/// make one (then the check is skipped, saying so).
pub fn harbor_python() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/harbor-venv/bin/python");
    if venv.exists() {
        return Some(venv);
    }
    let has_312 = Command::new("python3.12")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        !has_312,
        "Python 3.12 is here but target/harbor-venv is not: run the set-up of .ci/test (it installs harbor into target/harbor-venv)"
    );
    eprintln!(
        "SKIPPED the Harbor validation: no Python 3.12 on this machine to install harbor with"
    );
    None
}

/// Every `trajectory.json` among `files` validates as Harbor's `Trajectory`.
pub fn assert_valid(files: &[PathBuf]) {
    let trajectories: Vec<&PathBuf> = files
        .iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n == "trajectory.json" || n.to_string_lossy().ends_with(".json"))
        })
        .collect();
    assert!(!trajectories.is_empty(), "no trajectory among {files:?}");
    let Some(python) = harbor_python() else {
        return;
    };
    let check = "import sys\nfrom harbor.models.trajectories import Trajectory\nfor p in sys.argv[1:]:\n    t = Trajectory.model_validate_json(open(p).read())\n    print(p, len(t.steps))\n";
    let out = Command::new(python)
        .arg("-c")
        .arg(check)
        .args(&trajectories)
        .env("HOME", std::env::temp_dir())
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "Harbor's Trajectory model refused a trajectory:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count(),
        trajectories.len()
    );
}

#[test]
fn a_p_run_keeps_its_trajectory_with_the_calls_and_their_results() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let path = s.root().join("run/trajectory.json");
    let path_arg = path.to_string_lossy().into_owned();
    let out = s.run(
        &[
            turn(vec![
                text("Reading."),
                call("read_file", json!({"file_path": "a.txt"})),
            ]),
            turn(vec![text("It says alpha.")]),
        ],
        &["-p", "what does a.txt say?", "--trajectory", &path_arg],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("trajectory written"))
            .expect("json");
    assert_eq!(doc["agent"]["name"], "troupe");
    let steps = doc["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 3, "{doc}");
    assert_eq!(steps[0]["source"], "user");
    assert_eq!(steps[0]["message"], "what does a.txt say?");
    assert_eq!(steps[1]["message"], "Reading.");
    assert_eq!(steps[1]["tool_calls"][0]["function_name"], "read_file");
    let result = &steps[1]["observation"]["results"][0];
    assert_eq!(
        result["source_call_id"],
        steps[1]["tool_calls"][0]["tool_call_id"]
    );
    assert!(
        result["content"].as_str().unwrap_or("").contains("alpha"),
        "{result}"
    );
    assert_eq!(steps[2]["message"], "It says alpha.");
    assert_eq!(doc["final_metrics"]["total_steps"], 3);
    assert_valid(&[path]);
}
