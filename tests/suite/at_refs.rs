//! `@path` references in a `-p` prompt: the content block the model receives.

use base64::Engine as _;
use serde_json::{json, Value};

use crate::common::*;

fn first_user_parts(s: &Scratch) -> Vec<Value> {
    let requests = s.requests();
    let contents = requests[0]["contents"].as_array().unwrap();
    contents.last().unwrap()["parts"]
        .as_array()
        .unwrap()
        .clone()
}

fn texts(parts: &[Value]) -> Vec<String> {
    parts
        .iter()
        .map(|p| {
            p["text"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| p.to_string())
        })
        .collect()
}

#[test]
fn files_directories_and_globs_are_read_into_the_prompt() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    s.write("docs/one.md", "one\n");
    s.write("docs/two.md", "two\n");
    s.write("src/x.rs", "fn x() {}\n");
    s.write("src/y.py", "y = 1\n");
    let turns = [turn(vec![text("ok")])];
    let out = s.run(&turns, &["-p", "compare @a.txt with @docs and @src/*.rs"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let parts = texts(&first_user_parts(&s));
    assert_eq!(
        parts,
        vec![
            "compare @a.txt with @docs/** and @src/*.rs",
            "\n--- Content from referenced files ---",
            "\nContent from @a.txt:\n",
            "alpha",
            "\nContent from @docs/one.md:\n",
            "one",
            "\nContent from @docs/two.md:\n",
            "two",
            "\nContent from @src/x.rs:\n",
            "fn x() {}",
            "\n--- End of content ---",
        ]
    );
}

#[test]
fn ignored_outside_and_missing_references_are_not_read_and_images_go_inline() {
    let s = Scratch::new();
    std::fs::create_dir_all(s.ws().join(".git")).unwrap();
    s.write(".gitignore", "secret.txt\n");
    s.write("secret.txt", "hidden\n");
    std::fs::write(s.root().join("outside.txt"), "outside").unwrap();
    let png = base64::engine::general_purpose::STANDARD
        .decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
        .unwrap();
    std::fs::write(s.ws().join("pic.png"), &png).unwrap();
    let turns = [turn(vec![text("ok")])];
    let out = s.run(
        &turns,
        &[
            "-p",
            "see @secret.txt @../outside.txt @nothing.txt @pic.png",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let parts = first_user_parts(&s);
    let all = serde_json::to_string(&parts).unwrap();
    assert!(
        !all.contains("hidden") && !all.contains("\"outside\""),
        "{all}"
    );
    assert_eq!(
        parts[0]["text"],
        "see @secret.txt @../outside.txt @nothing.txt @pic.png"
    );
    assert_eq!(parts[1]["text"], "\n--- Content from referenced files ---");
    assert_eq!(parts[2]["inlineData"]["mimeType"], "image/png");
    assert_eq!(
        parts[2]["inlineData"]["data"],
        json!(base64::engine::general_purpose::STANDARD.encode(&png))
    );
    assert_eq!(parts[3]["text"], "\n--- End of content ---");
}

#[test]
fn a_prompt_without_references_goes_as_typed() {
    let s = Scratch::new();
    let turns = [turn(vec![text("ok")])];
    let out = s.run(&turns, &["-p", "mail me at me@example.com"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        texts(&first_user_parts(&s)),
        vec!["mail me at me@example.com"]
    );
}

#[test]
fn a_name_not_found_is_searched_for_as_gemini_cli_does() {
    let s = Scratch::new();
    s.write("src/deep/config_loader.rs", "fn load() {}\n");
    let turns = [turn(vec![text("ok")])];
    let out = s.run(&turns, &["-p", "explain @config_loader"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let parts = texts(&first_user_parts(&s));
    assert_eq!(
        parts,
        vec![
            "explain @src/deep/config_loader.rs",
            "\n--- Content from referenced files ---",
            "\nContent from @config_loader:\n",
            "fn load() {}",
            "\n--- End of content ---",
        ]
    );
}
