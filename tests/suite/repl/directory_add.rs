//! `/directory add PATH[,PATH…]`: a directory the user adds in the REPL becomes a
//! workspace root for every tool call after it (gemini-cli 0.61's command and
//! messages). Each line is typed once the prompt is drawn: rustyline asks the terminal
//! where the cursor is when a prompt starts and drops keys typed before its answer.

use serde_json::json;

use super::term::Term;
use crate::common::*;

#[test]
fn directory_add_widens_the_workspace_for_the_next_calls() {
    let s = Scratch::new();
    let root = s.root().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("sib")).unwrap();
    std::fs::write(root.join("sib/note.txt"), "sibling text\n").unwrap();
    std::fs::write(root.join("outside.txt"), "not added\n").unwrap();
    std::fs::write(root.join("afile"), "a file\n").unwrap();
    let read = |path: &str| call("read_file", json!({ "file_path": path }));
    let turns = [
        turn(vec![read("../sib/note.txt")]),
        turn(vec![text("Refused.")]),
        turn(vec![
            read("../sib/note.txt"),
            read("../outside.txt"),
            call(
                "run_shell_command",
                json!({"command": "cat ../sib/note.txt"}),
            ),
        ]),
        turn(vec![text("Read it.")]),
        turn(vec![
            call(
                "write_file",
                json!({"file_path": "../sib/new.txt", "content": "written\n"}),
            ),
            call("list_directory", json!({"dir_path": "../sib"})),
            call("glob", json!({"pattern": "**/note.txt"})),
            call(
                "grep_search",
                json!({"pattern": "sibling", "dir_path": "../sib"}),
            ),
            call("read_many_files", json!({"include": ["**/note.txt"]})),
        ]),
        turn(vec![text("All done.")]),
    ];
    let t = Term::start(&s, &turns, &[], &[]);
    t.line("read the sibling note");
    t.wait_for("Refused.");
    let refused = s.requests()[1].to_string();
    assert!(refused.contains("Path not in workspace"), "{refused}");
    assert!(!refused.contains("sibling text"), "{refused}");

    t.wait_prompt();
    t.line("/directory add");
    t.wait_for("Please provide at least one path to add.");
    t.wait_prompt();
    t.line("/directory add ../missing, ../afile");
    t.wait_for(&format!(
        "Error adding '../missing': Directory does not exist: {}",
        root.join("missing").display()
    ));
    t.wait_for(&format!(
        "Error adding '../afile': Path is not a directory: {}",
        root.join("afile").display()
    ));
    // Tab completes directories (not files) after `/directory add`.
    t.wait_prompt();
    t.tmux_literal("/directory add ../si");
    t.keys(&["Tab"]);
    t.wait_for("> /directory add ../sib/");
    t.keys(&["Enter"]);
    t.wait_for("Successfully added directories:\n- ../sib/");
    t.wait_prompt();
    t.line(&format!("/dir add {},.", root.join("sib").display()));
    t.wait_for(&format!(
        "The following directories are already in the workspace:\n- {}\n- .",
        root.join("sib").display()
    ));
    t.wait_prompt();
    t.line("/directory show");
    t.wait_for(&format!(
        "Current workspace directories:\n- {}\n- {}",
        s.ws().display(),
        root.join("sib").display()
    ));

    // The same call now succeeds; the shell's read-only check sees the new root (the
    // `cat` runs without asking); the refusal of a path still outside lists it.
    t.wait_prompt();
    t.line("read it again");
    t.wait_for("Read it.");
    let requests = s.requests();
    let told = requests[2].to_string();
    assert!(
        told.contains(&format!("  - {}", root.join("sib").display())),
        "the model is told the new directory list: {told}"
    );
    let answers = requests[3]["contents"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert_eq!(answers.matches("sibling text").count(), 2, "{answers}");
    assert!(
        answers.contains(&format!(
            "resolves outside the allowed workspace directories: {}, {}",
            s.ws().display(),
            root.join("sib").display()
        )),
        "{answers}"
    );
    assert!(!answers.contains("not added"), "{answers}");

    // Every file tool works in the added directory.
    t.wait_prompt();
    t.line("/approval-mode yolo");
    // The status line under the next prompt shows once the line editor reads keys.
    t.wait_for("responses.jsonl · yolo · ");
    t.line("use the sibling directory");
    t.wait_for("All done.");
    assert_eq!(
        std::fs::read_to_string(root.join("sib/new.txt")).unwrap(),
        "written\n"
    );
    let answers = s.requests()[5]["contents"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert!(!answers.contains("Path not in workspace"), "{answers}");
    assert!(
        answers.contains(&root.join("sib/note.txt").display().to_string()),
        "glob finds the file in the added root: {answers}"
    );
    assert!(answers.contains("note.txt"), "{answers}");
    assert_eq!(
        answers.matches("sibling text").count(),
        2,
        "grep_search and read_many_files read it: {answers}"
    );
    t.wait_prompt();
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
}
