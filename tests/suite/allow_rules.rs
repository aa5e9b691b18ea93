//! "Always allow" rules saved in `approval.allowed` cover what their tool's keys mean:
//! for a path-keyed tool, the file itself or what lies beneath it as a directory, at a
//! path-component boundary, never a longer name that merely starts the same.

use serde_json::json;

use crate::common::*;

#[test]
fn saved_path_rules_cover_the_path_and_its_descendants_never_a_longer_name() {
    let s = Scratch::new();
    let ws = s.ws();
    let dir = s.home().join(".troupe");
    std::fs::create_dir_all(&dir).unwrap();
    let rule = |rel: &str| format!("write_file({})", ws.join(rel).display());
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "[approval]\nallowed = [{:?}, {:?}]\n",
            rule("notes"),
            rule("src")
        ),
    )
    .unwrap();
    let write = |rel: &str| call("write_file", json!({"file_path": rel, "content": "x\n"}));
    let turns = [
        turn(vec![
            write("notes"),
            write("notes secret.txt"),
            write("src/a.txt"),
            write("src2/b.txt"),
            write("srcx.txt"),
        ]),
        turn(vec![text("done")]),
    ];
    // Default mode, headless: what no rule covers is refused (nobody can be asked; the
    // exit status may say so).
    let out = s.run(&turns, &["-p", "write them"]);
    let requests = s.requests();
    assert_eq!(requests.len(), 2, "{}", stderr(&out));
    let responses = function_responses(&requests[1]);
    assert_eq!(responses.len(), 5, "{responses:#?}");
    let refused: Vec<bool> = responses
        .iter()
        .map(|r| r["response"]["error"].is_string())
        .collect();
    assert_eq!(
        refused,
        [false, true, false, true, true],
        "notes: exact; `notes secret.txt`: a longer name; src/a.txt: beneath src; src2, srcx: longer names\n{responses:#?}"
    );
    assert!(ws.join("notes").exists());
    assert!(ws.join("src/a.txt").exists());
    assert!(!ws.join("notes secret.txt").exists());
    assert!(!ws.join("src2").exists());
    assert!(!ws.join("srcx.txt").exists());
}
