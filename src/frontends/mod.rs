//! What the binary does with its arguments: set-up shared by every mode (settings,
//! logging, model selection) and the headless run.

pub mod acp;
pub mod batch;
pub mod headless;
pub mod interactive;
mod logging;
pub mod mcp_serve;
pub mod options;
pub mod prompt;
pub mod repl;
pub mod sessions;
pub mod signals;
pub mod slash;
pub mod startup;
pub mod stdin;
pub mod trace;
pub mod trajectory_path;
pub mod trust;
pub mod worktree;

pub use logging::{init_logging, LogGuard};

use std::path::PathBuf;
use std::sync::Arc;

use actix::prelude::*;

use crate::actors::session::{EndReason, SessionHandle, SessionOptions};
use crate::frontends::headless::{
    json_report, stream_result, HeadlessFront, OutputFormat, RunSummary,
};
use crate::frontends::options::{OutputFormatArg, RunArgs};
use crate::platform::workspace::Workspace;
use crate::protocol::{ApprovalMode, Op, TurnOutcome};
use crate::providers::select::{process_env, select, ModelChoice};
use crate::providers::ModelClient;
use crate::settings::{self, LoadedSettings, Settings};

/// A failure before or outside a turn, printed to stderr.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("{0}")]
    Settings(#[from] settings::SettingsError),
    #[error("workspace: {0}")]
    Workspace(String),
    #[error("{0}")]
    Model(String),
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl AppError {
    /// The error's `type` in a headless run's result (`-o json`, stream-json).
    pub fn kind(&self) -> &'static str {
        match self {
            AppError::Settings(_) => "SettingsError",
            AppError::Workspace(_) => "WorkspaceError",
            AppError::Model(_) => "ModelError",
            AppError::Usage(_) => "UsageError",
            AppError::Io(_) => "IoError",
        }
    }
}

/// The workspace: the current directory plus `--include-directories`.
pub fn workspace(args: &RunArgs) -> Result<Arc<Workspace>, AppError> {
    let cwd = std::env::current_dir()?;
    let mut include = Vec::new();
    for dir in &args.include_directories {
        let dir = settings::expand_tilde(dir);
        let shown = dir.display().to_string();
        match std::fs::metadata(cwd.join(&dir)) {
            Ok(meta) if meta.is_dir() => include.push(dir),
            Ok(_) => {
                return Err(AppError::Usage(format!(
                    "--include-directories: {shown} is not a directory"
                )))
            }
            Err(e) => {
                return Err(AppError::Usage(format!(
                    "--include-directories: {shown}: {e}"
                )))
            }
        }
    }
    let ws = Workspace::new(&cwd, &include).map_err(|e| AppError::Workspace(e.to_string()))?;
    let temp = crate::platform::workspace::project_temp_dir(&settings::troupe_home(), ws.primary());
    ws.with_temp_dir(&temp)
        .map(Arc::new)
        .map_err(|e| AppError::Workspace(format!("project temp directory {}: {e}", temp.display())))
}

/// Settings with the command line's own overrides applied last.
pub fn load_settings(ws: &Workspace, args: &RunArgs) -> Result<LoadedSettings, AppError> {
    let trusted = trust::run_trust(ws, args).is_trusted();
    let loaded = load_layers(ws, args, trusted, &[], "")?;
    // With project hooks left out, the session's first warning says this instead.
    let hooks_say_it =
        || !settings::hook_trust::skipped_project_hooks(ws.primary(), &loaded.settings).is_empty();
    if let Some(notice) = &loaded.settings.trust_notice {
        if !hooks_say_it() {
            eprintln!("{notice}");
        }
    } else if let Some(file) = &loaded.skipped_project_file {
        if !hooks_say_it() {
            eprintln!("{}", settings::trust::skipped_notice(file));
        }
    }
    for error in &loaded.settings.loaded_policy.errors {
        eprintln!("{error}");
    }
    let sandbox = &loaded.settings.sandbox.mode;
    if let Err(e) = crate::platform::sandbox::session::configured_mode(&loaded.settings) {
        return Err(AppError::Usage(format!(
            "sandbox.mode = \"{sandbox}\": {e}"
        )));
    }
    crate::platform::sandbox::session::warn_if_unsandboxed(&loaded.settings);
    Ok(loaded)
}

/// Every settings layer of a run: the files, the environment, then the profile,
/// `extra` (named `extra_origin`), the user's `-c` and the run flags.
pub(crate) fn load_layers(
    ws: &Workspace,
    args: &RunArgs,
    trusted: bool,
    extra: &[String],
    extra_origin: &str,
) -> Result<LoadedSettings, AppError> {
    let profile: Vec<String> = match &args.profile {
        Some(name) => settings::profiles::profile(name)
            .map_err(AppError::Usage)?
            .iter()
            .map(|s| s.to_string())
            .collect(),
        None => Vec::new(),
    };
    let mut overrides = profile.clone();
    overrides.extend(extra.iter().cloned());
    overrides.extend(args.overrides.iter().cloned());
    if let Some(mode) = &args.approval_mode {
        if crate::protocol::ApprovalMode::parse(mode).is_none() {
            return Err(AppError::Usage(format!(
                "--approval-mode: `{mode}` is not one of plan, default, auto_edit, yolo"
            )));
        }
        overrides.push(format!("approval.mode={mode}"));
    }
    if args.yolo {
        overrides.push("approval.mode=yolo".into());
    }
    if let Some(mode) = &args.sandbox {
        if mode
            .parse::<crate::platform::sandbox::SandboxMode>()
            .is_err()
        {
            return Err(AppError::Usage(format!(
                "--sandbox: `{mode}` is not one of workspace-write, read-only, off"
            )));
        }
        overrides.push(format!("sandbox.mode=\"{mode}\""));
    }
    if args.checkpointing {
        overrides.push("general.checkpointing=true".into());
    }
    if args.screen_reader {
        overrides.push("ui.screen_reader=true".into());
    }
    let policy = args.policy.settings().map(|(_, key, values)| (key, values));
    let extensions = ("extensions.only", args.extensions.as_slice());
    for (key, values) in policy.into_iter().chain([extensions]) {
        let values: Vec<String> = values
            .iter()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect();
        if !values.is_empty() {
            overrides.push(format!("{key}={}", toml::Value::from(values)));
        }
    }
    if let Some(model) = &args.model {
        overrides.push(format!("model.name=\"{}\"", model.replace('"', "")));
    }
    let mut loaded = settings::load_in(ws.primary(), &overrides, trusted)?;
    if let Some(name) = &args.profile {
        relabel(
            &mut loaded,
            &profile,
            &settings::profiles::origin_label(name),
        );
    }
    relabel(&mut loaded, extra, extra_origin);
    Ok(loaded)
}

/// Names the settings `entries` set by `label` instead of `flag -c …` (where nothing
/// later set them again).
fn relabel(loaded: &mut LoadedSettings, entries: &[String], label: &str) {
    for entry in entries {
        let key = entry.split_once('=').map_or("", |(k, _)| k.trim());
        if let Some(origin) = loaded.origins.get_mut(key) {
            if *origin == format!("flag -c {entry}") {
                *origin = label.to_string();
            }
        }
    }
}

/// Picks the model client: `--fake-responses` → scripted; otherwise the configured
/// provider; `--record-responses` records what it answers.
pub fn select_model(args: &RunArgs, settings: &Settings) -> Result<Arc<dyn ModelClient>, AppError> {
    let choice = ModelChoice {
        fake_responses: args.fake_responses.as_deref(),
        record_responses: args.record_responses.as_deref(),
        env: &process_env,
    };
    select(settings, &choice).map_err(|e| AppError::Model(e.to_string()))
}

/// The exit code of a run stopped by loop detection.
pub const LOOP_EXIT_CODE: i32 = 55;

/// Runs one headless turn and returns the process exit code. With `-o json` or
/// `stream-json`, a run that fails before or outside its turn still prints its result
/// on stdout, with the error ([`headless::print_failure`]); the message goes to stderr
/// as in text mode.
pub fn run_headless(args: &RunArgs, prompt: String) -> Result<i32, AppError> {
    let format = match args.output_format {
        OutputFormatArg::Text => OutputFormat::Text,
        OutputFormatArg::Json => OutputFormat::Json,
        OutputFormatArg::StreamJson => OutputFormat::StreamJson,
    };
    match headless_summary(args, prompt, format) {
        Ok(Ok(summary)) => Ok(report(&summary, format)),
        Ok(Err(failure)) => {
            eprintln!("{}", failure.message);
            headless::print_failure(format, "SessionError", &failure.message, failure.code);
            Ok(failure.code)
        }
        Err(e) => {
            headless::print_failure(format, e.kind(), &e.to_string(), 1);
            Err(e)
        }
    }
}

/// [`run_headless`] up to its report: the summary, or the session that could not
/// start.
fn headless_summary(
    args: &RunArgs,
    prompt: String,
    format: OutputFormat,
) -> Result<Result<RunSummary, crate::platform::sessions::plan::PlanFailure>, AppError> {
    let ws = workspace(args)?;
    let mut loaded = load_settings(&ws, args)?;
    let _guard = init_logging(&loaded.settings, args.log_file.as_deref());
    let model = select_model(args, &loaded.settings)?;
    let warnings = startup::meet_server(&ws, args, &mut loaded, &model)?;
    let plan = match sessions::plan_or_failure(args, &loaded.settings, &ws)? {
        Ok(plan) => plan,
        Err(failure) => return Ok(Err(failure)),
    };
    let summary = run_turn_with(
        ws,
        Arc::new(loaded.settings),
        model,
        stdin::with_piped_input(prompt),
        format,
        args.log_requests.clone(),
        args.trace.is_some(),
        Some(plan),
        warnings,
        true,
        args.trajectory.clone(),
    )?;
    if let Some(path) = &args.trace {
        trace::write(path, &summary.calls)?;
    }
    Ok(Ok(summary))
}

/// Starts a session with a headless front end, runs one prompt, returns the summary.
pub fn run_turn(
    ws: Arc<Workspace>,
    settings: Arc<Settings>,
    model: Arc<dyn ModelClient>,
    prompt: String,
    format: OutputFormat,
    request_log: Option<PathBuf>,
    keep_calls: bool,
) -> Result<RunSummary, AppError> {
    run_turn_with(
        ws,
        settings,
        model,
        prompt,
        format,
        request_log,
        keep_calls,
        None,
        Vec::new(),
        false,
        None,
    )
}

/// [`run_turn`], recording into (and resuming from) `plan`'s session, with the
/// `warnings` of the start-up reported as the session's own; with `exit_next` (the
/// process ends right after, as a `-p` run does) the session ends by
/// [`SessionHandle::shutdown_before_exit`].
#[allow(clippy::too_many_arguments)]
pub fn run_turn_with(
    ws: Arc<Workspace>,
    settings: Arc<Settings>,
    model: Arc<dyn ModelClient>,
    prompt: String,
    format: OutputFormat,
    request_log: Option<PathBuf>,
    keep_calls: bool,
    plan: Option<crate::platform::sessions::plan::SessionPlan>,
    warnings: Vec<String>,
    exit_next: bool,
    trajectory: Option<PathBuf>,
) -> Result<RunSummary, AppError> {
    let mode = ApprovalMode::parse(&settings.approval.mode).unwrap_or_default();
    let model_name = settings.model.name.clone();
    let model_name_for_report = model_name.clone();
    let test_tools = crate::platform::test_hooks::enabled();
    let system = System::new();
    system.block_on(async move {
        let mut front = HeadlessFront::new(format, mode.as_str(), keep_calls);
        if exit_next && format != OutputFormat::Silent {
            // A slow start names the MCP servers it waits for (stderr is the run's).
            crate::mcp::hub::tell_slow_start();
        }
        for warning in warnings {
            front.on_warning(&warning);
        }
        let session = SessionHandle::start(SessionOptions {
            workspace: ws,
            settings,
            model,
            model_name,
            approval_mode: mode,
            request_log,
            test_tools,
            editor_files: None,
            plan,
            call_progress: format.shows_call_progress(),
            wait_for_mcp: true,
            interactive: false,
            trajectory,
        })
        .await
        .map_err(|e| AppError::Usage(e.to_string()))?;
        let ending = Ending {
            session: &session,
            exit_next,
            model: &model_name_for_report,
        };
        let mut signals = signals::Signals::install();
        let cancel = tokio_util::sync::CancellationToken::new();
        let quiet = format == OutputFormat::Silent;
        let prepared = tokio::select! {
            prepared = prompt::prepare(prompt, &session, cancel.clone(), quiet) => prepared,
            number = signals.first() => {
                cancel.cancel();
                signals::kill_started_groups().await;
                return Ok(ending.before_turn(TurnOutcome::Cancelled, Some(number)).await);
            }
        };
        match prepared {
            Ok(prompt::Prepared::Turn(op)) => {
                session.submit(op);
            }
            Ok(prompt::Prepared::Reply(text)) => {
                headless::print_reply(format, &text);
                let outcome = TurnOutcome::Completed { response: text.clone() };
                let mut summary = ending.before_turn(outcome, None).await;
                summary.response = text;
                return Ok(summary);
            }
            Err(e) => {
                ending.end().await;
                return Err(AppError::Usage(e));
            }
        }
        let summary = tokio::select! {
            summary = headless::drive(&session, &mut front) => summary
                .ok_or_else(|| AppError::Usage("the session ended without finishing the turn".into())),
            number = signals.first() => {
                tracing::warn!(signal = number, "signalled: cancelling the turn");
                signals::kill_started_groups().await;
                session.submit(Op::Cancel);
                let drained = tokio::time::timeout(signals::REPORT_GRACE, headless::drive(&session, &mut front));
                let mut summary = match drained.await {
                    Ok(Some(summary)) => summary,
                    _ => empty_summary(session.session_id(), &model_name_for_report, TurnOutcome::Cancelled),
                };
                summary.interrupted_by = Some(number);
                ending.end().await;
                signals::kill_started_groups().await;
                Ok(summary)
            }
        };
        ending.end().await;
        summary
    })
}

/// How a headless run's session ends: with `exit_next` (the process ends right after,
/// a `-p` run) its idle threads are left to the exit.
struct Ending<'a> {
    session: &'a SessionHandle,
    exit_next: bool,
    model: &'a str,
}

impl Ending<'_> {
    async fn end(&self) {
        match self.exit_next {
            true => self.session.shutdown_before_exit(EndReason::Exit).await,
            false => self.session.shutdown(EndReason::Exit).await,
        }
    }

    /// Ends a run that ended before (or without) its turn, and its summary.
    async fn before_turn(&self, outcome: TurnOutcome, signal: Option<i32>) -> RunSummary {
        self.end().await;
        let mut summary = empty_summary(self.session.session_id(), self.model, outcome);
        summary.interrupted_by = signal;
        summary
    }
}

/// The summary of a run that ended before (or without) its turn.
pub(crate) fn empty_summary(session_id: &str, model: &str, outcome: TurnOutcome) -> RunSummary {
    RunSummary {
        session_id: session_id.to_string(),
        model: model.to_string(),
        outcome,
        response: String::new(),
        stats: Default::default(),
        tokens_estimated: false,
        calls: Vec::new(),
        elapsed: std::time::Duration::ZERO,
        turn_elapsed: std::time::Duration::ZERO,
        turn_cpu: std::time::Duration::ZERO,
        interrupted_by: None,
        refused: Vec::new(),
        unmet: None,
        warnings: Vec::new(),
    }
}

/// Prints the end of a run for `format` and returns the exit code.
pub fn report(summary: &RunSummary, format: OutputFormat) -> i32 {
    match format {
        OutputFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&json_report(summary)).unwrap_or_default()
        ),
        OutputFormat::StreamJson => println!("{}", stream_result(summary)),
        OutputFormat::Text | OutputFormat::Transcript => {
            if !summary.response.ends_with('\n') && !summary.response.is_empty() {
                println!();
            }
        }
        OutputFormat::Silent => {}
    }
    let code = match (summary.interrupted_by, exit_code(&summary.outcome)) {
        (Some(signal), _) => 128 + signal,
        (None, 0) if !summary.refused.is_empty() => headless::REFUSED_EXIT_CODE,
        (None, 0) if summary.unmet.is_some() => headless::UNMET_EXIT_CODE,
        (None, code) => code,
    };
    if code != 0 && format != OutputFormat::Json {
        let message = json_report(summary)["error"]["message"]
            .as_str()
            .unwrap_or("")
            .to_string();
        // The message may quote a server, a hook or the model.
        eprintln!(
            "troupe: {}",
            crate::engine::sanitize::for_terminal(&message)
        );
    }
    code
}

/// 0 on success; 1 on failure; 53 when the turn limit was hit; 55 when the model was
/// stopped in a loop; 130 when cancelled. (A finished turn with refused calls exits
/// [`headless::REFUSED_EXIT_CODE`], one that did not do what was asked
/// [`headless::UNMET_EXIT_CODE`], decided by [`report`].)
pub fn exit_code(outcome: &TurnOutcome) -> i32 {
    match outcome {
        TurnOutcome::Completed { .. } => 0,
        TurnOutcome::Failed { .. } => 1,
        TurnOutcome::MaxTurns { .. } => 53,
        TurnOutcome::LoopDetected { .. } => LOOP_EXIT_CODE,
        TurnOutcome::Cancelled => 130,
    }
}
