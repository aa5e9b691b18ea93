//! What a command could have written in the workspace runs nothing at the next start:
//! a trusted folder's project configuration that changed since it was trusted is not
//! applied until the user trusts it again, and hooks and MCP stdio servers, which run
//! outside the sandbox, run no git program a planted `.git/config` names and import no
//! Python module planted in the workspace.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::mcp::fixture;
use crate::common::*;

/// Writes the user's Troupe config.
fn user_config(s: &Scratch, toml: &str) {
    let dir = s.home().join(".troupe");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), toml).unwrap();
}

/// A marker file of the scratch dir (outside the workspace).
fn marker(s: &Scratch, name: &str) -> PathBuf {
    s.root().join(name)
}

/// `troupe trust` run in `dir`.
fn trust_in(s: &Scratch, dir: &Path) {
    let out = s
        .bare_command()
        .current_dir(dir)
        .arg("trust")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

/// A one-turn headless run in `dir`.
fn run_in(s: &Scratch, dir: &Path) -> std::process::Output {
    let script = s.script(&[turn(vec![text("ok")])]);
    s.command()
        .current_dir(dir)
        .arg("--fake-responses")
        .arg(script)
        .args(["-p", "hi"])
        .output()
        .unwrap()
}

const NOTICE: &str = "changed since you trusted";

#[test]
fn a_trusted_folders_config_that_gains_a_hook_is_not_applied_until_trusted_again() {
    let s = Scratch::new();
    s.write(".troupe/config.toml", "[model]\nmax_turns = 5\n");
    trust_in(&s, &s.ws());
    // A command of the session appends a hook to the trusted settings file.
    let ran = marker(&s, "hook-ran");
    let mut config = s.read(".troupe/config.toml");
    config.push_str(&format!(
        "\n[[hooks.SessionStart]]\nname = 'planted'\ncommand = 'touch {}'\n",
        ran.display()
    ));
    s.write(".troupe/config.toml", &config);

    let out = run_in(&s, &s.ws());
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(!ran.exists(), "the planted hook ran: {err}");
    assert!(err.contains(NOTICE), "{err}");
    assert_eq!(err.matches(NOTICE).count(), 1, "said once: {err}");
    assert!(err.contains("changed: .troupe/config.toml"), "{err}");
    assert!(err.contains("`troupe trust`"), "{err}");
    // `troupe config` says the same and shows the file not applied.
    let shown = s.bare_command().arg("config").output().unwrap();
    assert!(stderr(&shown).contains(NOTICE), "{}", stderr(&shown));
    assert!(
        !stdout(&shown).contains("model.max_turns = 5 "),
        "{}",
        stdout(&shown)
    );

    // Trusted again: the pin follows, the hook runs.
    trust_in(&s, &s.ws());
    let out = run_in(&s, &s.ws());
    assert!(!stderr(&out).contains(NOTICE), "{}", stderr(&out));
    assert!(ran.exists(), "{}", stderr(&out));
    std::fs::remove_file(&ran).unwrap();

    // Troupe's own write into the project settings keeps the folder trusted.
    let added = s
        .bare_command()
        .args(["mcp", "add", "ev", fixture()])
        .output()
        .unwrap();
    assert!(added.status.success(), "{}", stderr(&added));
    assert!(s.read(".troupe/config.toml").contains("[mcp_servers.ev]"));
    let out = run_in(&s, &s.ws());
    assert!(!stderr(&out).contains(NOTICE), "{}", stderr(&out));
    assert!(ran.exists(), "{}", stderr(&out));
}

#[test]
fn a_nested_gemini_settings_file_planted_under_a_trusted_folder_waits_for_trust() {
    let s = Scratch::new();
    trust_in(&s, &s.ws());
    let ran = marker(&s, "nested-hook-ran");
    let hook = json!({"hooks": {"SessionStart": [{"hooks": [
        {"type": "command", "name": "planted", "command": format!("touch {}", ran.display())}
    ]}]}});
    s.write("sub/.gemini/settings.json", &hook.to_string());
    let sub = s.ws().join("sub");

    let out = run_in(&s, &sub);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(!ran.exists(), "the planted hook ran: {err}");
    assert!(err.contains(NOTICE), "{err}");
    assert!(err.contains("added: sub/.gemini/settings.json"), "{err}");
    assert!(err.contains("NOT run: planted"), "{err}");
    // The trusted folder itself is as it was trusted.
    let out = run_in(&s, &s.ws());
    assert!(!stderr(&out).contains(NOTICE), "{}", stderr(&out));

    trust_in(&s, &sub);
    let out = run_in(&s, &sub);
    assert!(!stderr(&out).contains(NOTICE), "{}", stderr(&out));
    assert!(ran.exists(), "{}", stderr(&out));
}

/// An executable shell script at `path` that touches `touched`.
fn script_touching(path: &Path, touched: &Path) {
    std::fs::write(path, format!("#!/bin/sh\ntouch '{}'\n", touched.display())).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_user_hooks_git_status_runs_no_fsmonitor_of_a_planted_git_config() {
    let s = Scratch::new();
    let init = std::process::Command::new("git")
        .args(["init", "-q", "."])
        .current_dir(s.ws())
        .env("HOME", s.home())
        .output()
        .expect("git");
    assert!(init.status.success(), "{}", stderr(&init));
    // What a command of an earlier session left: an fsmonitor in the repository's
    // own configuration.
    let monitor_ran = marker(&s, "fsmonitor-ran");
    let monitor = s.ws().join("monitor.sh");
    script_touching(&monitor, &monitor_ran);
    let mut config = s.read(".git/config");
    config.push_str(&format!("[core]\n\tfsmonitor = {}\n", monitor.display()));
    s.write(".git/config", &config);
    let hook_ran = marker(&s, "status-hook-ran");
    user_config(
        &s,
        &format!(
            "[[hooks.SessionStart]]\nname = 'status'\ncommand = 'git status >/dev/null 2>&1; touch {}'\n",
            hook_ran.display()
        ),
    );

    let out = run_in(&s, &s.ws());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        hook_ran.exists(),
        "the user's hook did not run: {}",
        stderr(&out)
    );
    assert!(
        !monitor_ran.exists(),
        "git in a hook ran the planted fsmonitor"
    );
}

/// Whether `python3` is 3.11 or later (`PYTHONSAFEPATH`).
fn python_has_safe_path() -> bool {
    std::process::Command::new("python3")
        .args([
            "-c",
            "import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)",
        ])
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn python_mcp_servers_and_hooks_import_no_module_planted_in_the_workspace() {
    if !python_has_safe_path() {
        eprintln!("skipped: python3 3.11 or later is needed");
        return;
    }
    let s = Scratch::new();
    // The user's own modules, outside the workspace: the server becomes the fixture.
    let lib = s.root().join("pylib");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(
        lib.join("troupe_time_server.py"),
        format!("import os\nos.execv({0:?}, [{0:?}])\n", fixture()),
    )
    .unwrap();
    let helper_ran = marker(&s, "helper-ran");
    std::fs::write(
        lib.join("troupe_hook_helper.py"),
        format!(
            "open({:?}, 'w').close()\n",
            helper_ran.display().to_string()
        ),
    )
    .unwrap();
    // What a command of an earlier session planted in the workspace.
    let planted = marker(&s, "planted-imported");
    let plant = format!(
        "open({:?}, 'w').close()\nraise SystemExit(0)\n",
        planted.display().to_string()
    );
    s.write("troupe_time_server.py", &plant);
    s.write("troupe_hook_helper.py", &plant);
    let lib = lib.display().to_string();
    user_config(
        &s,
        &format!(
            "[mcp_servers.time]\ncommand = 'python3'\nargs = ['-m', 'troupe_time_server']\nenv = {{ PYTHONPATH = '{lib}' }}\n\n\
             [[hooks.SessionStart]]\nname = 'helper'\ncommand = 'python3 -m troupe_hook_helper'\nenv = {{ PYTHONPATH = '{lib}' }}\n"
        ),
    );

    let turns = [
        turn(vec![call("mcp_time_echo", json!({"text": "hi"}))]),
        turn(vec![text("done")]),
    ];
    let out = s.run(&turns, &["-p", "go", "--yolo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !planted.exists(),
        "a module planted in the workspace was imported: {}",
        stderr(&out)
    );
    assert!(
        helper_ran.exists(),
        "the user's hook did not run: {}",
        stderr(&out)
    );
    let responses = function_responses(&s.requests()[1]);
    assert!(
        responses[0]["response"]["error"].is_null(),
        "the user's server did not answer: {responses:?}"
    );
}
