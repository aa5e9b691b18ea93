//! The sandbox in the REPL: `!` lines run in it, a refusal is shown with the offer to
//! run the line again without the sandbox, and `/about` says what is in force.

use super::*;
use crate::suite::repl::term::Term;

fn start(fx: &Fixture) -> Term {
    start_with(fx, &[])
}

fn start_with(fx: &Fixture, env: &[(&str, String)]) -> Term {
    let tmp = fx.root().join("tmp").display().to_string();
    let mut env = env.to_vec();
    env.push(("TMPDIR", tmp));
    Term::start(&fx.s, &[], &env, &[])
}

#[test]
fn a_refused_shell_line_can_run_again_without_the_sandbox() {
    require_landlock!();
    let fx = Fixture::new();
    let t = start(&fx);
    t.line("!touch ../outside");
    t.wait_for("wants to run a shell command: touch ../outside");
    t.line("y");
    t.wait_for(WW_NOTE);
    t.wait_for("Run it again without the sandbox? [y/N]");
    t.line("n");
    t.wait_prompt();
    t.line("!touch ../outside");
    t.wait_for_count("Allow? [y/N]", 2);
    // Nothing ran between the two questions.
    assert!(!fx.root().join("outside").exists(), "{}", t.text());
    t.line("y");
    t.wait_for_count("Run it again without the sandbox? [y/N]", 2);
    t.line("y");
    let outside = fx.root().join("outside");
    t.wait_until_true("../outside created without the sandbox", || {
        outside.exists()
    });
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
}

#[test]
fn an_unasked_shell_line_runs_under_read_only_and_about_says_so() {
    require_landlock!();
    let fx = Fixture::new();
    // `.` first in PATH: `ls` is the workspace's.
    let path = format!(".:{}", std::env::var("PATH").unwrap_or_default());
    let t = start_with(&fx, &[("PATH", path)]);
    // The classifier accepts it, so it runs without asking: under read-only the
    // workspace's `ls` cannot start.
    t.line("!ls");
    t.wait_for(RO_NOTE);
    t.wait_for("Run it again without the sandbox? [y/N]");
    t.line("n");
    t.wait_prompt();
    assert!(
        !t.text().contains("wants to run a shell command"),
        "{}",
        t.text()
    );
    assert!(!t.text().contains("EVIL-RAN"), "{}", t.text());
    t.line("/about");
    let abi = troupe::platform::sandbox::landlock_abi().unwrap_or_default();
    t.wait_for(&format!(
        "Sandbox        workspace-write, an allow-listed world (namespaces) with Landlock ABI {abi}"
    ));
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
    let traces: Vec<_> = std::fs::read_dir(fx.root())
        .expect("root")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("evil-ran"))
        .collect();
    assert!(traces.is_empty(), "the workspace's ls ran");
}
