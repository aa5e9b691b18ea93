//! The shell bypasses of issue 10: in default mode (headless, where asking means
//! refusing) none of them runs, an allow-list entry carries nothing along, auto-approved
//! git runs no repository-configured program, and API keys reach no child.

use std::process::Command;

use serde_json::{json, Value};

use crate::common::*;

const DENIED: &str = "denied by policy";

/// Whether a known-read-only command may run without asking: only under the read-only
/// sandbox, so only where the kernel has Landlock.
fn unasked_possible() -> bool {
    troupe::platform::sandbox::landlock_abi().is_some()
}

/// Runs every command as one parallel batch in default mode; returns the response of
/// each, in order.
fn run_batch(s: &Scratch, commands: &[&str], args: &[&str]) -> Vec<Value> {
    let calls = commands
        .iter()
        .map(|c| call("run_shell_command", json!({"command": c})))
        .collect();
    let _ = std::fs::remove_file(s.requests_path());
    let mut all = vec!["-p", "go"];
    all.extend_from_slice(args);
    let out = s.run(&[turn(calls), turn(vec![text("done")])], &all);
    let requests = s.requests();
    assert!(requests.len() >= 2, "{}", stderr(&out));
    function_responses(&requests[1])
}

fn git(ws: &std::path::Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(ws)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", ws)
        .status()
        .expect("git");
    assert!(status.success(), "git {args:?}");
}

#[test]
fn bypasses_need_approval_in_default_mode() {
    let s = Scratch::new();
    s.write("README", "hello\n");
    s.write("in.txt", "a\na\n");
    std::fs::write(s.root().join("outside.txt"), "outside secret\n").unwrap();
    std::fs::create_dir_all(s.home().join(".ssh")).unwrap();
    std::fs::write(s.home().join(".ssh/id_rsa"), "PRIVATE KEY\n").unwrap();
    let bypasses = [
        "x='$(touch m1)'; echo ${x@P}",
        "echo \"$(touch m2)\"",
        "echo \"`touch m3`\"",
        "echo $((a[$(touch m4)]))",
        "PATH=/nonexistent; cat README",
        "HOME=/tmp; git status",
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch m5' git status",
        "uniq in.txt m6",
        "sort -o m7 in.txt",
        "find . -name README -fprint m8",
        "git status > m9",
        "git diff --output=m10",
        "cat ../outside.txt",
        "cat ~/.ssh/id_rsa",
        "grep -r secret ..",
        "base64 /proc/self/environ",
        "cat <(touch m11)",
        "find . -name README -exec touch m12 ';'",
        "rg --pre ./m13.sh hello",
        "sed -n '1w m14' README",
        "echo `touch m15`",
        "(touch m16)",
        "git -c core.pager='touch m17' log",
        "ls & touch m18",
        "cat /proc/$PPID/environ",
    ];
    let responses = run_batch(&s, &bypasses, &[]);
    assert_eq!(responses.len(), bypasses.len());
    for (command, response) in bypasses.iter().zip(&responses) {
        let text = response.to_string();
        assert!(
            text.contains(DENIED),
            "`{command}` was not asked about: {text}"
        );
        assert!(!text.contains("PRIVATE KEY") && !text.contains("outside secret"));
    }
    for marker in [
        "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9", "m10", "m11", "m12", "m14", "m15",
        "m16", "m17", "m18",
    ] {
        assert!(!s.ws().join(marker).exists(), "{marker} was written");
    }
    // Plain read-only commands inside the workspace still run without asking (under
    // the read-only sandbox: only when there is one).
    let responses = run_batch(&s, &["cat README", "uniq -c in.txt", "ls"], &[]);
    for response in &responses {
        assert_eq!(
            !response.to_string().contains(DENIED),
            unasked_possible(),
            "{response}"
        );
    }
    assert_eq!(
        responses[0].to_string().contains("hello"),
        unasked_possible()
    );
}

#[test]
fn allow_list_entry_allows_the_command_and_nothing_riding_on_it() {
    let s = Scratch::new();
    git(&s.ws(), &["init", "-q"]);
    std::fs::create_dir_all(s.home().join(".troupe")).unwrap();
    std::fs::write(
        s.home().join(".troupe/config.toml"),
        "[approval]\nallowed = [\"run_shell_command(git status)\", \"run_shell_command(git diff)\"]\n",
    )
    .unwrap();
    let commands = [
        "git status > m1",
        "PATH=/x git status",
        "git status; touch m2",
        "git status $(touch m3)",
        "git diff --output=m4",
        "git status -s",
    ];
    let responses = run_batch(&s, &commands, &[]);
    for (command, response) in commands[..5].iter().zip(&responses) {
        assert!(
            response.to_string().contains(DENIED),
            "`{command}`: {response}"
        );
    }
    assert!(
        !responses[5].to_string().contains(DENIED),
        "{}",
        responses[5]
    );
    for marker in ["m1", "m2", "m3", "m4"] {
        assert!(!s.ws().join(marker).exists(), "{marker} was written");
    }
}

#[test]
fn auto_approved_git_runs_no_repository_program() {
    let s = Scratch::new();
    s.write("f.txt", "one\n");
    git(&s.ws(), &["init", "-q"]);
    let fsmonitor = format!("touch {}/fsmonitor-ran; false", s.root().display());
    let pager = format!("touch {}/pager-ran; cat", s.root().display());
    git(&s.ws(), &["add", "f.txt"]);
    git(
        &s.ws(),
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "one",
        ],
    );
    s.write("f.txt", "two\n");
    let external = format!("touch {}/external-ran; true", s.root().display());
    git(&s.ws(), &["config", "core.fsmonitor", &fsmonitor]);
    git(&s.ws(), &["config", "core.pager", &pager]);
    git(&s.ws(), &["config", "diff.external", &external]);
    let responses = run_batch(&s, &["git status", "git log -n 1", "git diff"], &[]);
    for response in &responses {
        // Without Landlock nothing runs unasked (and headless, asking refuses).
        assert_eq!(
            !response.to_string().contains(DENIED),
            unasked_possible(),
            "{response}"
        );
    }
    assert!(
        !s.root().join("fsmonitor-ran").exists(),
        "core.fsmonitor ran"
    );
    assert!(!s.root().join("pager-ran").exists(), "core.pager ran");
    assert!(!s.root().join("external-ran").exists(), "diff.external ran");
    if unasked_possible() {
        // Unasked, it ran under the read-only sandbox, where git cannot write the
        // temp files the plain stand-in diff needs: it fails, and says why.
        let diff = responses[2].to_string();
        assert!(diff.contains("[sandbox] read-only denied"), "{diff}");
    }
    // Approved, the known-read-only `git diff` still gets the plain stand-in diff (not
    // sandboxed: this scratch HOME lies in the temp dir, where the sandbox then lets
    // nothing be created directly).
    let responses = run_batch(&s, &["git diff"], &["--yolo", "--sandbox", "off"]);
    let diff = responses[0].to_string();
    assert!(diff.contains("-one") && diff.contains("+two"), "{diff}");
    assert!(!s.root().join("external-ran").exists(), "diff.external ran");
    // The same command approved by the user (yolo) is the user's to run as configured
    // (unsandboxed here: the marker goes next to the scratch HOME, see above).
    let _ = run_batch(
        &s,
        &["git status > /dev/null"],
        &["--yolo", "--sandbox", "off"],
    );
    assert!(
        s.root().join("fsmonitor-ran").exists(),
        "fixture: fsmonitor never runs"
    );
}

#[test]
fn writes_into_config_directories_ask_in_auto_edit() {
    let s = Scratch::new();
    let calls = vec![
        call(
            "write_file",
            json!({"file_path": ".troupe/config.toml", "content": "[approval]\nmode = \"yolo\"\n"}),
        ),
        call(
            "write_file",
            json!({"file_path": ".gemini/settings.json", "content": "{}"}),
        ),
        call(
            "write_file",
            json!({"file_path": "ok.txt", "content": "fine\n"}),
        ),
    ];
    let out = s.run(
        &[turn(calls), turn(vec![text("done")])],
        &["-p", "go", "--approval-mode", "auto_edit"],
    );
    assert!(
        !s.ws().join(".troupe/config.toml").exists(),
        "{}",
        stderr(&out)
    );
    assert!(!s.ws().join(".gemini/settings.json").exists());
    assert_eq!(s.read("ok.txt"), "fine\n");
    let responses = function_responses(&s.requests()[1]);
    assert!(
        responses[0].to_string().contains(DENIED),
        "{}",
        responses[0]
    );
    // yolo still writes them.
    let calls = vec![call(
        "write_file",
        json!({"file_path": ".troupe/notes.txt", "content": "x\n"}),
    )];
    s.run(
        &[turn(calls), turn(vec![text("done")])],
        &["-p", "go", "--yolo"],
    );
    assert!(s.ws().join(".troupe/notes.txt").exists());
}

#[test]
fn writes_into_config_directories_ask_whatever_the_allow_rules_say() {
    let s = Scratch::new();
    s.write(".gemini/settings.json", "{}\n");
    std::fs::create_dir_all(s.home().join(".troupe")).unwrap();
    std::fs::write(
        s.home().join(".troupe/config.toml"),
        "[approval]\nallowed = [\"write_file\", \"replace\"]\n",
    )
    .unwrap();
    let calls = vec![
        call(
            "write_file",
            json!({"file_path": ".troupe/config.toml", "content": "[approval]\nmode = \"yolo\"\n"}),
        ),
        call(
            "replace",
            json!({"file_path": ".gemini/settings.json", "old_string": "{}", "new_string": "{\"tools\": {}}"}),
        ),
        call(
            "write_file",
            json!({"file_path": "ok.txt", "content": "fine\n"}),
        ),
    ];
    let out = s.run(&[turn(calls), turn(vec![text("done")])], &["-p", "go"]);
    // The two refused writes end the run with 54.
    assert_eq!(out.status.code(), Some(54), "{}", stderr(&out));
    assert!(!s.ws().join(".troupe/config.toml").exists());
    assert_eq!(s.read(".gemini/settings.json"), "{}\n");
    // The allow rule itself works.
    assert_eq!(s.read("ok.txt"), "fine\n");
    let responses = function_responses(&s.requests()[1]);
    for response in &responses[..2] {
        assert!(response.to_string().contains(DENIED), "{response}");
    }
}

#[test]
fn api_keys_reach_no_child_and_leave_troupe_environment() {
    let s = Scratch::new();
    let script = s.script(&[
        turn(vec![call(
            "run_shell_command",
            json!({"command": "env; echo ---; tr '\\0' '\\n' < /proc/$PPID/environ"}),
        )]),
        turn(vec![text("done")]),
    ]);
    let out = s
        .command()
        .arg("--fake-responses")
        .arg(script)
        // Without the sandbox: Troupe's own environment block must be readable here.
        .args(["-p", "go", "--yolo", "--sandbox", "off"])
        .env("GEMINI_API_KEY", "gem-secret-1")
        .env("OPENAI_API_KEY", "oai-secret-2")
        .env("TROUPE_MODEL_GEMINI_API_KEY", "troupe-secret-3")
        .env("OTHER_SERVICE_API_KEY", "other-secret-4")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let responses = function_responses(&s.requests()[1]);
    let text = responses[0].to_string();
    assert!(text.contains("---") && text.contains("TROUPE=1"), "{text}");
    // Both the child's environment and Troupe's /proc environ block were read.
    assert!(text.matches("TROUPE_HOME=").count() >= 2, "{text}");
    for secret in [
        "gem-secret-1",
        "oai-secret-2",
        "troupe-secret-3",
        "other-secret-4",
    ] {
        assert!(!text.contains(secret), "{secret} leaked: {text}");
    }
    // Troupe itself still reads the key it took out of its environment.
    let config = s
        .bare_command()
        .arg("config")
        .env("TROUPE_MODEL_GEMINI_API_KEY", "troupe-secret-3")
        .output()
        .unwrap();
    assert!(
        stdout(&config).contains("model.gemini.api_key = set  # environment variable"),
        "{}",
        stdout(&config)
    );
}

#[test]
fn globs_and_links_that_may_reach_outside_ask() {
    let s = Scratch::new();
    s.write("README.md", "hello\n");
    let out = s.root().join("o");
    std::fs::create_dir_all(out.join("inner")).unwrap();
    std::fs::write(out.join("secret.txt"), "outside secret\n").unwrap();
    std::fs::write(s.root().join("outside.txt"), "outside secret\n").unwrap();
    std::fs::create_dir_all(s.home().join(".ssh")).unwrap();
    std::fs::write(s.home().join(".ssh/id_rsa"), "PRIVATE KEY\n").unwrap();
    // A file link and a directory link leading out of the workspace.
    std::os::unix::fs::symlink(s.root().join("outside.txt"), s.ws().join("a.key")).unwrap();
    std::os::unix::fs::symlink(out.join("inner"), s.ws().join("lnk")).unwrap();
    let reaching_out = [
        "cat *.key",
        "cat l*/../secret.txt",
        "cat lnk/../secret.txt",
        "cat */../../outside.txt",
        "cat {..,.}/outside.txt",
        "cat ~/.s*/id*",
    ];
    let responses = run_batch(&s, &reaching_out, &[]);
    assert_eq!(responses.len(), reaching_out.len());
    for (command, response) in reaching_out.iter().zip(&responses) {
        let text = response.to_string();
        assert!(
            text.contains(DENIED),
            "`{command}` was not asked about: {text}"
        );
        assert!(!text.contains("PRIVATE KEY") && !text.contains("outside secret"));
    }
    // A glob whose every match is inside still runs without asking (when the
    // read-only sandbox exists).
    let responses = run_batch(&s, &["cat *.md"], &[]);
    assert_eq!(
        !responses[0].to_string().contains(DENIED),
        unasked_possible(),
        "{}",
        responses[0]
    );
    assert_eq!(
        responses[0].to_string().contains("hello"),
        unasked_possible()
    );
}
