//! `run_shell_command` and the background-process tools.

use serde_json::{json, Value};

use crate::common::processes::survivors;
use crate::common::*;

fn output_of(response: &Value) -> String {
    response["response"]["output"]
        .as_str()
        .unwrap_or_else(|| panic!("no output in {response}"))
        .to_string()
}

fn number_after(text: &str, label: &str) -> i32 {
    let start = text
        .find(label)
        .unwrap_or_else(|| panic!("{label} not in {text}"))
        + label.len();
    text[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("no number after {label} in {text}"))
}

#[test]
fn output_exit_code_and_stderr_reach_the_model() {
    let s = Scratch::new();
    s.write("data.txt", "alpha\n");
    let turns = [
        turn(vec![call(
            "run_shell_command",
            json!({"command": "cat data.txt; echo oops >&2; exit 3", "description": "fail on purpose"}),
        )]),
        turn(vec![text("saw it")]),
    ];
    let (out, proc) = s.run_json(&turns, &["-p", "go", "--yolo"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    assert_eq!(out["response"], "saw it");
    let r = &function_responses(&s.requests()[1])[0];
    assert!(r["response"].get("error").is_none(), "{r}");
    let output = output_of(r);
    let pgid = number_after(&output, "Process Group PGID: ");
    assert_eq!(
        output,
        format!(
            "<untrusted_context>\nOutput: alpha\noops\nExit Code: 3\nProcess Group PGID: {pgid}\n</untrusted_context>"
        )
    );
    assert_eq!(out["stats"]["tools"]["totalSuccess"], 1);
}

#[test]
fn commands_run_in_dir_path_and_refuse_dirs_outside() {
    let s = Scratch::new();
    s.write("sub/marker.txt", "here\n");
    let turns = [
        turn(vec![
            call(
                "run_shell_command",
                json!({"command": "ls && pwd", "dir_path": "sub"}),
            ),
            call(
                "run_shell_command",
                json!({"command": "ls", "dir_path": ".."}),
            ),
            call("run_shell_command", json!({"command": "   "})),
        ]),
        turn(vec![text("done")]),
    ];
    let (_, proc) = s.run_json(&turns, &["-p", "go", "--yolo"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let r = function_responses(&s.requests()[1]);
    let ws = s.ws();
    assert!(output_of(&r[0]).starts_with(&format!(
        "<untrusted_context>\nOutput: marker.txt\n{}/sub\n",
        ws.display()
    )));
    let err = r[1]["response"]["error"].as_str().unwrap();
    assert!(err.starts_with("Path not in workspace"), "{err}");
    assert_eq!(r[2]["response"]["error"], "Command cannot be empty.");
}

#[test]
fn known_safe_commands_run_without_asking_and_others_ask() {
    let s = Scratch::new();
    s.write("a.txt", "x\n");
    let turns = [
        turn(vec![
            call("run_shell_command", json!({"command": "ls | wc -l"})),
            call("run_shell_command", json!({"command": "touch made.txt"})),
            call("run_shell_command", json!({"command": "ls > listing.txt"})),
        ]),
        turn(vec![text("done")]),
    ];
    let (_, proc) = s.run_json(&turns, &["-p", "go"]);
    // A refused call ends the run with 54.
    assert_eq!(proc.status.code(), Some(54), "{}", stderr(&proc));
    let r = function_responses(&s.requests()[1]);
    assert!(output_of(&r[0]).contains("Output: 1\n"), "{}", r[0]);
    for denied in &r[1..] {
        let err = denied["response"]["error"].as_str().unwrap();
        assert!(err.contains("needs the user's approval"), "{err}");
    }
    assert!(!s.ws().join("made.txt").exists());
    assert!(!s.ws().join("listing.txt").exists());
}

#[test]
fn command_substitution_is_blocked_before_running() {
    let s = Scratch::new();
    let turns = [
        turn(vec![
            call(
                "run_shell_command",
                json!({"command": "echo $(touch pwned1)"}),
            ),
            call(
                "run_shell_command",
                json!({"command": "echo `touch pwned2`"}),
            ),
            call(
                "run_shell_command",
                json!({"command": "cat <(touch pwned3)"}),
            ),
            call(
                "run_shell_command",
                json!({"command": "bash -c 'echo \"$(touch pwned4)\"'"}),
            ),
            call("run_shell_command", json!({"command": "echo '$(not run)'"})),
        ]),
        turn(vec![text("done")]),
    ];
    let (_, proc) = s.run_json(&turns, &["-p", "go", "--yolo"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let r = function_responses(&s.requests()[1]);
    for blocked in &r[..4] {
        assert_eq!(
            output_of(blocked),
            "Command injection detected: command substitution syntax ($(), backticks, <() or >()) found in command arguments. On PowerShell, @() array subexpressions and $() subexpressions are also blocked. This is a security risk and the command was blocked."
        );
    }
    assert!(output_of(&r[4]).contains("Output: $(not run)"), "{}", r[4]);
    for i in 1..=4 {
        assert!(!s.ws().join(format!("pwned{i}")).exists());
    }
}

#[test]
fn a_silent_command_is_killed_with_its_children_at_the_timeout() {
    let s = Scratch::new();
    let command = "echo pgid=$$; sleep 317.25 & sleep 318.25; echo never";
    let turns = [
        turn(vec![call("run_shell_command", json!({"command": command}))]),
        turn(vec![text("timed out")]),
    ];
    let (_, proc) = s.run_json(
        &turns,
        &[
            "-p",
            "go",
            "--yolo",
            "-c",
            "shell.inactivity_timeout_secs=1",
        ],
    );
    assert!(proc.status.success(), "{}", stderr(&proc));
    let r = &function_responses(&s.requests()[1])[0];
    let output = output_of(r);
    assert!(
        output.starts_with("<untrusted_context>\nCommand was automatically cancelled because it exceeded the timeout of 0.0 minutes without output. Below is the output before it was cancelled:\npgid="),
        "{output}"
    );
    assert!(!output.contains("never"));
    let pgid = number_after(&output, "pgid=");
    let left = survivors(Some(pgid), "sleep 31");
    assert!(left.is_empty(), "processes survived the timeout: {left:?}");
}

#[test]
fn large_output_is_cut_and_saved_whole() {
    let s = Scratch::new();
    let turns = [
        turn(vec![call(
            "run_shell_command",
            json!({"command": "seq 1 5000"}),
        )]),
        turn(vec![text("big")]),
    ];
    let (_, proc) = s.run_json(
        &turns,
        &["-p", "go", "--yolo", "-c", "shell.output_limit_chars=500"],
    );
    assert!(proc.status.success(), "{}", stderr(&proc));
    let output = output_of(&function_responses(&s.requests()[1])[0]);
    let prefix =
        "Output too large. Showing first 100 and last 400 characters. For full output see: ";
    assert!(output.starts_with(prefix), "{output}");
    let path = output[prefix.len()..].lines().next().unwrap();
    assert!(path.starts_with(s.home().to_str().unwrap()), "{path}");
    assert!(path.ends_with(".txt"), "{path}");
    let saved = std::fs::read_to_string(path).expect("saved output");
    assert!(saved.contains("\n2500\n") && saved.contains("\n5000\n"));
    assert!(output.contains("<untrusted_context>\nOutput: 1\n2\n3\n"));
    assert!(output.contains("characters omitted] ..."));
    assert!(output.ends_with("</untrusted_context>"));
    assert!(!output.contains("\n2500\n"));
}

#[test]
fn a_background_server_is_listed_and_killed_when_the_session_ends() {
    let s = Scratch::new();
    let command = "echo server-ready; exec sleep 319.75";
    let turns = [
        turn(vec![call(
            "run_shell_command",
            json!({"command": command, "is_background": true, "delay_ms": 1500}),
        )]),
        turn(vec![call("list_background_processes", json!({}))]),
        turn(vec![text("started")]),
    ];
    let (_, proc) = s.run_json(&turns, &["-p", "go", "--yolo"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let requests = s.requests();
    let started = output_of(&function_responses(&requests[1])[0]);
    let pid = number_after(&started, "PID: ");
    assert_eq!(
        started,
        format!("<untrusted_context>\nCommand is running in background. PID: {pid}. Initial output:\nserver-ready\n</untrusted_context>")
    );
    let listed = output_of(&function_responses(&requests[2])[0]);
    assert_eq!(listed, format!("- [PID {pid}] RUNNING: `{command}`"));
    let left = survivors(Some(pid), "sleep 319.75");
    assert!(
        left.is_empty(),
        "background server outlived the session: {left:?}"
    );
}

#[test]
fn jobs_left_running_are_reported_and_killed_when_the_session_ends() {
    let s = Scratch::new();
    let turns = [
        turn(vec![call(
            "run_shell_command",
            json!({"command": "sleep 323.5 & echo started"}),
        )]),
        turn(vec![text("left it")]),
    ];
    let (_, proc) = s.run_json(&turns, &["-p", "go", "--yolo"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let output = output_of(&function_responses(&s.requests()[1])[0]);
    let pgid = number_after(&output, "Process Group PGID: ");
    let job = number_after(&output, "Background PIDs: ");
    assert_eq!(
        output,
        format!("<untrusted_context>\nOutput: started\nBackground PIDs: {job}\nProcess Group PGID: {pgid}\n</untrusted_context>")
    );
    let left = survivors(Some(pgid), "sleep 323.5");
    assert!(left.is_empty(), "a job outlived the session: {left:?}");
}
