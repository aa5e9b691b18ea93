//! What a gemini-cli user reaches for: `@path`, `!` shell mode, custom commands, the
//! status line, Tab completion and the newer slash commands.

use serde_json::{json, Value};

use super::term::Term;
use crate::common::*;

/// The text parts of the last user content of request `n`.
fn user_texts(s: &Scratch, n: usize) -> Vec<String> {
    let requests = s.requests();
    let contents = requests[n]["contents"].as_array().unwrap();
    contents
        .iter()
        .filter(|c| c["role"] == "user")
        .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p["text"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn at_references_tab_completion_and_the_status_line() {
    let s = Scratch::new();
    s.write("notes/todo.md", "buy milk\n");
    s.write("AGENTS.md", "Be brief.\n");
    let turns = [turn(vec![text("Noted.")])];
    // A 400-token context window, so that the 100-token prompt shows.
    let t = Term::start(
        &s,
        &turns,
        &[],
        &["-c", "model.compression.token_limits=scripted*=400"],
    );
    // The status line: model (named for its script), mode, context left, context files.
    t.wait_for(&format!(
        "scripted: {} · default · 100% context left · 1 context file",
        s.root().join("responses.jsonl").display()
    ));
    // Tab completes a slash command, then a path after `@`.
    t.tmux_literal("/hel");
    t.keys(&["Tab"]);
    t.wait_for("> /help");
    t.keys(&["C-u"]);
    // ... and a command's argument.
    t.tmux_literal("/approval-mode y");
    t.keys(&["Tab"]);
    t.wait_for("> /approval-mode yolo");
    t.keys(&["C-u"]);
    t.tmux_literal("read @no");
    t.keys(&["Tab"]);
    t.wait_for("read @notes/");
    t.tmux_literal("to");
    t.keys(&["Tab"]);
    t.wait_for("read @notes/todo.md");
    t.keys(&["Enter"]);
    let text = t.wait_for("Noted.");
    assert!(
        text.contains("Read 1 file(s) for @notes/todo.md."),
        "{text}"
    );
    t.wait_for("default · 75% context left · 1 context file");
    let texts = user_texts(&s, 0);
    assert_eq!(
        texts[texts.len() - 5..],
        [
            "read @notes/todo.md",
            "\n--- Content from referenced files ---",
            "\nContent from @notes/todo.md:\n",
            "buy milk",
            "\n--- End of content ---"
        ]
    );
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
}

#[test]
fn shell_mode_runs_commands_and_the_model_sees_them() {
    let s = Scratch::new();
    let turns = [turn(vec![text("I saw it.")])];
    let t = Term::start(&s, &turns, &[], &[]);
    // Not a known read-only command (a redirection): asked first, as for the model.
    t.line("!echo one-$((40+2)); echo two >&2");
    t.wait_for("The shell command wants to run a shell command: echo one-$((40+2)); echo two >&2");
    t.line("y");
    t.wait_for("one-42");
    t.wait_for("two");
    t.line("!");
    t.wait_for("Shell mode on");
    t.wait_for("[shell] >");
    t.line("printf 'in shell mode\\n'; exit 3");
    // The second question (the first is still in the scrollback).
    t.wait_for_count("Allow? [y/N]", 2);
    t.line("y");
    t.wait_for("(exit code 3)");
    // A known read-only command runs without asking; a refused one does not run.
    t.line("touch refused.txt");
    t.wait_for("wants to run a shell command: touch refused.txt");
    t.wait_for_count("Allow? [y/N]", 3);
    t.line("n");
    t.wait_for("Not run; the command was cancelled.");
    assert!(!s.ws().join("refused.txt").exists());
    t.line("!");
    t.wait_for("Shell mode off");
    t.line("what did I run?");
    t.wait_for("I saw it.");
    let texts = user_texts(&s, 0);
    assert_eq!(
        texts[0],
        "I ran the following shell command:\n```sh\necho one-$((40+2)); echo two >&2\n```\n\nThis produced the following result:\n```\none-42\ntwo\n```"
    );
    assert!(
        texts[1].contains("printf 'in shell mode\\\\n'; exit 3")
            && texts[1].contains("in shell mode\nCommand exited with code 3."),
        "{texts:?}"
    );
    assert_eq!(texts[2], "what did I run?");
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
}

#[test]
fn shell_mode_asks_for_what_only_looks_read_only() {
    let s = Scratch::new();
    let t = Term::start(&s, &[], &[], &[]);
    // `echo` is read-only, but `${x@P}` expands the quoted `$(…)`: it must ask.
    t.line("!x='$(touch pwned.txt)'; echo ${x@P}");
    t.wait_for("wants to run a shell command: x=");
    t.line("n");
    t.wait_for("Not run; the command was cancelled.");
    assert!(!s.ws().join("pwned.txt").exists());
    // A path outside the workspace asks too.
    t.line("!cat ../outside.txt");
    t.wait_for("wants to run a shell command: cat ../outside.txt");
    t.line("n");
    t.wait_for("Not run; the command was cancelled.");
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
}

#[test]
fn a_custom_command_fills_args_shell_and_file_injections() {
    let s = Scratch::new();
    s.write("CHANGES.md", "- fixed the parser\n");
    s.write(
        ".troupe/commands/git/review.toml",
        "description = \"Review a change\"\nprompt = \"Review {{args}}.\\nStatus: !{echo status-of {{args}}}\\nChanges: @{CHANGES.md}\"\n",
    );
    std::fs::create_dir_all(s.home().join(".troupe/commands")).unwrap();
    std::fs::write(
        s.home().join(".troupe/commands/hello.toml"),
        "prompt = \"Say hello.\"\n",
    )
    .unwrap();
    let turns = [turn(vec![text("Reviewed.")]), turn(vec![text("Hello!")])];
    // Untrusted, the project's commands are not loaded; the user's are.
    let untrusted = Term::launch(&s, &[], &[], &[]);
    // The first start in a folder with project commands asks about trust: not now.
    untrusted.wait_for("Choose 1, 2 or 3");
    untrusted.line("3");
    untrusted.wait_for("Type a request");
    untrusted.line("/help");
    // The last rows of /help: the screen may show its header before them.
    untrusted.wait_for("Custom commands");
    let text = untrusted.wait_for("  /hello");
    // The trust prompt above names the project's command; /help's list must not.
    let help = &text[text.rfind("/help").unwrap_or(0)..];
    assert!(
        help.contains("/hello") && !help.contains("/git:review"),
        "{text}"
    );
    drop(untrusted);
    let trusted = [("TROUPE_TRUST_WORKSPACE", "1".to_string())];
    let t = Term::start(&s, &turns, &trusted, &[]);
    t.line("/help");
    let text = t.wait_for("Custom commands");
    assert!(
        text.contains("/git:review") && text.contains("Review a change"),
        "{text}"
    );
    t.tmux_literal("/git:r");
    t.keys(&["Tab"]);
    t.wait_for("> /git:review");
    t.tmux_literal(" the parser fix");
    t.keys(&["Enter"]);
    // `echo` is a known read-only command: it runs without asking, as it would for the
    // model.
    t.wait_for("Reviewed.");
    t.line("/hello extra words");
    t.wait_for("Hello!");
    let texts = user_texts(&s, 0);
    assert_eq!(
        texts.last().unwrap(),
        "Review the parser fix.\nStatus: status-of the parser fix\nChanges: - fixed the parser\n"
    );
    let texts = user_texts(&s, 1);
    assert_eq!(texts.last().unwrap(), "Say hello.\n\n/hello extra words");
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
}

#[test]
fn newer_slash_commands() {
    let s = Scratch::new();
    let init_answer = turn(vec![call(
        "write_file",
        json!({"file_path": "AGENTS.md", "content": "# Project\nBuild: make\n"}),
    )]);
    let turns: Vec<Value> = vec![
        turn(vec![text("First answer.")]),
        init_answer,
        turn(vec![text("AGENTS.md written.")]),
    ];
    let t = Term::start(&s, &turns, &[], &["--yolo"]);
    t.line("/tools desc");
    let text = t.wait_for("test_sleep");
    assert!(
        text.contains("Returns the content of one file of the workspace."),
        "{text}"
    );
    t.line("/memory add  - the tests run with cargo test");
    t.wait_for("Okay, I've remembered that: \"the tests run with cargo test\"");
    let memory = std::fs::read_to_string(s.home().join(".troupe/AGENTS.md")).unwrap();
    assert!(
        memory.contains("- the tests run with cargo test"),
        "{memory}"
    );
    t.line("/memory show");
    t.wait_for("1 context file(s)");
    t.line("/directory show");
    t.wait_for(&format!("- {}", s.ws().display()));
    t.line("/model other-model");
    t.wait_for("Model set to other-model.");
    t.line("hi");
    t.wait_for("First answer.");
    t.wait_for("other-model · yolo · ");
    t.enable_clipboard();
    t.line("/copy");
    t.wait_for("Last answer copied to the clipboard.");
    t.wait_until_true("the clipboard holds the answer", || {
        t.clipboard().contains("First answer.")
    });
    t.line("/init");
    t.wait_for("AGENTS.md written.");
    assert_eq!(s.read("AGENTS.md"), "# Project\nBuild: make\n");
    t.line("/init");
    t.wait_for("An AGENTS.md file already exists");
    let init_prompt = user_texts(&s, 1);
    assert!(
        init_prompt
            .iter()
            .any(|t| t.contains("generate a comprehensive AGENTS.md")),
        "{init_prompt:?}"
    );
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
}

#[test]
fn prompt_history_is_kept_per_project_and_searched_with_ctrl_r() {
    let s = Scratch::new();
    let turns = [turn(vec![text("Done.")])];
    let t = Term::start(&s, &turns, &[], &[]);
    t.line("rename the frobnicator");
    t.wait_for("Done.");
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
    drop(t);
    let histories: Vec<_> = std::fs::read_dir(s.home().join(".troupe/histories"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(histories.len(), 1, "one history file for the one project");
    let saved = std::fs::read_to_string(histories[0].path()).unwrap();
    assert!(saved.contains("rename the frobnicator"), "{saved}");
    // A new session in the same project finds it with Ctrl+R.
    let t = Term::start(&s, &[], &[], &[]);
    t.keys(&["C-r"]);
    t.tmux_literal("frob");
    t.wait_for("rename the frobnicator");
    t.keys(&["C-g", "C-u"]);
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
}

#[test]
fn project_commands_load_when_the_folder_is_trusted_by_skip_trust_or_troupe_trust() {
    let s = Scratch::new();
    s.write(
        ".gemini/commands/deploy.toml",
        "description = \"Deploy it\"\nprompt = \"Deploy now.\"\n",
    );
    s.write(".troupe/commands/ship.toml", "prompt = \"Ship it.\"\n");
    let shows_both = |t: &Term| {
        t.line("/help");
        let text = t.wait_for("Custom commands");
        assert!(
            text.contains("/deploy") && text.contains("Deploy it") && text.contains("/ship"),
            "{text}"
        );
        t.line("/quit");
        t.wait_for("[troupe exited 0]");
    };
    // Trusted for this run only.
    shows_both(&Term::start(&s, &[], &[], &["--skip-trust"]));
    // Trusted for good.
    let out = s.bare_command().arg("trust").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    shows_both(&Term::start(&s, &[], &[], &[]));
}
