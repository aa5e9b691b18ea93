//! `-i/--prompt-interactive` and `--screen-reader` off a terminal: what they combine
//! with, and what headless output they leave alone.

use std::io::Write;
use std::process::Stdio;

use crate::common::*;

#[test]
fn prompt_interactive_conflicts_with_prompt_and_reads_on_from_piped_input() {
    let s = Scratch::new();
    let out = s.run(&[turn(vec![text("x")])], &["-p", "a", "-i", "b"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("--prompt") && err.contains("--prompt-interactive"),
        "{err}"
    );
    assert!(s.requests().is_empty());

    // Piped input: the prompt first, then each line read (gemini-cli refuses this).
    let script = s.script(&[turn(vec![text("One.")]), turn(vec![text("Two.")])]);
    let mut child = s
        .command()
        .arg("--fake-responses")
        .arg(script)
        .args(["-i", "the first"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"the second\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    let (one, two) = (shown.find("One.").unwrap(), shown.find("Two.").unwrap());
    assert!(one < two, "{shown}");
    let requests = s.requests();
    assert_eq!(requests.len(), 2);
    let last_user = |r: &serde_json::Value| {
        r["contents"].as_array().unwrap().last().unwrap()["parts"][0]["text"].clone()
    };
    assert_eq!(last_user(&requests[0]), "the first");
    assert_eq!(last_user(&requests[1]), "the second");
}

#[test]
fn screen_reader_leaves_headless_text_output_as_it_is() {
    let turns = [turn(vec![text("Line one.\nLine two.\n")])];
    let s = Scratch::new();
    let plain = s.run(&turns, &["-p", "hi"]);
    let s = Scratch::new();
    let read = s.run(&turns, &["--screen-reader", "-p", "hi"]);
    assert!(read.status.success(), "{}", stderr(&read));
    assert_eq!(read.stdout, plain.stdout);
    assert_eq!(
        String::from_utf8_lossy(&read.stdout),
        "Line one.\nLine two.\n"
    );
}
