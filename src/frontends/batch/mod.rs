//! `troupe batch TASKS.jsonl`: many tasks at once in one process. Each task is a
//! session of its own (started and driven through its [`SessionHandle`], as `-p` does)
//! on its own copy of its workspace; at most `-j` run at once, the next starting as
//! one ends; every session shares one model client, so `model.max_concurrent_requests`
//! and a server's 429 `Retry-After` hold for the whole pool. Each task's line goes to
//! `DIR/results.jsonl` as it ends and its ATIF trajectory to
//! `DIR/tasks/<id>/trajectory.json`; running the same batch again skips the tasks
//! already `ok`.
//!
//! [`SessionHandle`]: crate::actors::session::SessionHandle

mod copy;
mod progress;
mod results;
mod run;
mod tasks;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use actix::System;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

pub use copy::Placement;

/// Copies the workspace `source` to `dest` as a task's copy is made (whole, `.git`
/// and hidden files included).
pub fn copy_workspace(source: &Path, dest: &Path) -> Result<(), String> {
    copy::prepare(source, dest, Placement::Copy, dest).map(drop)
}
pub use progress::{Counts, Progress, ProgressStyle};
pub use results::{DiffStats, ResultsFile, TaskResult, TaskStatus, Tokens};
pub use run::{run_task, BatchContext, ModelSource};
pub use tasks::Task;

use crate::frontends::options::RunArgs;

/// The exit code of a batch in which some task did not end `ok`.
pub const SOME_TASKS_FAILED_EXIT_CODE: i32 = 1;
/// The exit code of a batch that could not start (a bad tasks file, a model that
/// cannot be reached).
pub const BATCH_UNUSABLE_EXIT_CODE: i32 = 2;

/// What keeps a batch from running.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error("{path}: line {line}: {message}")]
    Tasks {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Setup(String),
}

impl BatchError {
    fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// `troupe batch` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct BatchArgs {
    /// The tasks: one JSON object per line, `{"id", "prompt", "workspace"}` and
    /// optionally `approval_mode`, `model`, `max_turns`, `timeout_s`, `profile`,
    /// `sandbox`, `in_place`.
    #[arg(value_name = "TASKS.jsonl")]
    pub tasks: PathBuf,
    /// Tasks running at once.
    #[arg(short = 'j', long = "jobs", default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..))]
    pub jobs: u64,
    /// Where results.jsonl, the task copies (workspaces/<id>) and trajectories
    /// (tasks/<id>/trajectory.json) go. Default: TASKS with `.out` for its extension.
    #[arg(long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// A task whose workspace is a git repository works in a new git worktree of it
    /// (detached at HEAD: uncommitted changes are not in it) instead of a copy.
    #[arg(long = "worktree")]
    pub worktree: bool,
    /// How progress is shown: a bar on a terminal (auto), bar, json (lines on
    /// stdout), none.
    #[arg(long = "progress", value_enum, default_value_t = ProgressStyle::Auto)]
    pub progress: ProgressStyle,
    /// The model every task uses unless it names its own.
    #[arg(short = 'm', long = "model")]
    pub model: Option<String>,
    /// plan, default, auto_edit or yolo, unless a task names its own.
    #[arg(long = "approval-mode", value_name = "MODE")]
    pub approval_mode: Option<String>,
    /// Every tool call of every task runs without asking.
    #[arg(short = 'y', long = "yolo", conflicts_with = "approval_mode")]
    pub yolo: bool,
    /// The commands' sandbox: workspace-write, read-only or off.
    #[arg(short = 's', long = "sandbox", value_name = "MODE")]
    pub sandbox: Option<String>,
    /// A settings preset (`small`, `default`).
    #[arg(long = "profile", value_name = "NAME")]
    pub profile: Option<String>,
    /// Override a setting for every task (repeatable).
    #[arg(short = 'c', long = "config", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Every task replays this gemini-cli fake-responses file from its start.
    #[arg(long = "fake-responses", value_name = "FILE")]
    pub fake_responses: Option<PathBuf>,
    /// Trust the tasks' workspaces for this run.
    #[arg(long = "skip-trust")]
    pub skip_trust: bool,
    /// Write the log here instead of the default file.
    #[arg(long = "log-file", value_name = "PATH")]
    pub log_file: Option<PathBuf>,
}

impl BatchArgs {
    /// The run flags every task starts from.
    fn run_args(&self) -> RunArgs {
        RunArgs {
            model: self.model.clone(),
            approval_mode: self.approval_mode.clone(),
            yolo: self.yolo,
            sandbox: self.sandbox.clone(),
            profile: self.profile.clone(),
            overrides: self.overrides.clone(),
            fake_responses: self.fake_responses.clone(),
            skip_trust: self.skip_trust,
            log_file: self.log_file.clone(),
            ..RunArgs::default()
        }
    }

    fn out_dir(&self) -> PathBuf {
        self.out
            .clone()
            .unwrap_or_else(|| self.tasks.with_extension("out"))
    }
}

/// Runs the batch; the exit code: 0 when every task is `ok`,
/// [`SOME_TASKS_FAILED_EXIT_CODE`] when one is not, 128 + the signal when stopped,
/// [`BATCH_UNUSABLE_EXIT_CODE`] when it could not start.
pub fn run(args: &BatchArgs) -> i32 {
    match start(args) {
        Ok(code) => code,
        Err(error) => {
            eprintln!(
                "troupe batch: {}",
                crate::engine::sanitize::for_terminal(&error.to_string())
            );
            BATCH_UNUSABLE_EXIT_CODE
        }
    }
}

fn start(args: &BatchArgs) -> Result<i32, BatchError> {
    let text = std::fs::read_to_string(&args.tasks).map_err(|e| BatchError::io(&args.tasks, e))?;
    let all = tasks::parse(&args.tasks, &text)?;
    let out = std::path::absolute(args.out_dir()).map_err(|e| BatchError::io(&args.tasks, e))?;
    std::fs::create_dir_all(&out).map_err(|e| BatchError::io(&out, e))?;
    let results_path = out.join("results.jsonl");
    let (done, unreadable) = results::done_ids(&results_path)?;
    if unreadable > 0 {
        eprintln!(
            "troupe batch: {unreadable} line(s) of {} could not be read; their tasks run again",
            results_path.display()
        );
    }
    let (skipped, pending): (Vec<Task>, Vec<Task>) = all
        .into_iter()
        .partition(|t| done.get(&t.id) == Some(&TaskStatus::Ok));
    let run_args = args.run_args();
    let cwd = std::env::current_dir().map_err(|e| BatchError::io(Path::new("."), e))?;
    let (models, meeting, _log) = shared_model(&run_args, &cwd)?;
    let progress = Arc::new(Progress::new(
        args.progress,
        pending.len() as u64,
        skipped.len() as u64,
    ));
    let base = args
        .tasks
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let ctx = Arc::new(BatchContext {
        args: run_args,
        models,
        meeting,
        out,
        base: std::path::absolute(base).unwrap_or_else(|_| cwd.clone()),
        cwd,
        placement: if args.worktree {
            Placement::Worktree
        } else {
            Placement::Copy
        },
        cancel: CancellationToken::new(),
        progress: progress.clone(),
    });
    let results = Arc::new(ResultsFile::open(&results_path)?);
    let signal = Arc::new(AtomicI32::new(0));
    let ran = System::new().block_on(run_pool(
        ctx,
        pending,
        args.jobs as usize,
        results,
        signal.clone(),
    ));
    progress.close();
    let counts = progress.counts();
    eprintln!(
        "troupe batch: {} ok, {} not ok, {} done before · {}",
        counts.ok,
        counts.failed,
        counts.skipped,
        results_path.display()
    );
    ran?;
    Ok(match signal.load(Ordering::SeqCst) {
        0 if counts.failed == 0 => 0,
        0 => SOME_TASKS_FAILED_EXIT_CODE,
        number => 128 + number,
    })
}

/// The model client the tasks share (unless each replays a script), what the server
/// said of it, and the log's guard.
fn shared_model(
    args: &RunArgs,
    cwd: &Path,
) -> Result<
    (
        ModelSource,
        Option<crate::frontends::startup::ServerMeeting>,
        crate::frontends::LogGuard,
    ),
    BatchError,
> {
    let setup = |e: crate::frontends::AppError| BatchError::Setup(e.to_string());
    let ws = crate::platform::workspace::Workspace::new(cwd, &[])
        .map_err(|e| BatchError::Setup(e.to_string()))?;
    let trusted = crate::frontends::trust::run_trust(&ws, args).is_trusted();
    let loaded = crate::frontends::load_layers(&ws, args, trusted, &[], "").map_err(setup)?;
    let guard = crate::frontends::init_logging(&loaded.settings, args.log_file.as_deref());
    let model = crate::frontends::select_model(args, &loaded.settings).map_err(setup)?;
    let meeting = crate::frontends::startup::ask_server(args, &loaded, &model).map_err(setup)?;
    if let Some(notice) = &meeting.notice {
        eprintln!("troupe batch: {notice}");
    }
    for warning in &meeting.warnings {
        eprintln!(
            "troupe batch: {}",
            crate::engine::sanitize::for_terminal(warning)
        );
    }
    let models = match args.fake_responses {
        Some(_) => ModelSource::PerTask,
        None => ModelSource::Shared(crate::providers::limiter::pausing_together(model)),
    };
    Ok((models, Some(meeting), guard))
}

/// Runs `pending` at most `jobs` at once, appending each result as it ends; on a
/// signal the running tasks are cancelled and no new one starts.
pub async fn run_pool(
    ctx: Arc<BatchContext>,
    pending: Vec<Task>,
    jobs: usize,
    results: Arc<ResultsFile>,
    signal: Arc<AtomicI32>,
) -> Result<(), BatchError> {
    let mut signals = crate::frontends::signals::Signals::install();
    let cancel = ctx.cancel.clone();
    let watcher = actix::spawn(async move {
        let number = signals.first().await;
        tracing::warn!(signal = number, "signalled: stopping the batch");
        signal.store(number, Ordering::SeqCst);
        cancel.cancel();
        crate::frontends::signals::kill_started_groups().await;
    });
    let mut finished = futures::stream::iter(pending)
        .map(|task| {
            let ctx = ctx.clone();
            async move {
                // A task not started when the batch is stopped stays to be run again.
                if ctx.cancel.is_cancelled() {
                    return None;
                }
                let span = tracing::info_span!("task", id = %task.id);
                Some(tracing::Instrument::instrument(run_task(ctx, task), span).await)
            }
        })
        .buffer_unordered(jobs.max(1));
    let mut failure = None;
    while let Some(result) = finished.next().await {
        let Some(result) = result else { continue };
        let file = results.clone();
        let line = result.clone();
        let written = tokio::task::spawn_blocking(move || file.append(&line))
            .await
            .unwrap_or_else(|e| {
                Err(BatchError::Setup(format!(
                    "the results writer stopped: {e}"
                )))
            });
        if let Err(error) = written {
            failure.get_or_insert(error);
        }
        ctx.progress.finished(&result);
    }
    watcher.abort();
    failure.map_or(Ok(()), Err)
}
