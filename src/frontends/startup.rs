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
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let facts = runtime
        .block_on(model.discover(&loaded.settings.model.name))
        .map_err(|e| AppError::Model(e.to_string()))?;
    let warnings = unlisted_warning(&facts).into_iter().collect();
    if let Some((tokens, source)) = &facts.context_window {
        tracing::info!(tokens, %source, "the server's context window");
        let choice = for_server_window(loaded, args.profile.is_some(), &facts.model, *tokens);
        if !choice.overrides.is_empty() {
            *loaded = super::load_layers(
                ws,
                args,
                loaded.trusted,
                &choice.overrides,
                SERVER_WINDOW_ORIGIN,
            )?;
        }
        if let Some(notice) = choice.notice {
            eprintln!("troupe: {notice}");
        }
    }
    loaded.settings.model.name = facts.model;
    Ok(warnings)
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
