//! Tests run as the project says, and a question's prompt names only the tools offered
//! (issue 47): the test command a README (or Makefile, package.json, pyproject.toml,
//! Cargo.toml) states is told to the model in prompts about tests
//! (`model.find_test_command`); a turn that gets no tool that edits files gets a
//! system prompt that describes none.

use serde_json::Value;

use crate::common::*;

/// The text parts of the first user content of a Gemini request.
fn first_user_text(request: &Value) -> String {
    request["contents"][0]["parts"]
        .as_array()
        .map(|parts| {
            let texts = parts.iter().filter_map(|p| p["text"].as_str());
            texts.collect::<Vec<_>>().join("\n")
        })
        .unwrap_or_default()
}

fn system(request: &Value) -> String {
    request["systemInstruction"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn declared(request: &Value) -> Vec<String> {
    request["tools"][0]["functionDeclarations"]
        .as_array()
        .map(|d| {
            d.iter()
                .filter_map(|d| d["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

const NOTE: &str = "README.md says the tests run with `python3 -m pytest -q`";

#[test]
fn the_test_command_the_readme_states_is_told_in_prompts_about_tests() {
    let s = Scratch::new();
    s.write(
        "README.md",
        "# Shop\n\nRun the tests from the root with `python3 -m pytest -q`.\n",
    );
    s.write("pyproject.toml", "[tool.pytest.ini_options]\n");
    let run = |prompt: &str| {
        let out = s.run(
            &[turn(vec![text("ok")])],
            &["-p", prompt, "-c", "model.find_test_command=true"],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        first_user_text(s.requests().last().expect("a request"))
    };
    let about_tests = run("Run the tests and tell me how many pass");
    assert!(about_tests.contains(NOTE), "{about_tests}");
    let other = run("What does the README say?");
    assert!(!other.contains("the tests run with"), "{other}");

    // Off by default.
    let out = s.run(
        &[turn(vec![text("ok")])],
        &["-p", "Run the tests and tell me how many pass"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!first_user_text(s.requests().last().expect("a request")).contains(NOTE));
}

#[test]
fn a_question_gets_a_system_prompt_that_describes_only_the_tools_offered() {
    let s = Scratch::new();
    s.write("shop/pricing.py", "TAX_RATE = 0.2\n");
    // The search for TAX_RATE runs before the first answer: no call is required.
    let out = s.run(
        &[turn(vec![text("0.2")])],
        &["-p", "What is the value of TAX_RATE?", "--profile", "small"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let request = &s.requests()[0];
    let names = declared(request);
    assert!(
        !names.iter().any(|n| n == "replace" || n == "write_file"),
        "{names:?}"
    );
    let prompt = system(request);
    assert!(prompt.contains("read_file"), "{prompt}");
    for absent in ["replace", "write_file"] {
        assert!(!prompt.contains(absent), "{absent} described:\n{prompt}");
    }
}
