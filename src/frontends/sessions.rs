//! The session flags of the binary: `--list-sessions`, `--delete-session`, and the
//! session a run records into (`--resume`, `--session-id`, `--session-file`), with
//! retention applied at start.

use std::io::Write;

use super::{workspace, AppError};
use crate::frontends::options::RunArgs;
use crate::platform::sessions::plan::{plan, PlanFailure, SessionArgs, SessionPlan};
use crate::platform::sessions::{age_text, list_text, retention, SessionStore};
use crate::platform::workspace::Workspace;
use crate::settings::{self, Settings};

/// The session store of the workspace's project, in the troupe home, with gemini-cli's
/// sessions of the project listed beside Troupe's (read-only).
pub fn store(ws: &Workspace) -> Result<SessionStore, AppError> {
    SessionStore::open(&settings::troupe_home(), ws.primary())
        .map(|store| {
            store.with_gemini_cli(
                &crate::platform::sessions::gemini_cli::gemini_cli_home(),
                ws.primary(),
            )
        })
        .map_err(|e| AppError::Usage(e.to_string()))
}

/// `--list-sessions`: prints gemini-cli's list; never calls a model.
pub fn list(args: &RunArgs) -> Result<i32, AppError> {
    let ws = workspace(args)?;
    let store = store(&ws)?;
    let text = list_text(&store.list(), None);
    let mut out = std::io::stdout();
    let _ = write!(out, "{text}");
    let _ = out.flush();
    Ok(0)
}

/// `--delete-session N|ID`: gemini-cli's lines; failures go to stderr, exit 0.
pub fn delete(args: &RunArgs, which: &str) -> Result<i32, AppError> {
    let ws = workspace(args)?;
    let store = store(&ws)?;
    let sessions = store.list();
    if sessions.is_empty() {
        eprint!("No sessions found for this project.");
        return Ok(0);
    }
    let position = sessions
        .iter()
        .position(|s| s.session_id == which)
        .or_else(|| {
            which
                .parse::<usize>()
                .ok()
                .filter(|n| *n >= 1 && *n <= sessions.len())
                .map(|n| n - 1)
        });
    let Some(index) = position else {
        eprint!("Invalid session identifier \"{which}\". Use --list-sessions to see available sessions.");
        return Ok(0);
    };
    let session = &sessions[index];
    if session.gemini_cli {
        eprint!(
            "Session {} is gemini-cli's: Troupe does not delete it (gemini --delete-session does).",
            index + 1
        );
        return Ok(0);
    }
    if store.is_locked(&session.session_id) {
        eprint!("Cannot delete the current active session.");
        return Ok(0);
    }
    match store.delete(session) {
        Ok(()) => {
            print!(
                "Deleted session {}: {} ({})",
                index + 1,
                crate::engine::sanitize::one_line(&session.title),
                age_text(session.modified, std::time::SystemTime::now())
            );
            let _ = std::io::stdout().flush();
        }
        Err(e) => eprint!("Failed to delete session: {e}"),
    }
    Ok(0)
}

/// The session this run records into; `Err(code)` when it cannot start (the message
/// is printed). Warnings go to stderr. Retention runs after the choice, so the
/// current session is never a candidate.
pub fn plan_for(
    args: &RunArgs,
    settings: &Settings,
    ws: &Workspace,
) -> Result<Result<SessionPlan, i32>, AppError> {
    Ok(plan_or_failure(args, settings, ws)?.map_err(|failure| {
        eprintln!("{}", failure.message);
        failure.code
    }))
}

/// [`plan_for`], the failure handed back rather than printed.
pub fn plan_or_failure(
    args: &RunArgs,
    settings: &Settings,
    ws: &Workspace,
) -> Result<Result<SessionPlan, PlanFailure>, AppError> {
    if settings.general.checkpointing
        && std::process::Command::new("git")
            .arg("--version")
            .output()
            .is_err()
    {
        return Err(AppError::Usage(
            crate::platform::sessions::checkpoint::CheckpointError::NoGit.to_string(),
        ));
    }
    let store = store(ws)?;
    // A long session file must not keep SIGINT/SIGTERM/SIGHUP from ending the run: from
    // here on they are noted, the load stops, and the session's own listeners (once
    // they exist) find them.
    crate::platform::interrupt::install();
    let session_args = SessionArgs {
        resume: args
            .resume
            .clone()
            .or_else(|| args.continue_latest.then(|| "latest".to_string())),
        session_id: args.session_id.clone(),
        session_file: args.session_file.clone(),
    };
    let planned = match plan(store, &session_args) {
        Ok(p) => p,
        Err(failure) => return Ok(Err(failure)),
    };
    for warning in &planned.warnings {
        eprintln!("Warning: {warning}");
    }
    if planned.interrupted_calls > 0 {
        eprintln!(
            "Warning: {} tool call(s) were interrupted when the session ended; the model is told so.",
            planned.interrupted_calls
        );
    }
    retention::apply(
        &planned.store,
        &planned.session_id,
        settings.sessions.max_age_days,
        settings.sessions.max_count,
    );
    Ok(Ok(planned))
}
