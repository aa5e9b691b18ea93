//! One benchmark run in this process: the bare loop, then the real runtime (scripted
//! model, yolo) on one turn of N calls, with a progress line on stderr for runs longer
//! than a second.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde::Serialize;
use serde_json::json;

use super::workload::{BenchWorkspace, Workload};
use super::BenchError;
use crate::actors::session::{EndReason, SessionHandle, SessionOptions};
use crate::frontends::headless::{
    self, thread_cpu_time, CallRecord, HeadlessFront, OutputFormat, RunSummary,
};
use crate::platform::sessions::plan::SessionPlan;
use crate::platform::workspace::Workspace;
use crate::protocol::{ApprovalMode, Op};
use crate::providers::scripted::ScriptedModel;
use crate::settings;

/// The settings one run varies.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Cell {
    pub calls: usize,
    pub actors_per_tool: usize,
    pub fs_threads: usize,
    pub window: usize,
    pub tool_threads: usize,
}

/// What one run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Metrics {
    pub succeeded: usize,
    pub turn_wall_ms: f64,
    pub turn_calls_per_s: f64,
    pub p50_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// The same reads by a bare loop (read-only single-tool workloads only).
    pub floor_bare_loop_ms: Option<f64>,
    pub overhead_per_call_us: Option<f64>,
    /// CPU time of the whole process (all threads) during the turn: unlike the wall
    /// time, a loaded machine barely changes it.
    pub turn_cpu_ms: f64,
    /// CPU time of the bare loop (run on a thread of its own, `bench-bare-loop`).
    pub floor_cpu_ms: Option<f64>,
    /// (turn CPU − bare-loop CPU) / calls.
    pub cpu_overhead_per_call_us: Option<f64>,
    /// Turn CPU / bare-loop CPU for the same reads.
    pub cpu_ratio: Option<f64>,
    pub peak_rss_mb: f64,
    /// From the front end's creation to the Chat taking the prompt: start-up of all the
    /// session's actors (threads, tool actors, FileSystem pool, system prompt).
    pub session_start_ms: f64,
    /// Size of the session file the turn wrote (`--record-session`; 0 without it).
    pub session_file_bytes: u64,
    /// `--mcp`: the same calls sent by a minimal client of the bench's own, straight
    /// to the same server (see `mcp_floor`): what the server itself needs.
    pub mcp_floor_ms: Option<f64>,
    /// `--mcp`: the turn's wall time over the floor's.
    pub mcp_ratio: Option<f64>,
    /// `--mcp`: the server's transport (`stdio`, `http`).
    pub mcp_transport: Option<&'static str>,
}

/// Runs one turn of `cell.calls` calls; returns its metrics and every call's record.
pub fn run_once(
    ws: &BenchWorkspace,
    workload: &Workload,
    cell: Cell,
) -> Result<(Metrics, Vec<CallRecord>), BenchError> {
    let n = cell.calls.max(1);
    let calls = ws.calls(n, workload)?;
    let script = format!(
        "{}\n{}\n",
        model_turn(json!(calls)),
        model_turn(json!([{"text": format!("Ran {n} calls.")}]))
    );
    drop(calls);

    // The bare loop runs on a thread of its own, so its CPU time is its own and a
    // profiler can tell its samples from the runtime's (`bench/profile.sh`).
    let (floor, floor_cpu) = match workload.floor_kind() {
        Some(kind) => bare_loop(ws, n, kind)?,
        None => (None, None),
    };

    let loaded = bench_settings(workload, cell)?;
    let mcp_floor = workload
        .mcp_target
        .as_ref()
        .and_then(|target| mcp_floor(&loaded.settings, target, n, &ws.root));
    let model = ScriptedModel::from_text("bench script", &script)
        .map_err(|e| BenchError::Usage(e.to_string()))?;
    drop(script);
    let workspace =
        Arc::new(Workspace::new(&ws.root, &[]).map_err(|e| BenchError::Usage(e.to_string()))?);
    // --record-session: the session file goes to a temporary home of the run's own.
    let (_session_home, plan) = recorded_session(workload, ws)?;
    let session_file = plan.as_ref().map(|p| p.file.clone());
    reset_peak_rss();
    let done = Arc::new(AtomicUsize::new(0));
    let progress = Progress::start(n, done.clone());
    let summary = run_turn(
        workspace,
        loaded.settings,
        model,
        plan,
        done,
        None,
        "bench".into(),
    );
    progress.stop();
    let summary = summary?;
    let session_file_bytes = session_file
        .and_then(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .unwrap_or(0);

    let floors = Floors {
        bare: floor,
        bare_cpu: floor_cpu,
        mcp: mcp_floor,
    };
    let metrics = metrics(&summary, n, floors, session_file_bytes);
    Ok((metrics, summary.calls))
}

/// The settings of a bench run: yolo, the cell's knobs, every call run; with `--mcp`
/// the user's config supplies the server (`[mcp_servers.NAME]`).
fn bench_settings(workload: &Workload, cell: Cell) -> Result<settings::LoadedSettings, BenchError> {
    let overrides = vec![
        "approval.mode=yolo".to_string(),
        format!("tools.fs_threads={}", cell.fs_threads),
        format!("tools.actors_per_tool={}", cell.actors_per_tool),
        format!("tools.max_in_flight={}", cell.window),
        format!("tools.tool_threads={}", cell.tool_threads),
        // Every call runs, identical or not: the bench measures the runtime.
        "model.loop_detection=false".to_string(),
    ];
    let user_file = match workload.mcp_tool {
        Some(_) => settings::troupe_home().join("config.toml"),
        None => std::path::PathBuf::from("/nonexistent"),
    };
    Ok(settings::load_with(
        &user_file,
        std::path::Path::new("/nonexistent"),
        &[],
        &overrides,
    )?)
}

/// With `--record-session`, a temporary home of the run's own and the session planned
/// in it; `(None, None)` otherwise.
fn recorded_session(
    workload: &Workload,
    ws: &BenchWorkspace,
) -> Result<(Option<tempfile::TempDir>, Option<SessionPlan>), BenchError> {
    if !workload.record_session {
        return Ok((None, None));
    }
    let home = tempfile::Builder::new()
        .prefix("troupe-bench-home-")
        .tempdir()?;
    let store = crate::platform::sessions::SessionStore::open(home.path(), &ws.root)
        .map_err(|e| BenchError::Usage(e.to_string()))?;
    let plan = crate::platform::sessions::plan::plan(store, &Default::default())
        .map_err(|e| BenchError::Usage(e.message))?;
    Ok((Some(home), Some(plan)))
}

/// What a run's figures are measured against: the bare loop (wall and CPU) and the
/// MCP floor.
struct Floors {
    bare: Option<Duration>,
    bare_cpu: Option<Duration>,
    mcp: Option<super::mcp_floor::Floor>,
}

/// A run's metrics from its summary and its floors.
fn metrics(summary: &RunSummary, n: usize, floors: Floors, session_file_bytes: u64) -> Metrics {
    let wall = summary.turn_elapsed;
    let ok = summary.calls.iter().filter(|c| c.ok).count();
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
    let wall_ms = wall.as_secs_f64() * 1e3;
    let floor_ms = floors.bare.map(|f| f.as_secs_f64() * 1e3);
    let floor_cpu_ms = floors.bare_cpu.map(|f| f.as_secs_f64() * 1e3);
    let turn_cpu_ms = summary.turn_cpu.as_secs_f64() * 1e3;
    Metrics {
        succeeded: ok,
        turn_wall_ms: round(wall_ms),
        turn_calls_per_s: round(n as f64 / wall.as_secs_f64().max(1e-9)),
        p50_us: round(pct(50.0)),
        p95_us: round(pct(95.0)),
        p99_us: round(pct(99.0)),
        max_us: round(pct(100.0)),
        floor_bare_loop_ms: floor_ms.map(round),
        overhead_per_call_us: floor_ms.map(|f| round((wall_ms - f) * 1e3 / n as f64)),
        turn_cpu_ms: round(turn_cpu_ms),
        floor_cpu_ms: floor_cpu_ms.map(round),
        cpu_overhead_per_call_us: floor_cpu_ms.map(|f| round((turn_cpu_ms - f) * 1e3 / n as f64)),
        cpu_ratio: floor_cpu_ms.map(|f| round(turn_cpu_ms / f.max(1e-6))),
        peak_rss_mb: peak_rss_mb(),
        session_start_ms: round(
            summary
                .elapsed
                .saturating_sub(summary.turn_elapsed)
                .as_secs_f64()
                * 1e3,
        ),
        session_file_bytes,
        mcp_floor_ms: floors
            .mcp
            .as_ref()
            .map(|f| round(f.wall.as_secs_f64() * 1e3)),
        mcp_ratio: floors
            .mcp
            .as_ref()
            .map(|f| round(wall.as_secs_f64() / f.wall.as_secs_f64().max(1e-9))),
        mcp_transport: floors.mcp.as_ref().map(|f| f.transport),
    }
}

/// The floor of `--mcp` (`None`, said on stderr, when the server cannot be measured
/// that way: the turn's own figures still stand).
fn mcp_floor(
    settings: &settings::Settings,
    (server, tool): &(String, String),
    n: usize,
    root: &std::path::Path,
) -> Option<super::mcp_floor::Floor> {
    let Some(config) = settings.mcp_servers.iter().find(|s| &s.name == server) else {
        eprintln!("troupe bench: no MCP floor: no server '{server}' in the user config");
        return None;
    };
    match super::mcp_floor::measure(config, tool, n, root) {
        Ok(floor) => Some(floor),
        Err(e) => {
            eprintln!("troupe bench: no MCP floor: {e}");
            None
        }
    }
}

/// The bare loop's wall and CPU time (`None` when the workload has no bare loop).
fn bare_loop(
    ws: &BenchWorkspace,
    n: usize,
    kind: super::workload::Kind,
) -> Result<(Option<Duration>, Option<Duration>), BenchError> {
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("bench-bare-loop".into())
            .spawn_scoped(scope, || {
                let cpu = thread_cpu_time();
                let started = Instant::now();
                let done = ws.floor(n, kind)?;
                let wall = started.elapsed();
                let cpu = thread_cpu_time().saturating_sub(cpu);
                Ok(done.map(|_| (wall, cpu)))
            })?;
        match worker.join() {
            Ok(result) => result.map(|r| (r.map(|r| r.0), r.map(|r| r.1))),
            Err(_) => Err(BenchError::Run("the bare loop panicked".into())),
        }
    })
}

/// A session with a silent headless front that keeps each call's record.
fn run_turn(
    workspace: Arc<Workspace>,
    settings: settings::Settings,
    model: ScriptedModel,
    plan: Option<crate::platform::sessions::plan::SessionPlan>,
    done: Arc<AtomicUsize>,
    request_log: Option<std::path::PathBuf>,
    prompt: String,
) -> Result<RunSummary, BenchError> {
    // A run that logs its requests measures them: the synthetic test tool stays out.
    let test_tools = request_log.is_none();
    let system = System::new();
    system.block_on(async move {
        let mut front = HeadlessFront::new(OutputFormat::Silent, "yolo", true).with_progress(done);
        let model_name = settings.model.name.clone();
        // MCP servers' tools (--mcp) are discovered in the background: the start waits
        // for them.
        let session = SessionHandle::start(SessionOptions {
            workspace,
            settings: Arc::new(settings),
            model: Arc::new(model),
            model_name,
            approval_mode: ApprovalMode::Yolo,
            request_log,
            // Registers the synthetic tool of --latency.
            test_tools,
            editor_files: None,
            plan,
            call_progress: false,
            wait_for_mcp: true,
            interactive: false,
            trajectory: None,
        })
        .await
        .map_err(|e| BenchError::Usage(e.to_string()))?;
        session.submit(Op::UserTurn {
            text: prompt,
            parts: Vec::new(),
        });
        let summary = headless::drive(&session, &mut front).await.ok_or_else(|| {
            BenchError::Usage("the session ended without finishing the turn".into())
        });
        session.shutdown(EndReason::Exit).await;
        System::current().stop();
        summary
    })
}

/// Prints `done/total` on stderr every 250 ms once a run has taken a second.
struct Progress {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    fn start(total: usize, done: Arc<AtomicUsize>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("bench-progress".into())
            .spawn(move || {
                let started = Instant::now();
                let tty = std::io::stderr().is_terminal();
                let mut printed = false;
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(50));
                    let elapsed = started.elapsed();
                    if elapsed < Duration::from_secs(1) || elapsed.as_millis() % 250 >= 50 {
                        continue;
                    }
                    let n = done.load(Ordering::Relaxed);
                    let line = format!(
                        "troupe bench: {n}/{total} calls done, {:.1} s",
                        elapsed.as_secs_f64()
                    );
                    let mut err = std::io::stderr().lock();
                    let _ = if tty {
                        write!(err, "\r{line}")
                    } else {
                        writeln!(err, "{line}")
                    };
                    printed = true;
                }
                if printed && tty {
                    let _ = writeln!(std::io::stderr());
                }
            })
            .ok();
        Self { stop, thread }
    }

    fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A silent session on `root` with the default settings and `overrides` (no user or
/// project file) and the scripted model `script`, run for one prompt: what `--turns`
/// and `--prompt-size` measure. `request_log` keeps every model request.
pub(super) fn run_scripted(
    root: &std::path::Path,
    script: String,
    overrides: &[String],
    request_log: Option<std::path::PathBuf>,
) -> Result<RunSummary, BenchError> {
    run_scripted_prompt(root, script, overrides, request_log, "bench")
}

/// [`run_scripted`] on the prompt `prompt`.
pub(super) fn run_scripted_prompt(
    root: &std::path::Path,
    script: String,
    overrides: &[String],
    request_log: Option<std::path::PathBuf>,
    prompt: &str,
) -> Result<RunSummary, BenchError> {
    let loaded = settings::load_with(
        std::path::Path::new("/nonexistent"),
        std::path::Path::new("/nonexistent"),
        &[],
        overrides,
    )?;
    let model = ScriptedModel::from_text("bench script", &script)
        .map_err(|e| BenchError::Usage(e.to_string()))?;
    // The text is parsed: the run's peak memory is not the script's.
    drop(script);
    let workspace =
        Arc::new(Workspace::new(root, &[]).map_err(|e| BenchError::Usage(e.to_string()))?);
    run_turn(
        workspace,
        loaded.settings,
        model,
        None,
        Arc::new(AtomicUsize::new(0)),
        request_log,
        prompt.to_string(),
    )
}

/// One line of a scripted model: an answer of `parts`, ended with `STOP`.
pub(super) fn model_turn(parts: serde_json::Value) -> serde_json::Value {
    json!({"method": "generateContentStream", "response": [{"candidates": [
        {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}]}]})
}

pub fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Resets the peak RSS so the next figure is this run's (Linux `clear_refs`).
pub(super) fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
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
