//! `troupe demo`: a built-in sample project copied into a fresh temp dir and a built-in
//! scripted session run on it, with a transcript, the timing of each batch of calls
//! that ran in parallel, and the diff of what the session changed. Offline, no key.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::engine::diff::unified;
use crate::frontends::headless::{CallRecord, OutputFormat};
use crate::frontends::{run_turn, AppError};
use crate::platform::workspace::Workspace;
use crate::providers::scripted::ScriptedModel;
use crate::settings;

/// The sample project: (relative path, content).
pub const SAMPLE_FILES: [(&str, &str); 4] = [
    ("src/app.py", include_str!("../../config/demo/src/app.py")),
    ("src/util.py", include_str!("../../config/demo/src/util.py")),
    ("README.md", include_str!("../../config/demo/README.md")),
    (
        "tests/test_util.py",
        include_str!("../../config/demo/tests/test_util.py"),
    ),
];

/// The scripted model conversation (gemini-cli fake-responses format).
pub const SCRIPT: &str = include_str!("../../config/demo/script.jsonl");

/// The prompt the demo sends.
pub const PROMPT: &str = "Give me a quick tour of this project.";

/// What the scripted model is called in the demo (its stats, its session file).
pub const MODEL_NAME: &str = "scripted: demo";

/// Runs the demo: prints the transcript, the batches' timing and the diff.
pub fn run() -> Result<i32, AppError> {
    let dir = tempfile::Builder::new()
        .prefix("troupe-demo-")
        .tempdir()?
        .keep();
    let ws_dir = dir.join("project");
    for (rel, text) in SAMPLE_FILES {
        let path = ws_dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, text)?;
    }
    std::fs::write(
        dir.join("outside.txt"),
        "this file is outside the workspace\n",
    )?;
    let ws =
        Arc::new(Workspace::new(&ws_dir, &[]).map_err(|e| AppError::Workspace(e.to_string()))?);
    let loaded = settings::load_with(
        Path::new("/nonexistent"),
        Path::new("/nonexistent"),
        &[],
        &[
            "approval.mode=yolo".into(),
            format!("model.name=\"{MODEL_NAME}\""),
        ],
    )?;
    let _guard = crate::frontends::init_logging(&loaded.settings, Some(&dir.join("troupe.log")));
    let model = ScriptedModel::from_text("built-in demo script", SCRIPT)
        .map_err(|e| AppError::Model(e.to_string()))?
        .named(MODEL_NAME);
    println!(
        "Troupe demo: a scripted model works on a sample project in {}",
        ws_dir.display()
    );
    println!("(offline: no API key, no network; the calls of each model turn run in parallel)\n");
    println!("> {PROMPT}\n");
    let summary = run_turn(
        ws,
        Arc::new(loaded.settings),
        Arc::new(model),
        PROMPT.to_string(),
        OutputFormat::Transcript,
        None,
        true,
    )?;
    let stats = summary.stats.to_json(&summary.model);
    println!(
        "\n[{} tool calls: {} succeeded, {} failed; {} model requests; {:.0} ms]",
        stats["tools"]["totalCalls"],
        stats["tools"]["totalSuccess"],
        stats["tools"]["totalFail"],
        summary.stats.requests,
        summary.elapsed.as_secs_f64() * 1000.0
    );
    for line in batch_lines(&summary.calls) {
        println!("{line}");
    }
    let changes = changes(&ws_dir);
    if !changes.is_empty() {
        println!("\nWhat the session changed:\n{changes}");
    }
    println!(
        "The project is left in {} for you to look at.",
        ws_dir.display()
    );
    Ok(crate::frontends::exit_code(&summary.outcome))
}

/// The calls that ran at the same time, in the order they started: a call joins the
/// batch before it when it started before every call of that batch had finished (one
/// model turn's calls run together; the next turn's start after they all end).
fn batches(calls: &[CallRecord]) -> Vec<Vec<&CallRecord>> {
    let span = |c: &CallRecord| {
        let t = &c.timeline;
        let start = t.executing.or(t.scheduled).or(t.validating)?;
        Some((start, t.done.unwrap_or(start + c.duration)))
    };
    let mut timed: Vec<(Instant, Instant, &CallRecord)> = calls
        .iter()
        .filter_map(|c| span(c).map(|(start, end)| (start, end, c)))
        .collect();
    timed.sort_by_key(|(start, _, _)| *start);
    let mut out: Vec<(Instant, Vec<&CallRecord>)> = Vec::new();
    for (start, end, call) in timed {
        match out.last_mut() {
            Some((batch_end, batch)) if start < *batch_end => {
                *batch_end = (*batch_end).max(end);
                batch.push(call);
            }
            _ => out.push((end, vec![call])),
        }
    }
    out.into_iter().map(|(_, batch)| batch).collect()
}

/// One line per batch of calls that ran in parallel: how long the batch took on the
/// clock against the sum of its calls' times (what running them one by one would take).
fn batch_lines(calls: &[CallRecord]) -> Vec<String> {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    batches(calls)
        .into_iter()
        .filter(|batch| batch.len() > 1)
        .map(|batch| {
            let start = batch
                .iter()
                .filter_map(|c| c.timeline.executing.or(c.timeline.scheduled))
                .min();
            let end = batch.iter().filter_map(|c| c.timeline.done).max();
            let wall = match (start, end) {
                (Some(start), Some(end)) => end.saturating_duration_since(start),
                _ => Duration::ZERO,
            };
            let summed: Duration = batch.iter().map(|c| c.duration).sum();
            let names: Vec<&str> = batch.iter().map(|c| c.name.as_str()).collect();
            format!(
                "[parallel batch of {} calls ({}): {:.1} ms on the clock, {:.1} ms one after another]",
                batch.len(),
                names.join(", "),
                ms(wall),
                ms(summed)
            )
        })
        .collect()
}

/// The unified diff of every sample file the session changed, and of the files it
/// created, against the sample project.
fn changes(ws_dir: &Path) -> String {
    let mut out = String::new();
    for (rel, before) in SAMPLE_FILES {
        let after = std::fs::read_to_string(ws_dir.join(rel)).unwrap_or_default();
        if after != before {
            out.push_str(&git_style(rel, &format!("a/{rel}"), before, &after));
        }
    }
    let mut created: Vec<String> = walk(ws_dir)
        .into_iter()
        .filter(|rel| !SAMPLE_FILES.iter().any(|(known, _)| known == rel))
        .collect();
    created.sort();
    for rel in created {
        let after = std::fs::read_to_string(ws_dir.join(&rel)).unwrap_or_default();
        out.push_str(&git_style(&rel, "/dev/null", "", &after));
    }
    out
}

/// A unified diff with git's `--- a/…` / `+++ b/…` header.
fn git_style(rel: &str, old_name: &str, before: &str, after: &str) -> String {
    let text = unified(rel, before, after).text;
    let header = format!("--- {rel}\tCurrent\n+++ {rel}\tProposed\n");
    match text.strip_prefix(&header) {
        Some(hunks) => format!("--- {old_name}\n+++ b/{rel}\n{hunks}"),
        None => text,
    }
}

/// The files under `dir`, as `/`-separated paths relative to it.
fn walk(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => pending.push(path),
                Ok(t) if t.is_file() => {
                    if let Ok(rel) = path.strip_prefix(dir) {
                        let parts: Vec<String> = rel
                            .components()
                            .map(|c| c.as_os_str().to_string_lossy().into_owned())
                            .collect();
                        files.push(parts.join("/"));
                    }
                }
                _ => {}
            }
        }
    }
    files
}
