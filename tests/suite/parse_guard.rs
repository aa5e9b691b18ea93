//! The parse check of edits (`edit.check_syntax`): a `replace` or `write_file` that
//! would turn a file that parses into one that does not is refused with the syntax
//! error, and the file stays as it was; and `replace`'s not-found hint, which names the
//! closest region and the `read_file` call that shows it again. The binary runs on a
//! scratch workspace with a scripted model.

use serde_json::{json, Value};

use crate::common::*;

const APP: &str = "def net_price(gross):\n    return gross / 1.2\n\n\ndef gross_price(net):\n    return round(net * 1.2, 2)\n";

/// The `response` objects of the function responses sent in request `request`.
fn responses(s: &Scratch, request: usize) -> Vec<Value> {
    let requests = s.requests();
    function_responses(&requests[request])
        .iter()
        .map(|r| r["response"].clone())
        .collect()
}

fn replace(path: &str, old: &str, new: &str) -> Value {
    call(
        "replace",
        json!({"file_path": path, "instruction": "x", "old_string": old, "new_string": new}),
    )
}

/// Runs one turn of `calls` then a closing text, in yolo mode, with `extra` flags.
fn run_calls(s: &Scratch, calls: Vec<Value>, extra: &[&str]) -> Vec<Value> {
    let turns = [turn(calls), turn(vec![text("Done.")])];
    let mut args = vec!["-p", "edit", "--approval-mode", "yolo"];
    args.extend_from_slice(extra);
    let (_, proc) = s.run_json(&turns, &args);
    assert!(proc.status.success(), "stderr: {}", stderr(&proc));
    responses(s, 1)
}

/// The error of a refused edit, checked for the parts every refusal has.
fn refusal(response: &Value, path: &str, language: &str) -> String {
    let error = response["error"]
        .as_str()
        .unwrap_or_else(|| panic!("not refused: {response}"))
        .to_string();
    let head =
        format!("The edit would leave {path} unparseable as {language}: syntax error at line ");
    assert!(error.starts_with(&head), "{error}");
    assert!(error.contains("; the file was not changed."), "{error}");
    error
}

#[test]
fn a_replace_that_breaks_a_python_file_is_refused_with_the_parse_error() {
    let s = Scratch::new();
    s.write("src/app.py", APP);
    let got = run_calls(
        &s,
        vec![replace(
            "src/app.py",
            "    return round(net * 1.2, 2)",
            "    return round(net * 1.2, 2",
        )],
        &[],
    );
    let error = refusal(&got[0], "src/app.py", "Python");
    assert!(
        error.starts_with("The edit would leave src/app.py unparseable as Python: syntax error at line 6, column 17 (\"(\" is never closed); the file was not changed.\n     6 |     return round(net * 1.2, 2\n"),
        "{error}"
    );
    assert!(
        error.contains(
            "Correct `new_string` so that the file still parses, and call replace again."
        ),
        "{error}"
    );
    assert_eq!(s.read("src/app.py"), APP);
}

#[test]
fn a_line_break_inside_a_one_line_python_string_is_refused() {
    // What a small model's `'\n'.join(lines)` became through JSON: a real line break
    // inside the quotes, which tree-sitter's grammar accepts and Python does not.
    let s = Scratch::new();
    s.write(
        "report.py",
        "def receipt(lines):\n    return '\\n'.join(lines)\n",
    );
    let got = run_calls(
        &s,
        vec![call(
            "write_file",
            json!({"file_path": "report.py", "content": "def receipt(lines):\n    return '\n'.join(lines)\n"}),
        )],
        &[],
    );
    let error = refusal(&got[0], "report.py", "Python");
    assert!(
        error.contains("line 2, column 12 (a line break inside a one-line string)"),
        "{error}"
    );
    assert_eq!(
        s.read("report.py"),
        "def receipt(lines):\n    return '\\n'.join(lines)\n"
    );
}

#[test]
fn a_replace_that_leaves_a_python_block_empty_is_refused() {
    // Qwen2.5-Coder-1.5B on Exercism's leap: `pass` replaced by a whole new `def`, so
    // the outer function has no indented body. tree-sitter's grammar accepts it;
    // Python stops with "expected an indented block".
    let s = Scratch::new();
    s.write("leap.py", "def leap_year(year):\n    pass\n");
    let got = run_calls(
        &s,
        vec![replace(
            "leap.py",
            "pass",
            "def leap_year(year):\n    if year % 4 == 0:\n        return True\n    return False",
        )],
        &[],
    );
    let error = refusal(&got[0], "leap.py", "Python");
    assert!(
        error.contains("line 2, column 5 (expected an indented block after this line)"),
        "{error}"
    );
    assert_eq!(s.read("leap.py"), "def leap_year(year):\n    pass\n");
}

#[test]
fn replaces_that_break_json_toml_yaml_rust_javascript_and_go_are_refused() {
    let cases = [
        (
            "package.json",
            "JSON",
            "{\n  \"name\": \"app\",\n  \"version\": \"1.0\"\n}\n",
            "\"name\": \"app\",",
            "\"name\": \"app\"",
        ),
        (
            "Cargo.toml",
            "TOML",
            "[package]\nname = \"app\"\nversion = \"1.0\"\n",
            "name = \"app\"",
            "name = \"app",
        ),
        (
            "config.yaml",
            "YAML",
            "server:\n  port: 80\n  hosts: [a, b]\n",
            "hosts: [a, b]",
            "hosts: [a, b",
        ),
        (
            "src/main.rs",
            "Rust",
            "fn main() {\n    let x = 1;\n    println!(\"{}\", x);\n}\n",
            "let x = 1;",
            "let x = (1;",
        ),
        (
            "index.js",
            "JavaScript",
            "const xs = [1, 2];\nconsole.log(xs);\n",
            "const xs = [1, 2];",
            "const xs = [1, 2;",
        ),
        (
            "main.go",
            "Go",
            "package main\n\nfunc main() {\n\tx := 1\n\t_ = x\n}\n",
            "x := 1",
            "x := (1",
        ),
    ];
    for (path, language, original, old, new) in cases {
        let s = Scratch::new();
        s.write(path, original);
        let got = run_calls(&s, vec![replace(path, old, new)], &[]);
        refusal(&got[0], path, language);
        assert_eq!(s.read(path), original, "{path}");
    }
}

#[test]
fn a_file_that_did_not_parse_before_may_stay_broken_while_a_parsing_one_is_kept() {
    let s = Scratch::new();
    let broken = "def f(:\n    return 1\n";
    s.write("broken.py", broken);
    s.write("app.py", APP);
    let got = run_calls(
        &s,
        vec![
            replace("broken.py", "return 1", "return (2"),
            replace("app.py", "def gross_price(net):", "def gross_price(net:"),
        ],
        &[],
    );
    assert!(
        got[0]["output"]
            .as_str()
            .is_some_and(|o| o.starts_with("Successfully modified file: ")),
        "{}",
        got[0]
    );
    assert_eq!(s.read("broken.py"), "def f(:\n    return (2\n");
    refusal(&got[1], "app.py", "Python");
    assert_eq!(s.read("app.py"), APP);
}

#[test]
fn a_write_file_that_overwrites_valid_json_with_broken_json_is_refused() {
    let s = Scratch::new();
    let original = "{\"a\": [1, 2, 3]}\n";
    s.write("data.json", original);
    let got = run_calls(
        &s,
        vec![
            call(
                "write_file",
                json!({"file_path": "data.json", "content": "{\"a\": [1, 2, 3}\n"}),
            ),
            // A new file has no baseline: it is written as given.
            call(
                "write_file",
                json!({"file_path": "new.json", "content": "{\"b\": \n"}),
            ),
        ],
        &[],
    );
    let error = refusal(&got[0], "data.json", "JSON");
    assert!(
        error.contains(
            "Correct `content` so that the file still parses, and call write_file again."
        ),
        "{error}"
    );
    assert_eq!(s.read("data.json"), original);
    assert!(got[1]["output"].is_string(), "{}", got[1]);
    assert_eq!(s.read("new.json"), "{\"b\": \n");
}

#[test]
fn with_check_syntax_off_the_damaging_edit_is_applied() {
    let s = Scratch::new();
    s.write("src/app.py", APP);
    let got = run_calls(
        &s,
        vec![replace(
            "src/app.py",
            "def gross_price(net):",
            "def gross_price(net:",
        )],
        &["-c", "edit.check_syntax=false"],
    );
    assert!(got[0]["output"].is_string(), "{}", got[0]);
    assert_eq!(
        s.read("src/app.py"),
        APP.replace("def gross_price(net):", "def gross_price(net:")
    );
}

#[test]
fn a_file_of_another_kind_is_unchecked_while_a_known_one_is() {
    let s = Scratch::new();
    s.write("notes.cfg", "[a]\nb = (1)\n");
    s.write("settings.toml", "[a]\nb = 1\n");
    let got = run_calls(
        &s,
        vec![
            replace("notes.cfg", "b = (1)", "b = (1"),
            replace("settings.toml", "b = 1", "b = = 1"),
        ],
        &[],
    );
    assert!(got[0]["output"].is_string(), "{}", got[0]);
    assert_eq!(s.read("notes.cfg"), "[a]\nb = (1\n");
    refusal(&got[1], "settings.toml", "TOML");
    assert_eq!(s.read("settings.toml"), "[a]\nb = 1\n");
}

#[test]
fn the_not_found_hint_names_the_line_range_and_the_read_call() {
    let s = Scratch::new();
    s.write("src/app.py", APP);
    let got = run_calls(
        &s,
        vec![replace(
            "src/app.py",
            "def gross_price(price):\n    return round(price * 1.2, 2)",
            "def gross_price(price):\n    return round(price * 1.19, 2)",
        )],
        &["-c", "edit.use_model=false"],
    );
    let error = got[0]["error"].as_str().expect("error");
    assert!(
        error.starts_with("Could not find an exact match for 'old_string' in 'src/app.py'."),
        "{error}"
    );
    assert!(
        error.contains("The closest match is at lines 5-6 ("),
        "{error}"
    );
    assert!(
        error.contains(
            "Read that region again with read_file(file_path: \"src/app.py\", start_line: 3, end_line: 7) and copy old_string exactly"
        ),
        "{error}"
    );
    // The lines are not shown: the model reads them, it does not guess from them.
    assert!(!error.contains("| def gross_price(net):"), "{error}");
    assert_eq!(s.read("src/app.py"), APP);
}
