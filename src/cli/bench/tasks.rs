//! `troupe bench --tasks N -j J`: the batch pool (`troupe batch`) on N scripted tasks,
//! at 1, 4, 16, 64 … up to J tasks at once, each task a session on its own copy of a
//! small workspace that reads a file and answers. Prints tasks per second and the peak
//! memory per running session for each J, then the same N tasks as a loop of `troupe
//! -p` processes (each on its own copy, as the pool's tasks are) as the baseline,
//! measured in the same run, and the ratio.

use std::path::Path;
use std::sync::atomic::AtomicI32;
use std::sync::Arc;
use std::time::Instant;

use actix::System;
use serde_json::json;

use super::measure::{model_turn, peak_rss_mb, reset_peak_rss, round};
use super::BenchError;
use crate::frontends::batch::{
    self, BatchContext, ModelSource, Placement, Progress, ProgressStyle, ResultsFile, Task,
};
use crate::frontends::options::RunArgs;

/// The settings of every task: nothing recorded, no listing in the prompt.
const OVERRIDES: [&str; 2] = ["sessions.record=false", "model.workspace_listing=0"];

/// Runs the ladder and the baseline; 0 when every task of every run ended `ok`.
pub fn run(tasks: usize, jobs: usize, baseline: bool) -> Result<i32, BenchError> {
    let dir = tempfile::Builder::new()
        .prefix("troupe-bench-tasks-")
        .tempdir()?;
    let workspace = dir.path().join("project");
    std::fs::create_dir_all(workspace.join("src"))?;
    std::fs::write(workspace.join("README.md"), "a small project\n")?;
    std::fs::write(
        workspace.join("src/notes.txt"),
        "the quick brown fox\n".repeat(8),
    )?;
    let script = dir.path().join("task.responses.jsonl");
    let read = model_turn(
        json!([{"functionCall": {"name": crate::tools::read_file::NAME, "args": {"file_path": "src/notes.txt"}}}]),
    );
    let done = model_turn(json!([{"text": "The notes are about a fox."}]));
    std::fs::write(&script, format!("{read}\n{done}\n"))?;
    let list: Vec<Task> = (0..tasks)
        .map(|i| {
            serde_json::from_value(json!({"id": format!("task-{i}"), "prompt": format!("summarise the notes ({i})"), "workspace": "project"}))
        })
        .collect::<Result<_, _>>()
        .map_err(|e| BenchError::Run(e.to_string()))?;
    let mut ladder: Vec<usize> = [1, 4, 16, 64, 256]
        .into_iter()
        .filter(|j| *j < jobs)
        .collect();
    ladder.push(jobs);
    // A short warm-up run first: the process's one-time set-up is not a session's cost.
    let warm = &list[..list.len().min(4)];
    let (_, mut all_ok) = pool_run(dir.path(), &script, warm, 1)?;
    let mut rows = Vec::new();
    for j in ladder {
        let (row, ok) = pool_run(dir.path(), &script, &list, j)?;
        all_ok &= ok;
        rows.push(row);
    }
    let mut report = json!({"tasks": tasks, "pool": rows});
    if baseline {
        let started = Instant::now();
        for (i, _) in list.iter().enumerate() {
            all_ok &= p_run(dir.path(), &workspace, &script, i)?;
        }
        let wall = started.elapsed().as_secs_f64();
        let per_s = tasks as f64 / wall.max(1e-9);
        let best = rows
            .iter()
            .filter_map(|r| r["tasks_per_s"].as_f64())
            .fold(0.0, f64::max);
        report["p_loop"] = json!({"wall_s": round(wall), "tasks_per_s": round(per_s)});
        report["pool_vs_p_loop"] = json!(round(best / per_s.max(1e-9)));
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&report).unwrap_or_default()
    );
    Ok(if all_ok { 0 } else { 1 })
}

/// One run of the pool at `jobs`: its row, and whether every task was `ok`.
fn pool_run(
    dir: &Path,
    script: &Path,
    list: &[Task],
    jobs: usize,
) -> Result<(serde_json::Value, bool), BenchError> {
    let out = dir.join(format!("out-j{jobs}"));
    std::fs::create_dir_all(&out)?;
    let progress = Arc::new(Progress::new(ProgressStyle::None, list.len() as u64, 0));
    let ctx = Arc::new(BatchContext {
        args: RunArgs {
            fake_responses: Some(script.to_path_buf()),
            yolo: true,
            skip_trust: true,
            overrides: OVERRIDES.iter().map(|s| s.to_string()).collect(),
            ..RunArgs::default()
        },
        models: ModelSource::PerTask,
        meeting: None,
        out: out.clone(),
        base: dir.to_path_buf(),
        cwd: dir.to_path_buf(),
        placement: Placement::Copy,
        cancel: Default::default(),
        progress: progress.clone(),
    });
    let results = Arc::new(
        ResultsFile::open(&out.join("results.jsonl"))
            .map_err(|e| BenchError::Run(e.to_string()))?,
    );
    let pending = list.to_vec();
    reset_peak_rss();
    let rss_before = peak_rss_mb();
    let started = Instant::now();
    System::new()
        .block_on(batch::run_pool(
            ctx,
            pending,
            jobs,
            results,
            Arc::new(AtomicI32::new(0)),
        ))
        .map_err(|e| BenchError::Run(e.to_string()))?;
    let wall = started.elapsed().as_secs_f64();
    let rss = peak_rss_mb();
    let counts = progress.counts();
    let ok = counts.ok as usize == list.len();
    let running = counts.peak_running.max(1) as f64;
    let row = json!({
        "jobs": jobs,
        "wall_s": round(wall),
        "tasks_per_s": round(list.len() as f64 / wall.max(1e-9)),
        "ok": counts.ok,
        "peak_running": counts.peak_running,
        "peak_rss_mb": rss,
        "rss_per_running_session_mb": round((rss - rss_before).max(0.0) / running),
    });
    // The copies are the pool's own cost to make, not to keep.
    let _ = std::fs::remove_dir_all(&out);
    Ok((row, ok))
}

/// Task `i` as a `troupe -p` process on its own copy of the workspace.
fn p_run(dir: &Path, workspace: &Path, script: &Path, i: usize) -> Result<bool, BenchError> {
    let copy = dir.join(format!("p-{i}"));
    batch::copy_workspace(workspace, &copy).map_err(BenchError::Run)?;
    let exe = std::env::current_exe()?;
    let mut cmd = std::process::Command::new(exe);
    cmd.current_dir(&copy)
        .args(["--skip-trust", "--yolo", "-o", "json", "--fake-responses"])
        .arg(script)
        .args(["-p", &format!("summarise the notes ({i})")]);
    for setting in OVERRIDES {
        cmd.args(["-c", setting]);
    }
    let out = cmd.stdin(std::process::Stdio::null()).output()?;
    let _ = std::fs::remove_dir_all(&copy);
    Ok(out.status.success())
}
