//! What the README and docs/testing.md tell a newcomer to type works as they say: the
//! keyless `--fake-responses` example prints its answer, and the test command written
//! in docs/testing.md is the one `.ci/test` runs.

use crate::common::*;

const README: &str = include_str!("../../README.md");
const TESTING: &str = include_str!("../../docs/testing.md");
const CI_TEST: &str = include_str!("../../.ci/test");

#[test]
fn the_readmes_fake_responses_example_prints_its_answer() {
    let line = README
        .lines()
        .find(|l| l.starts_with("echo '") && l.ends_with("' > hello.jsonl"))
        .expect("the README has the `echo '…' > hello.jsonl` example");
    let script = &line["echo '".len()..line.len() - "' > hello.jsonl".len()];
    assert!(
        README
            .contains("troupe -p \"say hello\" --fake-responses hello.jsonl      # prints Hello."),
        "the README's command line changed: update this test"
    );
    let s = Scratch::new();
    s.write("hello.jsonl", &format!("{script}\n"));
    let out = s
        .bare_command()
        .args(["-p", "say hello", "--fake-responses", "hello.jsonl"])
        .output()
        .expect("run troupe");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Hello.\n");
}

#[test]
fn the_first_command_and_the_test_command_are_what_the_docs_say() {
    assert!(
        README.contains("cargo run -- demo "),
        "the README's first command is not `cargo run -- demo`"
    );
    let test_command = CI_TEST
        .lines()
        .find(|l| l.starts_with("cargo test "))
        .expect(".ci/test runs cargo test")
        .split(" 2>&1")
        .next()
        .unwrap_or_default();
    assert!(
        TESTING.contains(test_command),
        "docs/testing.md does not show `{test_command}`"
    );
}
