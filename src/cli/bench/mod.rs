//! `troupe bench`: a concurrency-experiment tool. One run builds a workspace (or uses
//! `--workspace DIR`), scripts one model turn of N calls (one tool, a `--mix`, or a
//! synthetic tool with `--latency`) and runs the real runtime on it (scripted model,
//! yolo), printing JSON: the turn's wall time, per-call latency percentiles, calls/s,
//! peak RSS, session start-up and the bare-loop floor for the same reads.
//!
//! `--sweep PARAM=V1,V2,…` (repeatable) and `--repeat K` run every combination K times,
//! each run in a fresh `troupe bench` process (so peak RSS and threads are the run's
//! own), and print a table of medians; `--json`, `--trace` and `--plot` write files.

mod agents;
mod mcp_floor;
mod measure;
#[cfg(feature = "bench")]
mod plot;

/// `--plot` in a build without the `bench` feature: a clear error, no chart.
#[cfg(not(feature = "bench"))]
mod plot {
    use std::path::Path;

    use super::BenchError;

    /// One line of the chart.
    pub struct Series {
        pub label: String,
        pub latencies_us: Vec<f64>,
        pub calls_per_s: f64,
    }

    /// Refuses: charts need plotters, which only the `bench` feature builds.
    pub fn draw(path: &Path, series: &[Series]) -> Result<(), BenchError> {
        let _ = series
            .iter()
            .map(|s| (&s.label, s.latencies_us.len(), s.calls_per_s));
        Err(BenchError::Plot(format!(
            "cannot draw {}: this troupe was built without charts; build it with `--features bench`",
            path.display()
        )))
    }
}
mod prompt_size;
mod sweep;
mod tasks;
mod turns;
mod workload;

use serde_json::{json, Value};

use crate::cli::BenchArgs;
use crate::frontends::AppError;
use measure::{round, Cell};
use workload::{BenchWorkspace, Workload};

/// Why a benchmark could not run. The binary prints it after `troupe: `, so the
/// messages start with `bench: ` (not `troupe bench: `).
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("bench: {0}")]
    Usage(String),
    #[error("bench: {0}")]
    Io(#[from] std::io::Error),
    #[error("bench: {0}")]
    Settings(#[from] crate::settings::SettingsError),
    #[error("bench: plot: {0}")]
    Plot(String),
    #[error("bench: a run failed: {0}")]
    Run(String),
}

impl From<BenchError> for AppError {
    fn from(e: BenchError) -> Self {
        AppError::Usage(e.to_string())
    }
}

/// The warning a debug build's figures carry: unoptimised code is many times slower.
pub fn debug_build_warning() -> Option<&'static str> {
    cfg!(debug_assertions).then_some(
        "troupe bench: warning: this is a debug build (unoptimised): its figures are not Troupe's; build with `cargo build --release` to measure",
    )
}

pub fn run(args: &BenchArgs) -> Result<i32, AppError> {
    let mut args = args.clone();
    args.calls = args.calls_given.unwrap_or(1000);
    let args = &args;
    if let Some(warning) = debug_build_warning() {
        eprintln!("{warning}");
    }
    if let Some(agents) = args.agents {
        let calls = args.calls_given.unwrap_or(1);
        return Ok(agents::run(agents, calls, args.max_concurrent)?);
    }
    if let Some(tasks) = args.tasks {
        let jobs = args.jobs.unwrap_or(64);
        return Ok(tasks::run(tasks, jobs, !args.no_baseline)?);
    }
    if let Some(turns) = args.turns {
        return Ok(turns::run(turns)?);
    }
    if args.prompt_size {
        return Ok(prompt_size::run()?);
    }
    let workload = Workload::from_args(args)?;
    let base = base_cell(args)?;
    if args.sweep.is_empty() && args.repeat <= 1 {
        return Ok(single(args, &workload, base)?);
    }
    Ok(sweep::sweep(args, base)?)
}

/// The cell the flags (or the default settings) describe.
fn base_cell(args: &BenchArgs) -> Result<Cell, BenchError> {
    let defaults = crate::settings::load_with(
        std::path::Path::new("/nonexistent"),
        std::path::Path::new("/nonexistent"),
        &[],
        &[],
    )?
    .settings
    .tools;
    Ok(Cell {
        calls: args.calls,
        actors_per_tool: args.actors_per_tool.unwrap_or(defaults.actors_per_tool),
        fs_threads: args.fs_threads.unwrap_or(defaults.fs_threads),
        window: args.window.unwrap_or(defaults.max_in_flight),
        tool_threads: args.tool_threads.unwrap_or(defaults.tool_threads),
    })
}

/// One run in this process: JSON on stdout.
fn single(args: &BenchArgs, workload: &Workload, cell: Cell) -> Result<i32, BenchError> {
    let ws = BenchWorkspace::prepare(args, cell.calls, workload)?;
    let (metrics, calls) = measure::run_once(&ws, workload, cell)?;
    if let Some(path) = &args.trace {
        crate::frontends::trace::write(path, &calls)?;
    }
    let mut latencies: Vec<f64> = calls
        .iter()
        .map(|c| c.duration.as_secs_f64() * 1e6)
        .collect();
    latencies.sort_by(|a, b| a.total_cmp(b));
    if let Some(path) = &args.plot {
        plot::draw(
            path,
            &[plot::Series {
                label: format!("{} calls", cell.calls),
                latencies_us: latencies.clone(),
                calls_per_s: metrics.turn_calls_per_s,
            }],
        )?;
    }
    let mut report = json!({
        "calls": cell.calls,
        "workload": describe(args),
        "files": ws.files.len(),
        "fs_threads": cell.fs_threads,
        "actors_per_tool": cell.actors_per_tool,
        "window": cell.window,
        "tool_threads": cell.tool_threads,
        "record_session": args.record_session,
    });
    merge(
        &mut report,
        serde_json::to_value(&metrics).unwrap_or_default(),
    );
    if args.emit_latencies {
        report["latencies_us"] = json!(latencies.iter().map(|l| round(*l)).collect::<Vec<_>>());
    }
    let text = serde_json::to_string_pretty(&report).unwrap_or_default();
    if let Some(path) = &args.json {
        std::fs::write(path, &text)?;
    }
    println!("{text}");
    Ok(if metrics.succeeded == cell.calls {
        0
    } else {
        1
    })
}

fn merge(into: &mut Value, from: Value) {
    if let (Some(a), Value::Object(b)) = (into.as_object_mut(), from) {
        a.extend(b);
    }
}

fn describe(args: &BenchArgs) -> String {
    let mut parts = Vec::new();
    match (&args.mix, &args.latency) {
        _ if args.mcp_spec().is_some() => {
            parts.push(format!("mcp {}", args.mcp_spec().unwrap_or_default()))
        }
        (Some(mix), _) => parts.push(format!("mix {mix}")),
        (None, Some(_)) => parts.push("synthetic".into()),
        (None, None) => parts.push(format!("{:?}", args.tool.builtin())),
    }
    if let Some(l) = &args.latency {
        parts.push(format!("latency {l}"));
    }
    if let Some(dir) = &args.workspace {
        parts.push(format!("workspace {}", dir.display()));
    }
    parts.join(", ")
}
