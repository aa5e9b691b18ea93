//! What was approved is what lands: a file changed while its edit awaited approval is
//! shown again, with the new diff, before anything is written.

use serde_json::json;

use super::term::Term;
use super::EDIT_TOOL;
use crate::common::*;

#[test]
fn a_file_changed_after_approval_is_asked_again_with_the_new_diff() {
    let s = Scratch::new();
    s.write("a.txt", "line 1\nline 2\nold value\nline 4\n");
    let turns = [
        turn(vec![call(
            EDIT_TOOL,
            json!({"file_path": "a.txt", "instruction": "change the value", "old_string": "old value", "new_string": "new value"}),
        )]),
        turn(vec![text("Changed it.")]),
    ];
    let t = Term::start(&s, &turns, &[], &[]);
    t.line("change the value");
    t.wait_for("Allow once");
    // Another process changes the file while the user looks at the diff.
    std::fs::write(
        s.ws().join("a.txt"),
        "LINE ONE\nline 2\nold value\nline 4\n",
    )
    .expect("external change");
    t.keys(&["Enter"]);
    t.wait_for("here is the new diff");
    assert_eq!(
        s.read("a.txt"),
        "LINE ONE\nline 2\nold value\nline 4\n",
        "nothing written on the stale approval"
    );
    let shown = t.wait_for_count("Allow once", 2);
    assert!(shown.contains("LINE ONE"), "{shown}");
    t.keys(&["Enter"]);
    t.wait_for("Changed it.");
    t.wait_prompt();
    assert_eq!(s.read("a.txt"), "LINE ONE\nline 2\nnew value\nline 4\n");
}
