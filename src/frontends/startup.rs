//! What a run learns from its model server before the session starts: the model to use
//! (the one named, or the server's first), whether the server lists it, and the
//! server's context window, which becomes the run's context window unless the settings
//! name one and, when small, brings the `small` profile (see
//! [`crate::settings::profiles::for_server_window`]).

use std::sync::Arc;

use crate::frontends::options::RunArgs;
use crate::platform::workspace::Workspace;
use crate::providers::{ModelClient, ServerFacts};
use crate::settings::profiles::{for_server_window, SERVER_WINDOW_ORIGIN};
use crate::settings::LoadedSettings;

use super::AppError;

/// Listed models named in the warning about an unlisted one, at most.
const LISTED_SHOWN: usize = 20;

/// Asks the server (an OpenAI-compatible one: see
/// [`crate::providers::openai::discovery`]), fills `model.name`, applies the server's
/// window, and prints the notice of a profile it chose on stderr. Returns the
/// warnings for the run to report (a model the server does not list).
pub fn meet_server(
    ws: &Workspace,
    args: &RunArgs,
    loaded: &mut LoadedSettings,
    model: &Arc<dyn ModelClient>,
) -> Result<Vec<String>, AppError> {
    let meeting = ask_server(args, loaded, model)?;
    meeting.apply(ws, args, loaded)?;
    if let Some(notice) = &meeting.notice {
        eprintln!("troupe: {notice}");
    }
    Ok(meeting.warnings)
}

/// What the server told a run: the model, the settings its window brings, the notice
/// of a profile it chose and the warnings.
#[derive(Debug, Clone, Default)]
pub struct ServerMeeting {
    pub model: String,
    pub overrides: Vec<String>,
    pub notice: Option<String>,
    pub warnings: Vec<String>,
}

impl ServerMeeting {
    /// Applies the meeting to `loaded` (the settings of `ws` and `args`).
    pub fn apply(
        &self,
        ws: &Workspace,
        args: &RunArgs,
        loaded: &mut LoadedSettings,
    ) -> Result<(), AppError> {
        if !self.overrides.is_empty() {
            *loaded = super::load_layers(
                ws,
                args,
                loaded.trusted,
                &self.overrides,
                SERVER_WINDOW_ORIGIN,
            )?;
        }
        loaded.settings.model.name = self.model.clone();
        Ok(())
    }
}

/// Asks the server once (on a runtime of its own: call it outside any) what
/// [`meet_server`] applies.
pub fn ask_server(
    args: &RunArgs,
    loaded: &LoadedSettings,
    model: &Arc<dyn ModelClient>,
) -> Result<ServerMeeting, AppError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let facts = runtime
        .block_on(model.discover(&loaded.settings.model.name))
        .map_err(|e| AppError::Model(e.to_string()))?;
    let mut meeting = ServerMeeting {
        warnings: unlisted_warning(&facts).into_iter().collect(),
        ..ServerMeeting::default()
    };
    if let Some((tokens, source)) = &facts.context_window {
        tracing::info!(tokens, %source, "the server's context window");
        let choice = for_server_window(loaded, args.profile.is_some(), &facts.model, *tokens);
        meeting.overrides = choice.overrides;
        meeting.notice = choice.notice;
    }
    meeting.model = facts.model;
    Ok(meeting)
}

/// The warning for a model the server's listing leaves out (llama.cpp answers with the
/// model it has loaded whatever the name; other servers refuse it).
fn unlisted_warning(facts: &ServerFacts) -> Option<String> {
    let listed = facts.listed.as_ref().filter(|l| !l.is_empty())?;
    if listed.contains(&facts.model) {
        return None;
    }
    let mut names: Vec<&str> = listed
        .iter()
        .take(LISTED_SHOWN)
        .map(String::as_str)
        .collect();
    if listed.len() > LISTED_SHOWN {
        names.push("…");
    }
    Some(format!(
        "the server does not list the model `{}`; it lists: {}. A llama.cpp server answers with the model it has loaded whatever the name; others refuse an unknown one (choose with -m)",
        facts.model,
        names.join(", ")
    ))
}
