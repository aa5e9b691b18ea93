//! `troupe bench --prompt-size`: the size of the first model request — system prompt,
//! tool declarations and the user's prompt — as Troupe builds it with the default
//! settings and with `--profile small`, in bytes of the request body (Gemini JSON) and
//! in estimated tokens (a quarter of the characters, gemini-cli's estimate). It runs
//! a real session on the scripted model in an empty workspace, so what is measured is
//! what would be sent. `small_task` is the small profile's first request for a sample
//! task of the kind the local-model suites use (an exercise stub, its tests, a README
//! that says how they run): the prompt's lookups and the workspace listing included.

use serde_json::{json, Value};

use super::measure::{model_turn, run_scripted_prompt};
use super::BenchError;
use crate::settings;

/// Prints the first request's size for each profile.
pub fn run() -> Result<i32, BenchError> {
    let default = measure(&[], &[], "bench")?;
    let small = measure(settings::profiles::SMALL, &[], "bench")?;
    let mut task = measure(settings::profiles::SMALL, SAMPLE_FILES, SAMPLE_PROMPT)?;
    task["prompt"] = json!(SAMPLE_PROMPT);
    let report = json!({
        "default": default,
        "small": small,
        "small_task": task,
        "small_over_default": super::measure::round(
            small["bytes"].as_f64().unwrap_or(0.0) / default["bytes"].as_f64().unwrap_or(1.0).max(1.0)
        ),
    });
    println!(
        "{}",
        serde_json::to_string_pretty(&report).unwrap_or_default()
    );
    Ok(0)
}

/// The sample task's prompt.
pub const SAMPLE_PROMPT: &str =
    "Implement is_leap_year in leap.py so that the tests in leap_test.py pass, then run the tests.";

/// The sample task's workspace.
const SAMPLE_FILES: &[(&str, &str)] = &[
    ("leap.py", "def is_leap_year(year):\n    pass\n"),
    (
        "leap_test.py",
        "import unittest\n\nfrom leap import is_leap_year\n\n\nclass LeapTest(unittest.TestCase):\n    def test_not_divisible_by_4(self):\n        self.assertIs(is_leap_year(2015), False)\n\n    def test_divisible_by_4(self):\n        self.assertIs(is_leap_year(1996), True)\n\n    def test_divisible_by_100(self):\n        self.assertIs(is_leap_year(2100), False)\n\n    def test_divisible_by_400(self):\n        self.assertIs(is_leap_year(2000), True)\n",
    ),
    ("README.md", "# Leap\n\nRun the tests with `python3 -m pytest -q`.\n"),
];

/// The first request of a run of `profile` on `prompt` in a workspace of `files`.
fn measure(profile: &[&str], files: &[(&str, &str)], prompt: &str) -> Result<Value, BenchError> {
    let dir = tempfile::Builder::new()
        .prefix("troupe-bench-prompt-")
        .tempdir()?;
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws)?;
    for (name, text) in files {
        std::fs::write(ws.join(name), text)?;
    }
    let log = dir.path().join("requests.jsonl");
    let script = model_turn(json!([{"text": "ok"}]));
    // A profile is a list of overrides applied before the others (as `--profile`).
    let mut overrides: Vec<String> = profile.iter().map(|o| o.to_string()).collect();
    overrides.push("approval.mode=yolo".into());
    run_scripted_prompt(
        &ws,
        format!("{script}\n"),
        &overrides,
        Some(log.clone()),
        prompt,
    )?;
    let text = std::fs::read_to_string(&log)?;
    let first = text
        .lines()
        .next()
        .ok_or_else(|| BenchError::Run("the session sent no model request".into()))?;
    let body: Value =
        serde_json::from_str(first).map_err(|e| BenchError::Run(format!("request log: {e}")))?;
    let part = |v: &Value| serde_json::to_string(v).map(|s| s.len()).unwrap_or(0);
    let declarations = body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["functionDeclarations"].as_array())
                .map(Vec::len)
                .sum::<usize>()
        })
        .unwrap_or(0);
    Ok(json!({
        "bytes": first.len(),
        "estimated_tokens": first.chars().count().div_ceil(4),
        "system_instruction_bytes": part(&body["systemInstruction"]),
        "tools_bytes": part(&body["tools"]),
        "contents_bytes": part(&body["contents"]),
        "tools": declarations,
    }))
}
