//! `-w/--worktree [NAME]`: the session works in a new git worktree of the repository,
//! where gemini-cli 0.61 makes them (`.gemini/worktrees/NAME`, branch `worktree-NAME`),
//! and the worktree is kept afterwards.

use std::process::Command;

use serde_json::json;

use crate::common::*;

/// A git repository in the scratch workspace with one commit.
pub fn repository(s: &Scratch) -> impl Fn(&[&str]) -> String + '_ {
    let git = move |args: &[&str]| {
        let out = Command::new("git")
            .current_dir(s.ws())
            .env("HOME", s.home())
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(["-c", "commit.gpgsign=false"])
            .args(args)
            .output()
            .expect("git");
        assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    s.write("README.md", "hello\n");
    git(&["init", "-q"]);
    git(&["add", "README.md"]);
    git(&["commit", "-qm", "one"]);
    git
}

#[test]
fn a_named_worktree_gets_the_session_and_stays() {
    let s = Scratch::new();
    let git = repository(&s);
    let turns = [
        turn(vec![call(
            "write_file",
            json!({"file_path": "new.txt", "content": "made in the worktree\n"}),
        )]),
        turn(vec![text("done")]),
    ];
    let out = s.run(&turns, &["-w", "feat", "-y", "-p", "write it"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let tree = s.ws().join(".gemini/worktrees/feat");
    assert_eq!(
        std::fs::read_to_string(tree.join("new.txt")).unwrap(),
        "made in the worktree\n"
    );
    assert_eq!(
        std::fs::read_to_string(tree.join("README.md")).unwrap(),
        "hello\n"
    );
    assert!(
        !s.ws().join("new.txt").exists(),
        "the checkout is untouched"
    );
    // gemini-cli's branch name; the worktree is git's and is kept.
    assert_eq!(
        git(&[
            "branch",
            "--format=%(refname:short)",
            "--list",
            "worktree-feat"
        ])
        .trim(),
        "worktree-feat"
    );
    let listed = git(&["worktree", "list", "--porcelain"]);
    assert!(
        listed.contains("branch refs/heads/worktree-feat"),
        "{listed}"
    );
    // The model was told it works there.
    let first = s.requests()[0].to_string();
    assert!(first.contains(".gemini/worktrees/feat"), "{first}");

    // The same name again: git refuses, and so does the start.
    let out = s.run(&[turn(vec![text("x")])], &["-w", "feat", "-p", "again"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("Failed to create or switch to worktree: "),
        "{}",
        stderr(&out)
    );
}

#[test]
fn without_a_name_one_is_made_of_the_time() {
    let s = Scratch::new();
    let git = repository(&s);
    let out = s.run(&[turn(vec![text("ok")])], &["-p", "hi", "--worktree"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let names: Vec<String> = std::fs::read_dir(s.ws().join(".gemini/worktrees"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    // YYYY-MM-DD-HH-MM-SS-mmm-xxxx
    let parts: Vec<&str> = names[0].split('-').collect();
    assert_eq!(parts.len(), 8, "{names:?}");
    assert!(parts[..7]
        .iter()
        .all(|p| p.chars().all(|c| c.is_ascii_digit())));
    assert_eq!(parts[7].len(), 4);
    let branch = format!("worktree-{}", names[0]);
    assert_eq!(
        git(&["branch", "--format=%(refname:short)", "--list", &branch]).trim(),
        branch
    );
}

#[test]
fn outside_a_repository_or_with_a_bad_name_the_start_fails() {
    let s = Scratch::new();
    let out = s.run(&[turn(vec![text("x")])], &["-w", "feat", "-p", "hi"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("Failed to create or switch to worktree: "),
        "{}",
        stderr(&out)
    );
    assert!(s.requests().is_empty(), "no model request");

    let s = Scratch::new();
    let _git = repository(&s);
    let out = s.run(&[turn(vec![text("x")])], &["-w", "../escape", "-p", "hi"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("is not a worktree name"),
        "{}",
        stderr(&out)
    );
    assert!(!s.ws().join(".gemini/escape").exists());
    assert!(!s.root().join("escape").exists());
}

#[test]
fn in_auto_edit_the_worktrees_files_are_edited_unasked_but_its_config_is_not() {
    let s = Scratch::new();
    let _git = repository(&s);
    let turns = [
        turn(vec![
            call(
                "write_file",
                json!({"file_path": "src/a.txt", "content": "code\n"}),
            ),
            call(
                "write_file",
                json!({"file_path": ".gemini/settings.json", "content": "{}\n"}),
            ),
        ]),
        turn(vec![text("done")]),
    ];
    let out = s.run(
        &turns,
        &["-w", "feat", "--approval-mode", "auto_edit", "-p", "write"],
    );
    assert!(
        out.status.success() || out.status.code() == Some(54),
        "{}",
        stderr(&out)
    );
    let tree = s.ws().join(".gemini/worktrees/feat");
    assert_eq!(
        std::fs::read_to_string(tree.join("src/a.txt")).unwrap(),
        "code\n"
    );
    assert!(!tree.join(".gemini/settings.json").exists());
    let responses = function_responses(&s.requests()[1]);
    assert!(
        responses[0]["response"]["output"].is_string(),
        "{responses:?}"
    );
    assert!(
        responses[1]["response"]["error"].is_string(),
        "{responses:?}"
    );
}

#[test]
fn a_worktree_leaves_the_trust_of_its_repository_as_it_was() {
    let s = Scratch::new();
    s.write(".troupe/config.toml", "[model]\nmax_turns = 7\n");
    let git = repository(&s);
    git(&["add", ".troupe/config.toml"]);
    git(&["commit", "-qm", "config"]);
    let trust = s.bare_command().arg("trust").output().unwrap();
    assert!(trust.status.success(), "{}", stderr(&trust));
    let out = s.run(&[turn(vec![text("ok")])], &["-w", "feat", "-p", "hi"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The checkout's pinned configuration did not change: its settings still apply.
    let config = s.bare_command().arg("config").output().unwrap();
    let shown = String::from_utf8_lossy(&config.stdout);
    assert!(
        shown.contains("model.max_turns = 7  # project file"),
        "{shown}\n{}",
        stderr(&config)
    );
    assert!(
        !stderr(&config).contains("changed since you trusted"),
        "{}",
        stderr(&config)
    );
    // Inside the worktree, its own configuration is new to the pin: it asks again.
    let inside = s
        .bare_command()
        .current_dir(s.ws().join(".gemini/worktrees/feat"))
        .arg("config")
        .output()
        .unwrap();
    let err = stderr(&inside);
    assert!(
        err.contains("added: .gemini/worktrees/feat/.troupe/config.toml"),
        "{err}"
    );
}
