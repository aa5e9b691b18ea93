//! `troupe bench --prompt-size`: the size of the first model request — system prompt,
//! tool declarations and the user's prompt — as Troupe builds it with the default
//! settings and with `--profile small`, in bytes of the request body (Gemini JSON) and
//! in estimated tokens (a quarter of the characters, gemini-cli's estimate). It runs
//! a real session on the scripted model in an empty workspace, so what is measured is
//! what would be sent.

use serde_json::{json, Value};

use super::measure::{model_turn, run_scripted};
use super::BenchError;
use crate::settings;

/// Prints the first request's size for each profile.
pub fn run() -> Result<i32, BenchError> {
    let default = measure(&[])?;
    let small = measure(settings::profiles::SMALL)?;
    let report = json!({
        "default": default,
        "small": small,
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

fn measure(profile: &[&str]) -> Result<Value, BenchError> {
    let dir = tempfile::Builder::new()
        .prefix("troupe-bench-prompt-")
        .tempdir()?;
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws)?;
    let log = dir.path().join("requests.jsonl");
    let script = model_turn(json!([{"text": "ok"}]));
    // A profile is a list of overrides applied before the others (as `--profile`).
    let mut overrides: Vec<String> = profile.iter().map(|o| o.to_string()).collect();
    overrides.push("approval.mode=yolo".into());
    run_scripted(&ws, format!("{script}\n"), &overrides, Some(log.clone()))?;
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
        "tools": declarations,
    }))
}
