//! `troupe` without `-p`: the interactive session in the current directory.

use std::sync::Arc;

use crate::actors::session::SessionOptions;
use crate::frontends::options::RunArgs;
use crate::frontends::repl::{start_actors, Repl};
use crate::protocol::ApprovalMode;
use crate::settings;

use super::{init_logging, load_settings, select_model, workspace, AppError};

/// Runs the interactive session until the user leaves; returns the exit code.
pub fn run(args: &RunArgs) -> Result<i32, AppError> {
    let ws = workspace(args)?;
    crate::frontends::trust::prompt_if_needed(&ws, args)?;
    let mut loaded = load_settings(&ws, args)?;
    let _guard = init_logging(&loaded.settings, args.log_file.as_deref());
    let model = select_model(args, &loaded.settings)?;
    for warning in super::startup::meet_server(&ws, args, &mut loaded, &model)? {
        eprintln!(
            "troupe: {}",
            crate::engine::sanitize::for_terminal(&warning)
        );
    }
    crate::frontends::repl::remember_settings(&loaded);
    let plan = match crate::frontends::sessions::plan_for(args, &loaded.settings, &ws)? {
        Ok(plan) => plan,
        Err(code) => return Ok(code),
    };
    let settings = Arc::new(loaded.settings);
    let request_log = args.log_requests.clone();
    let trajectory = args.trajectory.clone();
    let options = move || SessionOptions {
        workspace: ws,
        settings: settings.clone(),
        model,
        model_name: settings.model.name.clone(),
        approval_mode: ApprovalMode::parse(&settings.approval.mode).unwrap_or_default(),
        request_log,
        test_tools: crate::platform::test_hooks::enabled(),
        editor_files: None,
        plan: Some(plan),
        call_progress: true,
        // The REPL shows the MCP servers' status rather than wait for them.
        wait_for_mcp: false,
        interactive: true,
        trajectory,
    };
    if args.trace.is_some() {
        let _ = crate::frontends::repl::bridge::TRACE_CALLS.set(std::sync::Mutex::new(Vec::new()));
    }
    let home = settings::troupe_home();
    let (link, events) =
        start_actors(options, home.join("config.toml")).map_err(AppError::Usage)?;
    move_old_prompt_history(&home);
    // Prompt history (Ctrl+R searches it) is kept per project.
    let history = home
        .join("histories")
        .join(crate::platform::workspace::project_id(&link.workspace));
    let session_id = link.session_id.clone();
    let repl = Repl::new(link, events, history).map_err(AppError::Usage)?;
    // `-i PROMPT` or the words after the options: the first request.
    let first = args
        .prompt_interactive
        .clone()
        .or_else(|| (!args.query.is_empty()).then(|| args.query.join(" ")));
    let code = repl.run(first);
    if let Some(entered) = &super::worktree::current() {
        println!("{}", super::worktree::farewell(entered, &session_id));
    }
    if let (Some(path), Some(calls)) = (
        &args.trace,
        crate::frontends::repl::bridge::TRACE_CALLS.get(),
    ) {
        let calls = calls.lock().map(|c| c.clone()).unwrap_or_default();
        super::trace::write(path, &calls)?;
    }
    Ok(code)
}

/// The REPL's line history was the file `<troupe home>/history`, which is now the
/// directory of checkpoint repositories (`history/<project slug>`, as gemini-cli's); an
/// old file there is moved aside once (to `prompt_history`).
fn move_old_prompt_history(home: &std::path::Path) {
    let new = home.join("prompt_history");
    let old = home.join("history");
    if old.is_file() && !new.exists() {
        let _ = std::fs::rename(&old, &new);
    }
}
