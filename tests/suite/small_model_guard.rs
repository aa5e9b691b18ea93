//! What keeps a small model on track and harmless (issue 31), each a setting on in the
//! small profile: the files a prompt names are read before the first answer; after a
//! call succeeds again unchanged the next answer may not call a tool; a turn ends,
//! saying why, at its time limit; and an edit that removes a definition still in use
//! (a small model asked for a docstring renamed `format_price`) is refused.

use serde_json::{json, Value};

use crate::common::*;

const FORMATTING: &str = "def format_price(value):\n    return f\"{value:.2f} EUR\"\n";
const REPORT: &str =
    "from shop.formatting import format_price\n\n\ndef receipt(total):\n    return format_price(total)\n";

fn shop() -> Scratch {
    let s = Scratch::new();
    s.write("shop/__init__.py", "");
    s.write("shop/formatting.py", FORMATTING);
    s.write("shop/report.py", REPORT);
    s
}

/// The `mode` of a request's toolConfig, if it has one.
fn tool_mode(request: &Value) -> Option<String> {
    request["toolConfig"]["functionCallingConfig"]["mode"]
        .as_str()
        .map(str::to_string)
}

#[test]
fn the_files_a_prompt_names_are_read_before_the_first_answer() {
    let s = shop();
    let out = s.run(
        &[turn(vec![text("It formats a price.")])],
        &[
            "-p",
            "Explain `shop/formatting.py`, and what report.py does.",
            "--profile",
            "small",
            "-o",
            "stream-json",
        ],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let requests = s.requests();
    assert_eq!(requests.len(), 1, "the reads are not model answers");
    let contents = requests[0]["contents"].as_array().expect("contents");
    assert_eq!(contents.len(), 3, "{contents:?}");
    let asked: Vec<&Value> = contents[1]["parts"]
        .as_array()
        .expect("parts")
        .iter()
        .map(|p| &p["functionCall"]["args"]["file_path"])
        .collect();
    assert_eq!(
        asked,
        [&json!("shop/formatting.py"), &json!("shop/report.py")]
    );
    let outputs: Vec<String> = function_responses(&requests[0])
        .iter()
        .map(|r| {
            r["response"]["output"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(outputs, [FORMATTING, REPORT]);
    // The reads are real tool calls: the stream shows them.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let uses = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "tool_use" && e["tool_name"] == "read_file")
        .count();
    assert_eq!(uses, 2, "{stdout}");

    // Off by default: the prompt goes alone.
    std::fs::remove_file(s.requests_path()).expect("clear the log");
    let out = s.run(
        &[turn(vec![text("ok")])],
        &["-p", "Explain shop/formatting.py"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(
        s.requests()[0]["contents"].as_array().map(Vec::len),
        Some(1)
    );
}

#[test]
fn a_prompt_that_names_no_file_has_its_code_names_searched_for_first() {
    let s = shop();
    s.write("shop/constants.py", "TAX_RATE = 0.2\n");
    let out = s.run(
        &[turn(vec![text("0.2")])],
        &[
            "-p",
            "What is the value of TAX_RATE in this project?",
            "--profile",
            "small",
        ],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let requests = s.requests();
    assert_eq!(requests.len(), 1);
    let asked = &requests[0]["contents"][1]["parts"][0]["functionCall"];
    assert_eq!(asked["name"], "grep_search", "{asked}");
    let found = function_responses(&requests[0])[0]["response"]["output"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        found.contains("shop/constants.py") && found.contains("TAX_RATE = 0.2"),
        "{found}"
    );
}

#[test]
fn after_a_call_succeeds_again_unchanged_the_next_answer_may_not_call_a_tool() {
    let s = shop();
    let list = || call("list_directory", json!({"dir_path": "shop"}));
    let out = s.run(
        &[
            turn(vec![list()]),
            turn(vec![list()]),
            turn(vec![text("formatting.py and report.py")]),
        ],
        &[
            "-p",
            "List the shop folder",
            "-c",
            "model.answer_after_repeat=true",
        ],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let requests = s.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(tool_mode(&requests[0]), None);
    assert_eq!(tool_mode(&requests[1]), None, "one success is no repeat");
    assert_eq!(tool_mode(&requests[2]).as_deref(), Some("NONE"));
    // The tools stay declared: the history's calls refer to them.
    assert!(requests[2]["tools"].is_array());
    // The model is told to answer from what it has (not in the history: one request).
    let last = requests[2]["contents"]
        .as_array()
        .and_then(|c| c.last())
        .cloned();
    let told = last.map(|c| c.to_string()).unwrap_or_default();
    assert!(
        told.contains("answer the user's request in plain words"),
        "{told}"
    );
    assert!(!requests[1].to_string().contains("in plain words"));

    // Off (the default profile): the model chooses freely.
    std::fs::remove_file(s.requests_path()).expect("clear the log");
    let out = s.run(
        &[
            turn(vec![list()]),
            turn(vec![list()]),
            turn(vec![text("ok")]),
        ],
        &["-p", "List the shop folder"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(s.requests().iter().all(|r| tool_mode(r).is_none()));
}

#[test]
fn a_turn_that_runs_past_its_time_limit_ends_as_a_failure_that_says_so() {
    let s = Scratch::new();
    let (value, out) = s.run_json(
        &[
            turn(vec![call(
                "run_shell_command",
                json!({"command": "sleep 60"}),
            )]),
            turn(vec![text("never asked")]),
        ],
        &["-p", "wait", "--yolo", "-c", "model.turn_time_limit_secs=2"],
    );
    assert!(!out.status.success(), "stdout: {value}");
    let message = value["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("time limit of 2 s") && message.contains("model.turn_time_limit_secs"),
        "{value}"
    );
    assert_eq!(s.requests().len(), 1, "the model is not asked again");
}

#[test]
fn an_edit_that_removes_a_definition_still_in_use_is_refused() {
    let s = shop();
    let rename = call(
        "replace",
        json!({
            "file_path": "shop/formatting.py",
            "old_string": "def format_price(value):",
            "new_string": "def format_amount(value):",
        }),
    );
    let docstring = call(
        "replace",
        json!({
            "file_path": "shop/formatting.py",
            "old_string": "def format_price(value):\n",
            "new_string": "def format_price(value):\n    \"\"\"Format a price in euros.\"\"\"\n",
        }),
    );
    let guarded = [
        "-p",
        "Document format_price",
        "--yolo",
        "-c",
        "edit.keep_used_definitions=true",
    ];
    let out = s.run(
        &[
            turn(vec![rename.clone()]),
            turn(vec![docstring]),
            turn(vec![text("done")]),
        ],
        &guarded,
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let requests = s.requests();
    let refused = &function_responses(&requests[1])[0]["response"];
    let error = refused["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("remove the definition of `format_price`")
            && error.contains("still used in shop/report.py"),
        "{refused}"
    );
    // The rename did not land; the docstring did.
    assert!(s
        .read("shop/formatting.py")
        .contains("def format_price(value):\n    \"\"\"Format"));

    // A rename within the file, with no other use, is the model's to make.
    let lone = Scratch::new();
    lone.write("tool.py", "def helper():\n    return 1\n");
    let out = lone.run(
        &[
            turn(vec![call(
                "replace",
                json!({"file_path": "tool.py", "old_string": "def helper", "new_string": "def assist"}),
            )]),
            turn(vec![text("done")]),
        ],
        &guarded,
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(lone.read("tool.py"), "def assist():\n    return 1\n");

    // Off (the default profile): the rename goes through.
    let open = shop();
    let out = open.run(
        &[turn(vec![rename]), turn(vec![text("done")])],
        &["-p", "Rename", "--yolo"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(open
        .read("shop/formatting.py")
        .starts_with("def format_amount"));
}

#[test]
fn a_failed_turn_puts_back_the_files_it_edited_and_says_so() {
    let script = || {
        [
            turn(vec![call(
                "replace",
                json!({
                    "file_path": "shop/formatting.py",
                    "old_string": "EUR",
                    "new_string": "USD",
                }),
            )]),
            turn(vec![call(
                "write_file",
                json!({"file_path": "NOTES.md", "content": "notes\n"}),
            )]),
            turn(vec![call(
                "run_shell_command",
                json!({"command": "sleep 60"}),
            )]),
            turn(vec![text("never asked")]),
        ]
    };
    let s = shop();
    let (value, out) = s.run_json(
        &script(),
        &[
            "-p",
            "Switch to dollars",
            "--yolo",
            "-c",
            "model.turn_time_limit_secs=3",
            "-c",
            "model.undo_failed_turn=true",
        ],
    );
    assert!(!out.status.success(), "{value}");
    let message = value["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("time limit")
            && message.contains("its edits were undone (shop/formatting.py)"),
        "{value}"
    );
    assert!(
        message.contains("NOTES.md"),
        "the created file is named as left: {value}"
    );
    assert_eq!(s.read("shop/formatting.py"), FORMATTING);
    assert_eq!(
        s.read("NOTES.md"),
        "notes\n",
        "a file the turn created is left"
    );

    // Off (the default profile): the edit stays.
    let kept = shop();
    let (value, _) = kept.run_json(
        &script(),
        &[
            "-p",
            "Switch to dollars",
            "--yolo",
            "-c",
            "model.turn_time_limit_secs=3",
        ],
    );
    assert!(
        !value["error"]["message"].to_string().contains("undone"),
        "{value}"
    );
    assert!(kept.read("shop/formatting.py").contains("USD"));
}

/// The names of the tools a request declares.
fn declared(request: &Value) -> Vec<String> {
    request["tools"][0]["functionDeclarations"]
        .as_array()
        .map(|d| {
            d.iter()
                .filter_map(|t| t["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_prompt_that_asks_for_no_change_gets_no_tool_that_edits_files() {
    let s = shop();
    let args = |prompt: &'static str| ["-p", prompt, "-c", "model.edit_tools_when_asked=true"];
    let out = s.run(
        &[turn(vec![text("0.2")])],
        &args("What is the value of TAX_RATE in this project?"),
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let tools = declared(&s.requests()[0]);
    assert!(tools.contains(&"read_file".to_string()), "{tools:?}");
    assert!(
        !tools.contains(&"write_file".to_string()) && !tools.contains(&"replace".to_string()),
        "{tools:?}"
    );

    // Asked for a change, the same session offers them.
    std::fs::remove_file(s.requests_path()).expect("clear the log");
    let out = s.run(
        &[turn(vec![text("ok")])],
        &args("Fix the rounding in shop/formatting.py"),
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let tools = declared(&s.requests()[0]);
    assert!(
        tools.contains(&"write_file".to_string()) && tools.contains(&"replace".to_string()),
        "{tools:?}"
    );

    // Off (the default profile): always offered.
    std::fs::remove_file(s.requests_path()).expect("clear the log");
    let out = s.run(&[turn(vec![text("ok")])], &["-p", "What is TAX_RATE?"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(declared(&s.requests()[0]).contains(&"write_file".to_string()));
}

#[test]
fn after_a_call_fails_a_third_time_the_next_answer_may_not_call_a_tool() {
    let s = shop();
    let missing = || call("read_file", json!({"file_path": "shop/gone.py"}));
    let out = s.run(
        &[
            turn(vec![missing()]),
            turn(vec![missing()]),
            turn(vec![missing()]),
            turn(vec![text("There is no shop/gone.py.")]),
        ],
        &[
            "-p",
            "Read shop/gone.py",
            "-c",
            "model.answer_after_repeat=true",
        ],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let requests = s.requests();
    assert_eq!(requests.len(), 4);
    let modes: Vec<Option<String>> = requests.iter().map(tool_mode).collect();
    assert_eq!(modes, [None, None, None, Some("NONE".to_string())]);
}
