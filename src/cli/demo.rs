//! `troupe demo`: a built-in sample project copied into a fresh temp dir and a built-in
//! scripted session run on it, with a transcript. Offline, no key.

use std::sync::Arc;

use crate::frontends::headless::OutputFormat;
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
        std::path::Path::new("/nonexistent"),
        std::path::Path::new("/nonexistent"),
        &[],
        &["approval.mode=yolo".into()],
    )?;
    let _guard = crate::frontends::init_logging(&loaded.settings, Some(&dir.join("troupe.log")));
    let model = ScriptedModel::from_text("built-in demo script", SCRIPT)
        .map_err(|e| AppError::Model(e.to_string()))?;
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
        false,
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
    println!(
        "The project is left in {} for you to look at.",
        ws_dir.display()
    );
    Ok(crate::frontends::exit_code(&summary.outcome))
}
