//! What a session is set up from: the system prompt (built in, or a file), where
//! context files are looked for, and the saved "Always allow" rules.

use std::path::PathBuf;

use super::SessionError;
use crate::engine::prompt::{self, SystemPrompt};
use crate::engine::text::iso8601;
use crate::platform::context_files::{git_root, ContextConfig};
use crate::platform::workspace::Workspace;
use crate::protocol::AllowRule;
use crate::settings::Settings;

/// The "Always allow" rules of `approval.allowed`: origin `saved` when they are the
/// user file's own, else `from <where they came from>`.
pub fn saved_allow_rules(settings: &Settings) -> Vec<AllowRule> {
    // Rules the user file holds are the saved ones; a project file, an environment
    // variable or a `-c` flag gives rules for this run, named by where they came from.
    let origin = match settings.approval.allowed_is_saved {
        true => SAVED_ORIGIN.to_string(),
        false => format!("from {}", settings.approval.allowed_origin),
    };
    settings
        .approval
        .allowed
        .iter()
        .filter_map(|text| crate::engine::policy::parse_rule(text))
        .map(|(tool, key)| AllowRule {
            tool,
            key,
            origin: origin.clone(),
        })
        .collect()
}

/// The origin of allow rules loaded from (and saved to) `approval.allowed`.
pub const SAVED_ORIGIN: &str = "saved";

/// The environment variable naming a file that replaces the built-in system prompt
/// (as gemini-cli's `GEMINI_SYSTEM_MD`): a path, or `1`/`true` for
/// `<troupe home>/system.md`. It wins over `model.system_prompt_file`.
pub const SYSTEM_MD_ENV: &str = "TROUPE_SYSTEM_MD";

/// The session's system prompt template and environment (context files come later);
/// `skills`, the skills `activate_skill` offers, are listed where the template says
/// `{skills}` (gemini-cli's "Available Agent Skills").
pub(super) fn system_prompt(
    settings: &Settings,
    workspace: &Workspace,
    tools: &[crate::protocol::content::FunctionDeclaration],
    skills: &[crate::settings::skills::Skill],
) -> Result<SystemPrompt, SessionError> {
    let from_env = std::env::var(SYSTEM_MD_ENV)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"))
        .map(|v| {
            if v == "1" || v.eq_ignore_ascii_case("true") {
                crate::settings::troupe_home().join("system.md")
            } else if let Some(rest) = v.strip_prefix("~/") {
                crate::settings::home_dir().join(rest)
            } else {
                PathBuf::from(v)
            }
        });
    let file = from_env.or_else(|| {
        (!settings.model.system_prompt_file.is_empty())
            .then(|| PathBuf::from(&settings.model.system_prompt_file))
    });
    let template = match file {
        None if settings.model.prompt_style == "short" => prompt::SHORT_TEMPLATE.to_string(),
        None => prompt::DEFAULT_TEMPLATE.to_string(),
        Some(path) => std::fs::read_to_string(&path)
            .map_err(|source| SessionError::SystemPrompt { path, source })?,
    };
    Ok(SystemPrompt {
        template,
        tools: tools.to_vec(),
        date: iso8601(std::time::SystemTime::now())[..10].to_string(),
        os: std::env::consts::OS.to_string(),
        roots: workspace
            .roots()
            .iter()
            .map(|r| r.display().to_string())
            .collect(),
        git: git_root(workspace.primary()).is_some(),
        skills: crate::settings::skills::prompt_section(skills),
    })
}

/// Where the session looks for context files.
pub(super) fn context_config(settings: &Settings, workspace: &Workspace) -> ContextConfig {
    let global_dir = if settings.context.global_dir.is_empty() {
        crate::settings::troupe_home()
    } else {
        PathBuf::from(&settings.context.global_dir)
    };
    ContextConfig {
        file_names: settings.context.file_names.clone(),
        global_dir,
        extension_files: settings.loaded_extensions.context_files(),
        roots: workspace.roots().to_vec(),
    }
}

/// When this process started (its temp files cannot be older).
pub(super) fn process_start() -> std::time::SystemTime {
    static START: std::sync::OnceLock<std::time::SystemTime> = std::sync::OnceLock::new();
    *START.get_or_init(std::time::SystemTime::now)
}
