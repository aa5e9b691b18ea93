//! Differential check of the matcher against gemini-cli 0.61's own `replace` logic
//! (the edit oracle in the shared peers directory): the oracle's sample cases plus
//! generated ones (indentation, spacing, typos, CRLF, `$`, Unicode, several matches)
//! go through both; every difference is printed with both results.
//!
//!     PEER_DIR=/tmp/peer ORACLE=/work/shared/peers/gemini-cli/edit-oracle.mjs \
//!         cargo run --release --example oracle_diff [-- SAMPLE_CASES.json]

use std::process::{Command, Stdio};

use serde_json::{json, Value};
use troupe::engine::edit::{self, EditRequest, Occurrences};

fn generated() -> Vec<Value> {
    let base = "class Shop:\n    def total(self, items, taxRate):\n        subtotal = sum(i.price for i in items)\n        if subtotal > 100:\n            subtotal = subtotal * 0.9\n        return subtotal * (1 + taxRate)\n\n    def name(self):\n        return 'shop'\n";
    let mut cases = Vec::new();
    let edits: &[(&str, &str, &str)] = &[
        ("exact", "return 'shop'", "return 'store'"),
        (
            "indent-0/4",
            "if subtotal > 100:\n    subtotal = subtotal * 0.9",
            "if subtotal > 100:\n    subtotal = subtotal * 0.8",
        ),
        (
            "indent-0/2",
            "if subtotal > 100:\n  subtotal = subtotal * 0.9",
            "if subtotal > 100:\n  subtotal = subtotal * 0.8",
        ),
        (
            "indent-new-differs",
            "if subtotal > 100:\n  subtotal = subtotal * 0.9",
            "if subtotal > 100:\n    subtotal = subtotal * 0.8",
        ),
        (
            "spacing",
            "subtotal = sum( i.price for i in items )",
            "subtotal = sum(i.cost for i in items)",
        ),
        (
            "typo",
            "return subtotal * (1 + taxrate)",
            "return subtotal * (1 + taxRate) + 1",
        ),
        ("dollar", "return 'shop'", "return '$& $1 $$'"),
        (
            "trailing-newline",
            "def name(self):\n        return 'shop'\n",
            "def name(self):\n        return 'x'",
        ),
        (
            "delete-block",
            "\n    def name(self):\n        return 'shop'\n",
            "",
        ),
        (
            "whole-lines-wrong-indent",
            "def name(self):\nreturn 'shop'",
            "def name(self):\nreturn 'x'",
        ),
        ("two-matches", "subtotal", "total"),
        ("miss", "nothing like this appears", "x"),
        ("identical", "return 'shop'", "return 'shop'"),
        ("unicode", "return 'shop'", "return '店 😀'"),
    ];
    for (name, old, new) in edits {
        cases.push(json!({"name": name, "content": base, "old_string": old, "new_string": new}));
    }
    cases.push(json!({"name": "crlf", "content": base.replace('\n', "\r\n"),
        "old_string": "if subtotal > 100:\n  subtotal = subtotal * 0.9", "new_string": "if subtotal > 100:\n  subtotal = 0"}));
    cases.push(
        json!({"name": "tabs", "content": "fn f() {\n\tif a {\n\t\tb();\n\t}\n}\n",
        "old_string": "if a {\n    b();\n}", "new_string": "if a {\n    c();\n}"}),
    );
    cases.push(json!({"name": "allow-multiple", "content": base, "old_string": "subtotal", "new_string": "total", "allow_multiple": true}));
    cases.push(json!({"name": "no-final-newline", "content": "a\nb", "old_string": "b", "new_string": "c\n"}));
    cases.push(json!({"name": "lone-cr", "content": "keep\rthis\n    x = 1\n", "old_string": "x = 1  ", "new_string": "x = 2"}));
    cases
}

fn ours(case: &Value) -> Value {
    let content = case["content"].as_str().map(|c| c.replace("\r\n", "\n"));
    let want = Occurrences::from_params(
        case["allow_multiple"].as_bool(),
        case["expected_replacements"].as_u64().filter(|n| *n > 1),
    );
    let file = case["file"].as_str().unwrap_or("case.txt");
    let request = EditRequest {
        file_path: file,
        old_string: case["old_string"].as_str().unwrap_or(""),
        new_string: case["new_string"].as_str().unwrap_or(""),
        want,
    };
    match edit::compute_edit(content.as_deref(), &request, file) {
        Ok(plan) => json!({"newContent": plan.new_content, "occurrences": plan.occurrences,
                           "strategy": plan.strategy.map_or("none", |s| s.as_str()), "error": null}),
        Err(e) => json!({"error": e.kind.as_str()}),
    }
}

fn theirs(result: &Value) -> Value {
    let r = &result["replacement"];
    match r["error"]["type"].as_str() {
        Some(kind) => json!({"error": kind}),
        None => json!({"newContent": r["newContent"], "occurrences": r["occurrences"],
                       "strategy": r["strategy"], "error": null}),
    }
}

fn main() {
    let mut cases: Vec<Value> = Vec::new();
    if let Some(sample) = std::env::args().nth(1) {
        match std::fs::read_to_string(&sample).map(|t| serde_json::from_str::<Vec<Value>>(&t)) {
            Ok(Ok(v)) => cases.extend(v.into_iter().filter(|c| !c["content"].is_null())),
            _ => return eprintln!("cannot read {sample}"),
        }
    }
    cases.extend(generated());
    let oracle = std::env::var("ORACLE")
        .unwrap_or_else(|_| "/work/shared/peers/gemini-cli/edit-oracle.mjs".into());
    let child = Command::new("node")
        .arg(&oracle)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return eprintln!("cannot run node: {e}"),
    };
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        let _ = stdin.write_all(Value::Array(cases.clone()).to_string().as_bytes());
    }
    let output = match child.wait_with_output() {
        Ok(o) => o,
        Err(e) => return eprintln!("oracle failed: {e}"),
    };
    let results: Vec<Value> = match serde_json::from_slice(&output.stdout) {
        Ok(v) => v,
        Err(e) => return eprintln!("bad oracle output: {e}"),
    };
    let mut same = 0;
    for (case, result) in cases.iter().zip(&results) {
        let (a, b) = (ours(case), theirs(result));
        if a == b {
            same += 1;
        } else {
            println!(
                "DIFFERENT {}:\n  troupe:     {a}\n  gemini-cli: {b}",
                case["name"].as_str().unwrap_or("?")
            );
        }
    }
    println!("{same} of {} cases give the same result", cases.len());
}
