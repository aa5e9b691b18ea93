//! `troupe bench`: builds a temp workspace, scripts one model turn with N parallel calls,
//! runs the real runtime on it (scripted model, yolo) and prints JSON: wall time of the
//! turn, per-call latency percentiles, calls/s, peak RSS, and the bare-loop floor.

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;

use super::{run_turn_with, AppError};
use crate::actors::headless::OutputFormat;
use crate::cli::{BenchArgs, BenchTool};
use crate::engine::workspace::Workspace;
use crate::providers::scripted::ScriptedModel;
use crate::settings;

pub fn run(args: &BenchArgs) -> Result<i32, AppError> {
    let n = args.calls.max(1);
    let files = args.files.unwrap_or(n.min(10_000)).max(1);
    let dir = tempfile::Builder::new().prefix("troupe-bench-").tempdir()?;
    let ws_dir = dir.path().join("ws");
    let width = (files - 1).to_string().len();
    let names: Vec<String> = (0..files)
        .map(|i| format!("files/f{i:0width$}.txt"))
        .collect();
    std::fs::create_dir_all(ws_dir.join("files"))?;
    for (i, name) in names.iter().enumerate() {
        std::fs::write(
            ws_dir.join(name),
            format!("file {i}\n{}\n", "x".repeat(200)),
        )?;
    }
    let mcp_tool = args
        .mcp
        .as_deref()
        .map(crate::mcp::bench_call_name)
        .transpose()
        .map_err(AppError::Usage)?;
    let calls: Vec<serde_json::Value> = (0..n)
        .map(|i| match args.tool {
            _ if mcp_tool.is_some() => json!({"functionCall": {"name": mcp_tool.as_deref().unwrap_or_default(), "args": {"text": format!("call {i}")}}}),
            BenchTool::ReadFile => json!({"functionCall": {"name": "read_file", "args": {"file_path": names[i % files]}}}),
            BenchTool::ListDirectory => json!({"functionCall": {"name": "list_directory", "args": {"dir_path": "files"}}}),
            BenchTool::Glob => json!({"functionCall": {"name": "glob", "args": {"pattern": format!("files/f{:0width$}*", i % files)}}}),
        })
        .collect();
    let turn = |parts: serde_json::Value| json!({"method": "generateContentStream", "response": [{"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}]}]});
    let script = format!(
        "{}\n{}\n",
        turn(json!(calls)),
        turn(json!([{"text": format!("Ran {n} calls.")}]))
    );

    // The floor: the same work as a bare loop in this process.
    let floor_started = Instant::now();
    let mut floor_bytes = 0usize;
    for i in 0..n {
        floor_bytes += match args.tool {
            BenchTool::ReadFile => std::fs::read_to_string(ws_dir.join(&names[i % files]))?.len(),
            BenchTool::ListDirectory => std::fs::read_dir(ws_dir.join("files"))?.count(),
            BenchTool::Glob => std::fs::read_dir(ws_dir.join("files"))?.count(),
        };
    }
    let floor = floor_started.elapsed();

    let ws =
        Arc::new(Workspace::new(&ws_dir, &[]).map_err(|e| AppError::Workspace(e.to_string()))?);
    let mut overrides = vec!["approval.mode=yolo".to_string()];
    if let Some(t) = args.fs_threads {
        overrides.push(format!("tools.fs_threads={t}"));
    }
    if let Some(k) = args.actors_per_tool {
        overrides.push(format!("tools.actors_per_tool={k}"));
    }
    // With --mcp, the user's config supplies the server (`[mcp_servers.NAME]`).
    let user_file = match mcp_tool {
        Some(_) => settings::troupe_home().join("config.toml"),
        None => std::path::PathBuf::from("/nonexistent"),
    };
    let loaded = settings::load_with(
        &user_file,
        std::path::Path::new("/nonexistent"),
        &[],
        &overrides,
    )?;
    let model = ScriptedModel::from_text("bench script", &script)
        .map_err(|e| AppError::Model(e.to_string()))?;
    let plan = if args.record_session {
        let store = crate::sessions::SessionStore::open(&dir.path().join("home"), &ws_dir)
            .map_err(|e| AppError::Usage(e.to_string()))?;
        let plan = crate::sessions::plan::plan(store, &Default::default())
            .map_err(|e| AppError::Usage(e.message))?;
        Some(plan)
    } else {
        None
    };
    let session_file = plan.as_ref().map(|p| p.file.clone());
    let started = Instant::now();
    let summary = run_turn_with(
        ws,
        Arc::new(loaded.settings.clone()),
        Arc::new(model),
        "bench".into(),
        OutputFormat::Silent,
        None,
        true,
        plan,
    )?;
    let session_bytes = session_file
        .and_then(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .unwrap_or(0);
    let process = started.elapsed();
    // The turn itself: from the Chat taking the prompt to the answer (the session's
    // start-up — threads, actors — is reported apart).
    let wall = summary.turn_elapsed;
    let ok = summary.calls.iter().filter(|c| c.error.is_none()).count();
    let mut lat: Vec<f64> = summary
        .calls
        .iter()
        .map(|c| c.duration.as_secs_f64() * 1e6)
        .collect();
    lat.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| -> f64 {
        if lat.is_empty() {
            return 0.0;
        }
        let idx = ((p / 100.0) * (lat.len() as f64 - 1.0)).round() as usize;
        lat[idx.min(lat.len() - 1)]
    };
    let wall_ms = wall.as_secs_f64() * 1000.0;
    let floor_ms = floor.as_secs_f64() * 1000.0;
    let report = json!({
        "calls": n,
        "tool": mcp_tool.clone().unwrap_or_else(|| format!("{:?}", args.tool)),
        "files": files,
        "fs_threads": loaded.settings.tools.fs_threads,
        "actors_per_tool": loaded.settings.tools.actors_per_tool,
        "succeeded": ok,
        "turn_wall_ms": round(wall_ms),
        "turn_calls_per_s": round(n as f64 / wall.as_secs_f64()),
        "call_latency_us": {"p50": round(pct(50.0)), "p95": round(pct(95.0)), "p99": round(pct(99.0)), "max": round(pct(100.0))},
        "floor_bare_loop_ms": round(floor_ms),
        "floor_bytes": floor_bytes,
        "overhead_per_call_us": round((wall_ms - floor_ms) * 1000.0 / n as f64),
        "peak_rss_mb": peak_rss_mb(),
        "record_session": args.record_session,
        "session_file_bytes": session_bytes,
        "session_start_ms": round((process.saturating_sub(wall)).as_secs_f64() * 1000.0),
    });
    println!(
        "{}",
        serde_json::to_string_pretty(&report).unwrap_or_default()
    );
    Ok(if ok == n { 0 } else { 1 })
}

fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Peak resident set size of this process (VmHWM), in MB.
pub fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map(|kb| round(kb / 1024.0))
        .unwrap_or(0.0)
}
