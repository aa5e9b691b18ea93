//! One task of a batch: its workspace, its settings, and its session, driven through
//! the handle like a `-p` run, until it ends, times out or the batch is stopped.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::copy::{self, Placement};
use super::progress::Progress;
use super::results::{TaskResult, TaskStatus, Tokens};
use super::tasks::Task;
use crate::actors::session::{EndReason, SessionHandle, SessionOptions};
use crate::frontends::headless::{self, HeadlessFront, OutputFormat, RunSummary};
use crate::frontends::options::RunArgs;
use crate::frontends::startup::ServerMeeting;
use crate::frontends::{prompt, signals, trust};
use crate::platform::workspace::Workspace;
use crate::protocol::{ApprovalMode, Op, TurnOutcome};
use crate::providers::ModelClient;
use crate::settings::Settings;

/// Where every task's model client comes from.
#[derive(Clone)]
pub enum ModelSource {
    /// One client for every task (one connection pool, one request limit, one pause
    /// after a 429).
    Shared(Arc<dyn ModelClient>),
    /// A client per task, from the task's settings (`--fake-responses`: each task
    /// replays the script from its start).
    PerTask,
}

/// What every task of a batch shares.
pub struct BatchContext {
    /// The batch's run flags: every task's defaults.
    pub args: RunArgs,
    pub models: ModelSource,
    /// What the model server said, applied to every task's settings.
    pub meeting: Option<ServerMeeting>,
    /// The output folder (`--out`).
    pub out: PathBuf,
    /// The tasks file's folder, against which relative workspaces resolve.
    pub base: PathBuf,
    pub cwd: PathBuf,
    pub placement: Placement,
    /// Cancelled when the batch is stopped (SIGINT): running tasks end `cancelled`.
    pub cancel: CancellationToken,
    pub progress: Arc<Progress>,
}

/// A task's session, ready to start.
struct Prepared {
    workspace: Arc<Workspace>,
    settings: Arc<Settings>,
    model: Arc<dyn ModelClient>,
    mode: ApprovalMode,
}

/// Runs `task` to its end; never fails: a task that cannot run is an `error` result.
pub async fn run_task(ctx: Arc<BatchContext>, task: Task) -> TaskResult {
    let started = Instant::now();
    let source = absolute(&task.source(&ctx.base, &ctx.cwd));
    let placement = if task.in_place {
        Placement::InPlace
    } else {
        ctx.placement
    };
    let dest = match placement {
        Placement::InPlace => source.clone(),
        _ => ctx.out.join("workspaces").join(&task.id),
    };
    let task_dir = ctx.out.join("tasks").join(&task.id);
    let ms = |started: Instant| started.elapsed().as_millis() as u64;
    let (from, to, skip) = (source.clone(), dest.clone(), ctx.out.clone());
    let prepared = tokio::task::spawn_blocking(move || {
        std::fs::create_dir_all(&task_dir).map_err(|e| format!("{}: {e}", task_dir.display()))?;
        copy::prepare(&from, &to, placement, &skip)
    })
    .await
    .unwrap_or_else(|e| Err(format!("the copy stopped: {e}")));
    if let Err(error) = prepared {
        return TaskResult::failed(&task.id, dest, error, ms(started));
    }
    // Settings files, the trust store, the workspace's paths: file work, off the
    // arbiter every session shares.
    let (c, t, from, to) = (ctx.clone(), task.clone(), source.clone(), dest.clone());
    let prepared = tokio::task::spawn_blocking(move || prepare_session(&c, &t, &from, &to))
        .await
        .unwrap_or_else(|e| Err(format!("the task's set-up stopped: {e}")));
    let session = match prepared {
        Ok(prepared) => prepared,
        Err(error) => return TaskResult::failed(&task.id, dest, error, ms(started)),
    };
    let trajectory = ctx.out.join("tasks").join(&task.id).join("trajectory.json");
    ctx.progress.started(&task.id);
    let ran = drive_session(&ctx, &task, session, &trajectory).await;
    ctx.progress.stopped();
    let (summary, stopped_by) = match ran {
        Ok(ran) => ran,
        Err(error) => return TaskResult::failed(&task.id, dest, error, ms(started)),
    };
    let diff_stats = match placement {
        Placement::InPlace => None,
        _ => {
            let (from, to, skip) = (source, dest.clone(), ctx.out.clone());
            tokio::task::spawn_blocking(move || copy::diff_stats(&from, &to, &skip))
                .await
                .ok()
        }
    };
    let mut result = result_of(&task.id, &summary, stopped_by, dest, ms(started));
    result.diff_stats = diff_stats;
    result.trajectory = trajectory.exists().then_some(trajectory);
    result
}

/// The task's flags: the batch's, with the task's own fields on top.
fn task_args(batch: &RunArgs, task: &Task) -> RunArgs {
    let mut args = batch.clone();
    if let Some(mode) = &task.approval_mode {
        args.approval_mode = Some(mode.clone());
        args.yolo = false;
    }
    if let Some(model) = &task.model {
        args.model = Some(model.clone());
    }
    if let Some(profile) = &task.profile {
        args.profile = Some(profile.clone());
    }
    if let Some(sandbox) = &task.sandbox {
        args.sandbox = Some(sandbox.clone());
    }
    if let Some(turns) = task.max_turns {
        args.overrides.push(format!("model.max_turns={turns}"));
    }
    args
}

/// The task's workspace (trusted as the one it was copied from is), settings and
/// model client.
fn prepare_session(
    ctx: &BatchContext,
    task: &Task,
    source: &Path,
    dest: &Path,
) -> Result<Prepared, String> {
    let args = task_args(&ctx.args, task);
    let original = Workspace::new(source, &[]).map_err(|e| e.to_string())?;
    let trusted = trust::run_trust(&original, &args).is_trusted();
    let home = crate::settings::troupe_home();
    let workspace = Workspace::new(dest, &[]).map_err(|e| e.to_string())?;
    let temp = crate::platform::workspace::project_temp_dir(&home, workspace.primary());
    let workspace = Arc::new(
        workspace
            .with_temp_dir(&temp)
            .map_err(|e| format!("project temp directory {}: {e}", temp.display()))?,
    );
    let mut loaded = crate::frontends::load_layers(&workspace, &args, trusted, &[], "")
        .map_err(|e| e.to_string())?;
    if task.timeout_s.is_some() {
        // The task's own budget bounds it: the turn limit would cut it sooner.
        loaded.settings.model.turn_time_limit_secs = 0;
    }
    if let Some(meeting) = &ctx.meeting {
        meeting
            .apply(&workspace, &args, &mut loaded)
            .map_err(|e| e.to_string())?;
        if let Some(model) = &args.model {
            loaded.settings.model.name = model.clone();
        }
    }
    crate::platform::sandbox::session::configured_mode(&loaded.settings)
        .map_err(|e| format!("sandbox.mode = \"{}\": {e}", loaded.settings.sandbox.mode))?;
    let model = match &ctx.models {
        ModelSource::Shared(model) => model.clone(),
        ModelSource::PerTask => {
            crate::frontends::select_model(&args, &loaded.settings).map_err(|e| e.to_string())?
        }
    };
    let mode = ApprovalMode::parse(&loaded.settings.approval.mode).unwrap_or_default();
    Ok(Prepared {
        workspace,
        settings: Arc::new(loaded.settings),
        model,
        mode,
    })
}

/// Why a task was stopped before its turn ended by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StoppedBy {
    Timeout,
    Batch,
}

/// Starts the task's session, runs its prompt, and ends the session; the summary and
/// whether the task was stopped.
async fn drive_session(
    ctx: &BatchContext,
    task: &Task,
    prepared: Prepared,
    trajectory: &Path,
) -> Result<(RunSummary, Option<StoppedBy>), String> {
    let mut front = HeadlessFront::new(OutputFormat::Silent, prepared.mode.as_str(), false);
    let session = SessionHandle::start(SessionOptions {
        workspace: prepared.workspace,
        model_name: prepared.settings.model.name.clone(),
        settings: prepared.settings,
        model: prepared.model,
        approval_mode: prepared.mode,
        request_log: None,
        test_tools: crate::platform::test_hooks::enabled(),
        editor_files: None,
        plan: None,
        call_progress: false,
        wait_for_mcp: true,
        interactive: false,
        trajectory: Some(trajectory.to_path_buf()),
    })
    .await
    .map_err(|e| e.to_string())?;
    let ran = run_prompt(ctx, task, &session, &mut front).await;
    session.shutdown(EndReason::Exit).await;
    ran
}

async fn run_prompt(
    ctx: &BatchContext,
    task: &Task,
    session: &SessionHandle,
    front: &mut HeadlessFront,
) -> Result<(RunSummary, Option<StoppedBy>), String> {
    match prompt::prepare(task.prompt.clone(), session, ctx.cancel.child_token(), true).await? {
        prompt::Prepared::Turn(op) => {
            session.submit(op);
        }
        prompt::Prepared::Reply(text) => {
            let outcome = TurnOutcome::Completed {
                response: text.clone(),
            };
            let mut summary = crate::frontends::empty_summary(session.session_id(), "", outcome);
            summary.response = text;
            return Ok((summary, None));
        }
    }
    let limit = task.timeout_s.map(Duration::from_secs_f64);
    let timer = async {
        match limit {
            Some(limit) => tokio::time::sleep(limit).await,
            None => std::future::pending().await,
        }
    };
    let stopped_by = tokio::select! {
        summary = headless::drive(session, front) => {
            let summary = summary.ok_or("the session ended without finishing the turn")?;
            return Ok((summary, None));
        }
        () = timer => StoppedBy::Timeout,
        () = ctx.cancel.cancelled() => StoppedBy::Batch,
    };
    session.submit(Op::Cancel);
    let drained =
        tokio::time::timeout(signals::REPORT_GRACE, headless::drive(session, front)).await;
    let summary = match drained {
        Ok(Some(summary)) => summary,
        _ => crate::frontends::empty_summary(session.session_id(), "", TurnOutcome::Cancelled),
    };
    Ok((summary, Some(stopped_by)))
}

/// The result line of a task that ran.
fn result_of(
    id: &str,
    summary: &RunSummary,
    stopped_by: Option<StoppedBy>,
    workspace: PathBuf,
    wall_ms: u64,
) -> TaskResult {
    let (status, error) = match (stopped_by, &summary.outcome) {
        (Some(StoppedBy::Timeout), _) => (
            TaskStatus::Timeout,
            Some("the task reached its timeout_s".to_string()),
        ),
        (Some(StoppedBy::Batch), _) => (
            TaskStatus::Cancelled,
            Some("the batch was stopped".to_string()),
        ),
        (None, TurnOutcome::Completed { .. }) => match &summary.unmet {
            Some((unmet, message)) => (TaskStatus::unmet(*unmet), Some(message.clone())),
            None => (TaskStatus::Ok, None),
        },
        (None, TurnOutcome::Cancelled) => {
            (TaskStatus::Cancelled, Some("the turn was cancelled".into()))
        }
        (None, TurnOutcome::MaxTurns { limit }) => (
            TaskStatus::MaxTurns,
            Some(format!(
                "the turn reached its limit of {limit} model rounds"
            )),
        ),
        (None, TurnOutcome::Failed { message }) => (TaskStatus::Error, Some(message.clone())),
        (None, TurnOutcome::LoopDetected { message }) => (TaskStatus::Loop, Some(message.clone())),
    };
    let stats = &summary.stats;
    // The final answer (the last round's text), as `-o json` gives it; what was
    // streamed when the turn ended otherwise.
    let response = match &summary.outcome {
        TurnOutcome::Completed { response } if !response.is_empty() => response.clone(),
        _ => summary.response.clone(),
    };
    TaskResult {
        id: id.to_string(),
        status,
        response,
        turns: stats.requests,
        tool_calls: stats.by_tool.values().map(|t| t.count).sum(),
        tokens: Tokens {
            input: stats.prompt_tokens,
            output: stats.output_tokens,
            cached: stats.cached_tokens,
            total: stats.total_tokens,
        },
        wall_ms,
        workspace,
        diff_stats: None,
        trajectory: None,
        error,
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}
