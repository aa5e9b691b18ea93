//! Fifty megabytes of command output, seen through a real terminal: what reaches the
//! user's screen is bounded (the first 64 KiB, then the newest 16 KiB after a line
//! saying how much was left out), for the model's `run_shell_command` and for the
//! user's own `!` commands alike, and Troupe's memory stays bounded while it streams.

use std::path::Path;

use serde_json::json;

use super::term::Term;
use crate::common::*;

/// `seq 1 6000000` writes 47 MB.
const COMMAND: &str = "seq 1 6000000";
const LAST_LINE: &str = "6000000";

/// The most a capped command may put on the screen: 64 KiB + 16 KiB of output, each
/// line drawn with a short prefix, and the line saying what was left out.
const SCREEN_BOUND_BYTES: u64 = 400 * 1024;

/// Peak resident memory of `pid` (VmHWM), in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

fn screen_bytes(file: &Path) -> (u64, String) {
    let bytes = std::fs::read(file).unwrap_or_default();
    (
        bytes.len() as u64,
        String::from_utf8_lossy(&bytes).replace("\r\n", "\n"),
    )
}

#[test]
fn fifty_megabytes_of_output_reach_the_screen_capped_and_memory_stays_bounded() {
    let s = Scratch::new();
    let turns = [
        turn(vec![call("run_shell_command", json!({"command": COMMAND}))]),
        turn(vec![text("Counted.")]),
        turn(vec![text("Seen.")]),
    ];
    let t = Term::start(&s, &turns, &[], &["--approval-mode", "yolo"]);
    let pid = t.troupe_pid();
    let before_kib = peak_rss_kib(pid);

    // The model's command.
    let tool_screen = s.root().join("tool-screen.bin");
    t.record_output(Some(&tool_screen));
    t.line("count for me");
    t.wait_for("Counted.");
    t.wait_prompt();
    t.record_output(None);
    let (tool_bytes, tool_text) = screen_bytes(&tool_screen);
    assert!(
        tool_bytes < SCREEN_BOUND_BYTES,
        "{tool_bytes} bytes reached the screen"
    );
    assert!(tool_text.contains("│ 1\n"), "the head is shown");
    assert!(
        tool_text.contains("bytes of output not shown live; the tool's result holds the output]"),
        "{}",
        &tool_text[tool_text.len().saturating_sub(2000)..]
    );
    assert!(
        tool_text.contains(&format!("│ {LAST_LINE}")),
        "the tail is shown"
    );
    // The model got the documented excerpt naming the saved output, which ends with
    // the command's last line.
    let requests = s.requests();
    let response = function_responses(&requests[1])[0]["response"]["output"]
        .as_str()
        .expect("output")
        .to_string();
    assert!(
        response.contains("Output too large. Showing first 8,000 and last 32,000 characters. For full output see: "),
        "{}",
        &response[..300.min(response.len())]
    );
    let saved = response
        .split("For full output see: ")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .expect("saved file named");
    let saved = std::fs::read_to_string(saved).expect("saved output");
    assert!(saved.contains("Output truncated. The buffer is limited to 16 MB"));
    assert!(
        saved.contains(&format!("\n{LAST_LINE}\n")),
        "saved output ends"
    );

    // The user's own `!` command, the same way.
    let own_screen = s.root().join("own-screen.bin");
    t.record_output(Some(&own_screen));
    t.line(&format!("!{COMMAND}"));
    t.wait_for(&format!("\n{LAST_LINE}\n"));
    t.wait_prompt();
    t.record_output(None);
    let (own_bytes, own_text) = screen_bytes(&own_screen);
    assert!(
        own_bytes < SCREEN_BOUND_BYTES,
        "{own_bytes} bytes reached the screen"
    );
    assert!(own_text.contains("\n1\n2\n3\n"), "the head is shown");
    assert!(
        own_text.contains(
            "bytes of output not shown live; the conversation gets the first 10,000 characters]"
        ),
        "{}",
        &own_text[own_text.len().saturating_sub(2000)..]
    );
    // The conversation gets the command's first 10,000 characters, as gemini-cli's.
    t.line("what did I run?");
    t.wait_for("Seen.");
    let requests = s.requests();
    let contents = requests[2]["contents"].as_array().expect("contents");
    let ran = contents
        .iter()
        .filter_map(|c| c["parts"][0]["text"].as_str())
        .find(|t| t.starts_with("I ran the following shell command:"))
        .expect("the `!` command is in the conversation");
    assert!(ran.contains("```\n1\n2\n3\n4\n"), "{}", &ran[..200]);
    assert!(
        ran.contains("\n... (truncated)\n```"),
        "{}",
        &ran[ran.len() - 200..]
    );
    assert!(ran.len() < 11_000, "{} bytes", ran.len());

    // Streaming ~100 MB through took a bounded amount of memory: the tool's output
    // buffer (16 MiB, its text and result) and nothing proportional to the 47 MB.
    let peak_kib = peak_rss_kib(pid);
    assert!(
        peak_kib < before_kib + 200 * 1024,
        "peak RSS {peak_kib} KiB (at the prompt: {before_kib} KiB)"
    );
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
}
