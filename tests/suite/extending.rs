//! docs/extending.md's worked example is real: the page prints `src/tools/word_count.rs`
//! as it is (so the example is the code that compiles), and the tool it shows works end
//! to end from a scripted model, confined like every file tool.

use serde_json::json;

use crate::common::*;

const PAGE: &str = include_str!("../../docs/extending.md");
const SOURCE: &str = include_str!("../../src/tools/word_count.rs");

#[test]
fn the_page_prints_the_compiled_example_whole() {
    let block = PAGE
        .split("```rust\n")
        .map(|rest| rest.split("```\n").next().unwrap_or(""))
        .find(|code| code.contains("pub const NAME: &str = \"word_count\";"))
        .expect("docs/extending.md has no block with the word_count tool");
    assert_eq!(
        block, SOURCE,
        "docs/extending.md's example differs from src/tools/word_count.rs: copy the file into the page"
    );
    for line in [
        "pub mod word_count;",
        "registry.register(super::word_count::WordCount);",
    ] {
        assert!(PAGE.contains(line), "the page does not say `{line}`");
    }
}

#[test]
fn the_example_tool_counts_a_file_and_refuses_one_outside_or_missing() {
    let s = Scratch::new();
    std::fs::write(s.ws().join("poem.txt"), "one two three\nfour five\n").unwrap();
    std::fs::write(s.root().join("outside.txt"), "secret words\n").unwrap();
    let turns = [
        turn(vec![
            call("word_count", json!({"file_path": "poem.txt"})),
            call("word_count", json!({"file_path": "../outside.txt"})),
            call("word_count", json!({"file_path": "missing.txt"})),
        ]),
        turn(vec![text("counted")]),
    ];
    let out = s.run(&turns, &["-p", "count the words of poem.txt"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = s.requests();
    assert_eq!(requests.len(), 2, "{}", stderr(&out));
    let declared = requests[0]["tools"][0]["functionDeclarations"].to_string();
    assert!(declared.contains("\"word_count\""), "{declared}");
    let responses = function_responses(&requests[1]);
    assert_eq!(responses.len(), 3, "{responses:?}");
    assert_eq!(
        responses[0]["response"]["output"],
        "poem.txt: 2 lines, 5 words, 24 bytes"
    );
    for (i, what) in [(1, "outside"), (2, "missing")] {
        let error = responses[i]["response"]["error"].as_str().unwrap_or("");
        assert!(
            error.starts_with(&format!(
                "Cannot count {}",
                if i == 1 {
                    "../outside.txt"
                } else {
                    "missing.txt"
                }
            )),
            "the {what} file: {:?}",
            responses[i]
        );
    }
    assert!(
        !responses[1].to_string().contains("secret"),
        "{:?}",
        responses[1]
    );
}
