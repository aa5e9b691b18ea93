//! Eight small tasks for a real small model, in a project Troupe has not seen: a
//! five-module Python package (`tests/fixtures/shop`) with a unittest suite of which one
//! test fails. Opt-in (ignored by default), against an OpenAI-compatible server on this
//! machine (`shared/peers/local-llm`: Qwen2.5-Coder-1.5B under llama.cpp):
//!
//! ```text
//! TROUPE_LOCAL_LLM_URL=http://127.0.0.1:8093 cargo test --features test-hooks,bench \
//!     --test all eight_small_tasks -- --ignored --nocapture
//! ```
//!
//! Each task runs headless, as a user would: no `--profile` (Troupe reads the server's
//! window and chooses), `--yolo`. Each run is judged twice: did the task succeed, and
//! did it leave the project worse (a test that passed before fails, or a `.py` file no
//! longer parses)? The test fails on any harmful run, on any run past the time limit,
//! and when fewer than `TROUPE_LOCAL_LLM_MIN_SUCCESSES` (default 5) tasks succeed.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::local_llm::{local_llm_url, run_bounded, tool_succeeded, transcript};
use crate::common::*;

const PROJECT: &[(&str, &str)] = &[
    (
        "shop/__init__.py",
        include_str!("../fixtures/shop/shop/__init__.py"),
    ),
    (
        "shop/constants.py",
        include_str!("../fixtures/shop/shop/constants.py"),
    ),
    (
        "shop/pricing.py",
        include_str!("../fixtures/shop/shop/pricing.py"),
    ),
    (
        "shop/cart.py",
        include_str!("../fixtures/shop/shop/cart.py"),
    ),
    (
        "shop/formatting.py",
        include_str!("../fixtures/shop/shop/formatting.py"),
    ),
    (
        "shop/report.py",
        include_str!("../fixtures/shop/shop/report.py"),
    ),
    (
        "tests/__init__.py",
        include_str!("../fixtures/shop/tests/__init__.py"),
    ),
    (
        "tests/test_shop.py",
        include_str!("../fixtures/shop/tests/test_shop.py"),
    ),
];

/// What a finished run left: its events, the answer, and the workspace.
struct Run<'a> {
    ws: &'a Path,
    events: &'a [Value],
    answer: &'a str,
}

impl Run<'_> {
    fn file(&self, rel: &str) -> String {
        std::fs::read_to_string(self.ws.join(rel)).unwrap_or_default()
    }

    /// Did a call of `tool` succeed?
    fn called(&self, tool: &str) -> bool {
        tool_succeeded(self.events, tool)
    }

    fn says(&self, word: &str) -> bool {
        self.answer.to_lowercase().contains(&word.to_lowercase())
    }
}

/// One task: a prompt and how its success is judged.
struct Task {
    name: &'static str,
    prompt: &'static str,
    succeeded: fn(&Run) -> bool,
}

const TASKS: &[Task] = &[
    Task {
        name: "list the files",
        prompt: "List the Python files in the shop folder.",
        succeeded: |r| {
            ["constants.py", "pricing.py", "cart.py", "formatting.py", "report.py"]
                .iter()
                .all(|f| r.says(f))
        },
    },
    Task {
        name: "explain a function",
        prompt: "Read shop/pricing.py and explain in one or two sentences what the function discount does.",
        succeeded: |r| r.called("read_file") && r.says("percent"),
    },
    Task {
        name: "find a constant",
        prompt: "What is the value of TAX_RATE in this project?",
        succeeded: |r| r.says("0.2"),
    },
    Task {
        name: "fix a one-line bug",
        prompt: "The test test_line_total in tests/test_shop.py fails: line_total in shop/cart.py should multiply the price by the quantity. Fix shop/cart.py.",
        succeeded: |r| passing_tests(r.ws).len() == 6,
    },
    Task {
        name: "add a docstring",
        prompt: "Add a one-line docstring to the function format_price in shop/formatting.py.",
        succeeded: |r| has_docstring(r.ws, "shop/formatting.py", "format_price"),
    },
    Task {
        name: "rename a variable",
        prompt: "In shop/report.py, rename the local variable tmp to lines everywhere in the function receipt.",
        succeeded: |r| {
            let text = r.file("shop/report.py");
            !text.contains("tmp") && text.matches("lines").count() >= 4
        },
    },
    Task {
        name: "write a summary file",
        prompt: "Write a file SUMMARY.md with one line for each module of the shop package (constants, pricing, cart, formatting, report) saying what it is for.",
        succeeded: |r| {
            // A line may start with the module's name capitalised ("Pricing: ...").
            let text = r.file("SUMMARY.md").to_lowercase();
            ["constants", "pricing", "cart", "formatting", "report"]
                .iter()
                .filter(|m| text.contains(*m))
                .count()
                >= 4
        },
    },
    Task {
        name: "run the tests",
        prompt: "Run the tests with the command `python3 -m unittest` and tell me how many tests passed.",
        succeeded: |r| r.called("run_shell_command") && r.says("5"),
    },
];

/// The names of the unittest tests that pass in `ws`.
fn passing_tests(ws: &Path) -> Vec<String> {
    let out = Command::new("python3")
        .args(["-m", "unittest", "-v"])
        .current_dir(ws)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3");
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| l.strip_suffix(" ... ok"))
        .map(str::to_string)
        .collect()
}

/// The `.py` files of `ws` that do not parse, with Python's error.
fn unparseable(ws: &Path) -> Vec<String> {
    let script = "import ast, pathlib, sys\nfor p in sorted(pathlib.Path('.').rglob('*.py')):\n    try:\n        ast.parse(p.read_text(), str(p))\n    except Exception as e:\n        print(f'{p}: {e}')\n";
    let out = Command::new("python3")
        .args(["-c", script])
        .current_dir(ws)
        .output()
        .expect("python3");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn has_docstring(ws: &Path, file: &str, function: &str) -> bool {
    let script = format!(
        "import ast, sys\ntree = ast.parse(open('{file}').read())\nok = any(isinstance(n, ast.FunctionDef) and n.name == '{function}' and ast.get_docstring(n) for n in ast.walk(tree))\nsys.exit(0 if ok else 1)\n"
    );
    Command::new("python3")
        .args(["-c", &script])
        .current_dir(ws)
        .status()
        .is_ok_and(|s| s.success())
}

/// Model requests of a run, read from its stream: one, plus one after each batch of
/// tool results that the model went on from.
fn model_turns(events: &[Value]) -> usize {
    let mut turns = 1;
    let mut after_results = false;
    for e in events {
        match e["type"].as_str() {
            Some("tool_result") => after_results = true,
            Some("message") if e["role"] == "assistant" => {
                turns += usize::from(after_results);
                after_results = false;
            }
            Some("tool_use") => {
                turns += usize::from(after_results);
                after_results = false;
            }
            _ => {}
        }
    }
    turns
}

#[test]
#[ignore = "needs a local model server: TROUPE_LOCAL_LLM_URL=http://127.0.0.1:8093 cargo test --features test-hooks,bench --test all eight_small_tasks -- --ignored --nocapture"]
fn eight_small_tasks_in_an_unseen_python_project() {
    let url = local_llm_url();
    let min_successes: usize = std::env::var("TROUPE_LOCAL_LLM_MIN_SUCCESSES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let only = std::env::var("TROUPE_LOCAL_LLM_TASKS").unwrap_or_default();
    // Troupe's own bounds must end every run before this; past it the run is killed.
    // (TROUPE_LOCAL_LLM_LIMIT_SECS stretches it on a loaded machine.)
    let limit = Duration::from_secs(
        std::env::var("TROUPE_LOCAL_LLM_LIMIT_SECS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(180),
    );
    let mut rows = Vec::new();
    let mut successes = 0;
    let mut harmful = Vec::new();
    let mut overran = Vec::new();
    let tasks: Vec<&Task> = TASKS
        .iter()
        .filter(|t| only.is_empty() || only.split(',').any(|o| t.name.contains(o.trim())))
        .collect();
    for task in &tasks {
        let s = Scratch::new();
        for (path, text) in PROJECT {
            s.write(path, text);
        }
        let ws = s.ws();
        let passed_before = passing_tests(&ws);
        assert_eq!(passed_before.len(), 5, "the fixture: 5 of 6 tests pass");
        let mut cmd = s.command();
        // No -m and no --profile: the server is asked for its model and its window.
        cmd.env(
            "OPENAI_BASE_URL",
            format!("{}/v1", url.trim_end_matches('/')),
        )
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args(["-p", task.prompt, "--yolo", "-o", "stream-json"]);
        let started = Instant::now();
        let (out, killed) = run_bounded(cmd, limit);
        let elapsed = started.elapsed();
        let (events, text) = transcript(&stdout(&out));
        let answer: String = events
            .iter()
            .filter(|e| e["type"] == "message" && e["role"] == "assistant")
            .filter_map(|e| e["content"].as_str())
            .collect();
        let run = Run {
            ws: &ws,
            events: &events,
            answer: &answer,
        };
        let ok = !killed && (task.succeeded)(&run);
        let passed_after = passing_tests(&ws);
        let lost: Vec<&String> = passed_before
            .iter()
            .filter(|t| !passed_after.contains(t))
            .collect();
        let broken = unparseable(&ws);
        let harm = if lost.is_empty() && broken.is_empty() {
            String::new()
        } else {
            harmful.push(task.name);
            format!("HARM: tests now failing {lost:?}; files not parsing {broken:?}")
        };
        if killed {
            overran.push(task.name);
        }
        successes += usize::from(ok);
        let result = events.iter().rev().find(|e| e["type"] == "result");
        let outcome = match (killed, result) {
            (true, _) => "killed at the time limit".to_string(),
            (false, Some(r)) if r["status"] == "success" => "completed".to_string(),
            (false, Some(r)) => format!(
                "{} ({})",
                r["error"]["type"].as_str().unwrap_or("error"),
                r["error"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .chars()
                    .take(80)
                    .collect::<String>()
            ),
            (false, None) => format!("no result event (exit {:?})", out.status.code()),
        };
        let tokens = result.map_or(0, |r| r["stats"]["total_tokens"].as_u64().unwrap_or(0));
        eprintln!(
            "=== {}: {} in {:.0} s, exit {:?}, {outcome} {harm}\n{text}\n--- stderr ---\n{}",
            task.name,
            if ok { "SUCCESS" } else { "FAILURE" },
            elapsed.as_secs_f64(),
            out.status.code(),
            stderr(&out)
        );
        rows.push(format!(
            "| {} | {} | {outcome} | {} | {tokens} | {:.0} s | {} |",
            task.name,
            if ok { "success" } else { "failure" },
            model_turns(&events),
            elapsed.as_secs_f64(),
            if harm.is_empty() { "none" } else { &harm }
        ));
    }
    eprintln!(
        "=== {successes}/{} tasks succeeded\n| task | result | outcome | model turns | tokens | time | harm |\n|---|---|---|---|---|---|---|\n{}",
        tasks.len(),
        rows.join("\n")
    );
    assert!(
        harmful.is_empty(),
        "runs that left the project worse: {harmful:?}"
    );
    assert!(overran.is_empty(), "runs past {limit:?}: {overran:?}");
    if only.is_empty() {
        assert!(
            successes >= min_successes,
            "{successes}/{} tasks succeeded; the goal is {min_successes}",
            tasks.len()
        );
    }
}
