//! Session commands in the terminal: `/chat save` + `/chat resume`, `/rewind`, `/resume`
//! and `/restore` after a checkpointed edit.

use serde_json::{json, Value};

use super::term::Term;
use crate::common::*;

/// The user texts of a request's history, in order.
fn user_texts(request: &Value) -> Vec<String> {
    request["contents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["role"] == "user")
        .flat_map(|c| c["parts"].as_array().unwrap().iter())
        .filter_map(|p| p["text"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn chat_save_and_resume_and_rewind() {
    let s = Scratch::new();
    let turns = [
        turn(vec![text("First answer.")]),
        turn(vec![text("Second answer.")]),
        turn(vec![text("After resume.")]),
        turn(vec![text("After rewind.")]),
    ];
    let t = Term::start(&s, &turns, &[], &[]);
    t.line("first question");
    t.wait_for("First answer.");
    t.wait_prompt();
    t.line("/chat save my tag");
    t.wait_for("Conversation checkpoint saved with tag: my tag.");
    assert!(s
        .home()
        .join(".troupe/tmp/ws/checkpoint-my%20tag.json")
        .is_file());
    t.line("/chat list");
    t.wait_for("Note: Newest last, oldest first");
    assert!(t.text().contains("  - my tag ("), "{}", t.text());
    t.line("second question");
    t.wait_for("Second answer.");
    t.wait_prompt();
    t.line("/chat resume my tag");
    t.wait_for("Resumed the conversation saved as my tag (2 turns).");
    t.line("third question");
    t.wait_for("After resume.");
    t.wait_prompt();
    assert_eq!(
        user_texts(&s.requests()[2]),
        ["first question", "third question"],
        "the second exchange is gone"
    );
    t.line("/rewind");
    t.wait_for("/rewind N drops prompt N");
    assert!(t.text().contains("  2. third question"), "{}", t.text());
    t.line("/rewind 2");
    t.wait_for("Rewound to before: third question");
    t.line("fourth question");
    t.wait_for("After rewind.");
    t.wait_prompt();
    assert_eq!(
        user_texts(&s.requests()[3]),
        ["first question", "fourth question"]
    );
    t.line("/chat delete my tag");
    t.wait_for("Conversation checkpoint 'my tag' has been deleted.");
    t.line("/chat resume my tag");
    t.wait_for("No saved checkpoint found with tag: my tag.");
    t.line("/quit");
    t.wait_for("[troupe exited 0]");

    // The session file holds the rewound conversation: resumed, the model sees it.
    let out = s.run(
        &[turn(vec![text("ok")])],
        &["--resume", "latest", "-p", "fifth question"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let last = s.requests().pop().unwrap();
    assert_eq!(
        user_texts(&last),
        ["first question", "fourth question", "fifth question"]
    );
}

#[test]
fn resume_picks_a_session_from_the_list() {
    let s = Scratch::new();
    let out = s.run(
        &[turn(vec![text("Old answer.")])],
        &["-p", "an old question"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let turns = [turn(vec![text("Continued.")])];
    let t = Term::start(&s, &turns, &[], &[]);
    t.line("/resume");
    t.wait_for("Esc to stay in this session");
    t.wait_for("1. an old question (Just now) [");
    t.keys(&["Escape"]);
    t.wait_for("/resume N continues session N.");
    t.line("/resume 1");
    t.wait_for("Resumed session ");
    t.line("and now?");
    t.wait_for("Continued.");
    t.wait_prompt();
    let last = s.requests().pop().unwrap();
    assert_eq!(user_texts(&last), ["an old question", "and now?"]);
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
}

#[test]
fn restore_puts_files_and_conversation_back_without_rerunning_the_edit() {
    let s = Scratch::new();
    s.write("a.txt", "old value\n");
    let turns = [
        turn(vec![call(
            "write_file",
            json!({"file_path": "a.txt", "content": "new value\n"}),
        )]),
        turn(vec![text("Written.")]),
        turn(vec![text("Back to before.")]),
    ];
    let t = Term::start(&s, &turns, &[], &["--checkpointing"]);
    t.line("/restore");
    t.wait_for("No restorable tool calls found.");
    t.line("rewrite a.txt");
    t.wait_for("Allow once");
    t.keys(&["Enter"]);
    t.wait_for("Written.");
    t.wait_prompt();
    assert_eq!(s.read("a.txt"), "new value\n");
    s.write("later.txt", "made after the edit\n");
    t.line("/restore");
    t.wait_for("Available tool calls to restore:");
    let name = t
        .text()
        .lines()
        .find(|l| l.ends_with("-a.txt-write_file"))
        .unwrap_or_else(|| panic!("no checkpoint listed:\n{}", t.text()))
        .trim()
        .to_string();
    t.line(&format!("/restore {name}"));
    t.wait_for("Restored project to the state before the tool call.");
    t.wait_prompt();
    assert_eq!(s.read("a.txt"), "old value\n", "the file is back");
    assert!(!s.ws().join("later.txt").exists());
    t.line("what now?");
    t.wait_for("Back to before.");
    t.wait_prompt();
    assert_eq!(s.read("a.txt"), "old value\n", "the edit did not run again");
    let last = s.requests().pop().unwrap();
    let responses: Vec<Value> = last["contents"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["parts"].as_array().unwrap().iter())
        .filter_map(|p| p.get("functionResponse").cloned())
        .collect();
    assert_eq!(responses.len(), 1, "{last:#}");
    assert!(responses[0]["response"]["error"]
        .as_str()
        .unwrap()
        .contains("the call was not run"));
    assert!(
        !s.ws().join(".git").exists(),
        "the project gets no .git of its own"
    );
    assert!(s.home().join(".troupe/history/ws/.git").is_dir());
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
    // Checkpoints outlive the process (gemini-cli deletes them at start).
    let t = Term::start(&s, &[], &[], &["--checkpointing"]);
    t.line("/restore");
    t.wait_for(&name);
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
}
