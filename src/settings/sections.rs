//! The typed settings, one struct per section of `config/default.toml`, and the checks
//! on values that the types alone do not express.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{Origin, SettingsError};

/// The effective settings, typed.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub model: ModelSettings,
    pub approval: ApprovalSettings,
    pub tools: ToolSettings,
    pub edit: EditSettings,
    pub shell: ShellSettings,
    pub sandbox: SandboxSettings,
    pub environment: EnvironmentSettings,
    pub web_fetch: WebFetchSettings,
    pub context: ContextSettings,
    pub log: LogSettings,
    pub sessions: SessionSettings,
    pub general: GeneralSettings,
    pub mcp: McpSettings,
    pub agents: AgentSettings,
    pub skills: SkillSettings,
    pub extensions: ExtensionSettings,
    pub ui: UiSettings,
    pub policy: super::policy::PolicySettings,
    /// The policy files' rules and those of `tools.allowed` and `mcp.allowed`
    /// (filled by [`super::load_in`]).
    #[serde(skip)]
    pub loaded_policy: super::policy::LoadedPolicy,
    /// `[mcp_servers.NAME]` of the user and project files (not merged key by key).
    #[serde(skip)]
    pub mcp_servers: Vec<crate::settings::mcp::McpServerConfig>,
    /// The servers of an untrusted folder's project file, which was not applied: none
    /// of them starts; they are known only to say why (each is marked `blocked`).
    #[serde(skip)]
    pub untrusted_mcp_servers: Vec<crate::settings::mcp::McpServerConfig>,
    /// gemini-cli's extensions of `~/.gemini/extensions` (filled by
    /// [`super::load_in`]; see `settings::extensions`).
    #[serde(skip)]
    pub loaded_extensions: super::extensions::LoadedExtensions,
    pub hooks: HookSettings,
    /// Whether the workspace is trusted for this run (never read from a file: set by
    /// the loader from `<troupe home>/trusted_folders.toml` or `--skip-trust`). Tools
    /// and extension points that start processes or widen permissions (MCP servers,
    /// hooks, custom commands) must do nothing of the kind when it is false.
    #[serde(skip)]
    pub trusted: bool,
    /// When the folder is listed as trusted but its project configuration changed
    /// since (see [`crate::settings::trust::pin`]): the notice saying which files and how
    /// to trust it again, said once at start (by the hooks' warning when project hooks
    /// are left out, else on its own).
    #[serde(skip)]
    pub trust_notice: Option<String>,
}

/// `[extensions]`: gemini-cli's extensions (see `settings::extensions`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtensionSettings {
    /// `-e/--extensions`: when non-empty, only these extensions are enabled (`none`:
    /// none), whatever the enablement file says.
    pub only: Vec<String>,
}

/// `[skills]`: Agent Skills (`activate_skill`; see `settings::skills`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillSettings {
    pub enabled: bool,
    pub disabled: Vec<String>,
}

/// `[agents]`: subagents, their pool and the tree's budget.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSettings {
    pub enabled: bool,
    pub max_concurrent: usize,
    pub max_depth: u32,
    pub max_per_turn: usize,
    pub token_budget: u64,
    pub overrides: BTreeMap<String, AgentOverride>,
}

/// `[agents.overrides.NAME]`: gemini-cli's per-agent overrides.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentOverride {
    pub enabled: Option<bool>,
    pub model: Option<String>,
    pub max_turns: Option<u32>,
    pub timeout_mins: Option<f64>,
}

/// `[mcp]`: how MCP servers are started.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSettings {
    pub startup_wait_ms: u64,
    /// gemini-cli's `mcp.allowed` (`--allowed-mcp-server-names`): when non-empty, only
    /// these servers start, and their tools run without asking outside plan mode.
    pub allowed: Vec<String>,
}

/// `[hooks]`: read here only so the settings accept them; the hooks module reads each
/// file itself (it needs to know which file a hook came from).
#[derive(Debug, Clone, Deserialize)]
pub struct HookSettings {
    pub enabled: bool,
    pub disabled: Vec<String>,
    pub notifications: bool,
    #[serde(flatten)]
    pub events: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSettings {
    pub provider: String,
    pub name: String,
    pub max_turns: u32,
    pub max_concurrent_requests: usize,
    pub max_output_tokens: u32,
    pub loop_detection: bool,
    pub system_prompt_file: String,
    pub prompt_style: String,
    /// List up to this many of the workspace's files in the first prompt (0: none).
    pub workspace_listing: u32,
    /// The first answer to each prompt must call a tool (a small model otherwise
    /// describes what it would do instead of doing it).
    pub first_answer_calls_a_tool: bool,
    /// Read the workspace files the prompt names before the first answer.
    pub look_up_prompt_names: bool,
    /// After a call succeeds again unchanged, the next answer may not call a tool.
    pub answer_after_repeat: bool,
    /// End a turn after this many seconds (0: never).
    pub turn_time_limit_secs: u64,
    /// Stretch the turn time limit to the server's measured speed.
    pub fit_turn_time_limit: bool,
    /// Put back the files a failed turn edited.
    pub undo_failed_turn: bool,
    /// Offer the tools that edit files only when the prompt asks for a change.
    pub edit_tools_when_asked: bool,
    /// A turn whose prompt asks for a change (or a test run) and that made none is sent
    /// back once, then ends with a status that says so.
    pub check_outcome: bool,
    /// Refuse edits of the test files a prompt names, unless it asks to change tests.
    pub protect_named_tests: bool,
    /// Find the test command the project states (README, Makefile, package.json,
    /// pyproject.toml, Cargo.toml) and tell the model of it in turns about tests.
    pub find_test_command: bool,
    pub temperature: f64,
    pub gemini: EndpointSettings,
    pub openai: EndpointSettings,
    pub network: NetworkSettings,
    pub retry: RetrySettings,
    pub compression: CompressionSettings,
}

/// Where a provider's server is and the key it takes (empty: from the environment).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointSettings {
    pub base_url: String,
    pub api_key: String,
}

/// Timeouts of model requests.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSettings {
    pub connect_timeout_secs: u64,
    pub first_byte_timeout_secs: u64,
    pub idle_timeout_secs: u64,
}

/// How failed model requests are retried.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrySettings {
    pub max_attempts: u32,
    pub max_stream_attempts: u32,
    pub initial_delay_ms: u64,
    pub max_delay_ms: u64,
}

/// When and how history is summarised.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompressionSettings {
    pub threshold: f64,
    pub preserve_fraction: f64,
    pub token_limits: Vec<String>,
    pub default_token_limit: u64,
    pub tool_result_share: f64,
}

impl CompressionSettings {
    /// The context size of `model`: the first `token_limits` entry matching it.
    pub fn token_limit(&self, model: &str) -> u64 {
        self.token_limits
            .iter()
            .filter_map(|entry| parse_token_limit(entry).ok())
            .find(|(pattern, _)| match pattern.strip_suffix('*') {
                Some(prefix) => model.starts_with(prefix),
                None => model == *pattern,
            })
            .map(|(_, limit)| limit)
            .unwrap_or(self.default_token_limit)
    }
}

fn parse_token_limit(entry: &str) -> Result<(&str, u64), String> {
    let (pattern, limit) = entry
        .split_once('=')
        .ok_or_else(|| format!("`{entry}` is not \"model=tokens\""))?;
    let limit = limit
        .trim()
        .parse::<u64>()
        .map_err(|_| format!("`{entry}`: `{}` is not a number of tokens", limit.trim()))?;
    Ok((pattern.trim(), limit))
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalSettings {
    pub mode: String,
    /// Calls allowed without asking, as `tool` or `tool(key)` ("Always allow").
    pub allowed: Vec<String>,
    /// Where `allowed` came from (a file, an environment variable, a `-c` flag).
    #[serde(skip)]
    pub allowed_origin: String,
    /// Whether `allowed` is the user file's own list (or the empty default), so that
    /// its rules are the saved ones; rules from anywhere else apply to this run only
    /// and are never written to the user file.
    #[serde(skip)]
    pub allowed_is_saved: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSettings {
    pub call_timeout_secs: u64,
    pub fs_threads: usize,
    pub actors_per_tool: usize,
    /// Threads (arbiters) of their own for the actors of all tools; 0 (the default) puts
    /// them on the Scheduler's arbiter.
    pub tool_threads: usize,
    /// Calls of one batch in flight at once; the rest are queued in call order.
    pub max_in_flight: usize,
    pub core: Vec<String>,
    pub exclude: Vec<String>,
    /// gemini-cli's `tools.allowed` (`--allowed-tools`): `tool` or
    /// `run_shell_command(prefix)` calls that run without asking.
    pub allowed: Vec<String>,
    pub compact_declarations: bool,
}

/// The `[edit]` section: how failed edits are corrected.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditSettings {
    pub correction: bool,
    pub use_model: bool,
    pub correction_timeout_secs: u64,
    pub correction_cache_entries: usize,
    /// Refuse a `replace` or `write_file` that would turn a file that parses (Python,
    /// JavaScript/TypeScript, Rust, Go, JSON, TOML, YAML) into one that does not.
    pub check_syntax: bool,
    /// Refuse an edit that removes a function or class definition whose name is still
    /// used in the workspace.
    pub keep_used_definitions: bool,
}

/// `run_shell_command` limits.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellSettings {
    pub inactivity_timeout_secs: u64,
    pub output_limit_chars: usize,
}

/// `[sandbox]`: the kernel sandbox every process Troupe starts runs in.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSettings {
    /// `read-only`, `workspace-write` (the default, in every approval mode) or `off`.
    pub mode: String,
    /// In `workspace-write`: whether commands may open sockets other than AF_UNIX.
    pub network: bool,
    /// Directories writable in `workspace-write` besides the workspace roots and the
    /// private `/tmp`.
    pub writable_roots: Vec<String>,
    /// Directories shown read-only to commands besides the system directories and the
    /// usual toolchains.
    pub readable_roots: Vec<String>,
}

/// `[environment]`: what children (shell commands, hooks, MCP servers, custom commands)
/// inherit of Troupe's environment.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvironmentSettings {
    /// Variables passed through although their names look secret (exact names, or a
    /// prefix ending in `*`).
    pub pass: Vec<String>,
}

/// `web_fetch` limits and the test-only loopback switch.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebFetchSettings {
    pub timeout_secs: u64,
    pub max_bytes: u64,
    pub max_redirects: u32,
    pub allow_loopback: bool,
}

/// Context files (AGENTS.md, GEMINI.md) and the memory file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextSettings {
    pub file_names: Vec<String>,
    pub global_dir: String,
    pub memory_file: String,
    pub jit: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogSettings {
    pub file: String,
    pub level: String,
}

/// Session recording and retention.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionSettings {
    pub record: bool,
    pub max_age_days: u64,
    pub max_count: usize,
}

/// Settings named as gemini-cli's `general.*`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneralSettings {
    pub checkpointing: bool,
}

/// `[ui]`: the interactive session's look and line editor.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UiSettings {
    /// One of [`THEMES`].
    pub theme: String,
    /// The line editor starts in vi mode.
    pub vim_mode: bool,
    /// Plain, linear output for screen readers (`--screen-reader`).
    pub screen_reader: bool,
}

/// The names `ui.theme` takes.
pub const THEMES: &[&str] = &["default", "light", "no-color"];

pub(super) fn check_values(
    s: &Settings,
    origins: &BTreeMap<String, Origin>,
) -> Result<(), SettingsError> {
    let bad = |key: &str, message: String| SettingsError::BadValue {
        key: key.to_string(),
        origin: origins.get(key).cloned().unwrap_or_default(),
        message,
    };
    check_approval(s, &bad)?;
    check_model(s, &bad)?;
    check_edit_context_and_tools(s, &bad)?;
    if !THEMES.contains(&s.ui.theme.as_str()) {
        return Err(bad(
            "ui.theme",
            format!("`{}` is not one of {}", s.ui.theme, THEMES.join(", ")),
        ));
    }
    if !["error", "warn", "info", "debug", "trace"].contains(&s.log.level.as_str()) {
        return Err(bad(
            "log.level",
            format!("`{}` is not a log level", s.log.level),
        ));
    }
    Ok(())
}

/// `approval.*`: the mode and the allow rules.
fn check_approval(
    s: &Settings,
    bad: &impl Fn(&str, String) -> SettingsError,
) -> Result<(), SettingsError> {
    if crate::protocol::ApprovalMode::parse(&s.approval.mode).is_none() {
        return Err(bad(
            "approval.mode",
            format!(
                "`{}` is not one of plan, default, auto_edit, yolo",
                s.approval.mode
            ),
        ));
    }
    if let Some(bad_rule) = s
        .approval
        .allowed
        .iter()
        .find(|r| crate::engine::policy::parse_rule(r).is_none())
    {
        return Err(bad(
            "approval.allowed",
            format!("`{bad_rule}` is not `tool`, `tool(key)` or `mcp_<server>_*`"),
        ));
    }
    Ok(())
}

/// `model.*`: the provider, the prompt style and the compression settings.
fn check_model(
    s: &Settings,
    bad: &impl Fn(&str, String) -> SettingsError,
) -> Result<(), SettingsError> {
    if !["auto", "gemini", "openai", "scripted"].contains(&s.model.provider.as_str()) {
        return Err(bad(
            "model.provider",
            format!(
                "`{}` is not one of auto, gemini, openai, scripted",
                s.model.provider
            ),
        ));
    }
    if !["full", "short"].contains(&s.model.prompt_style.as_str()) {
        return Err(bad(
            "model.prompt_style",
            format!("`{}` is not one of full, short", s.model.prompt_style),
        ));
    }
    let c = &s.model.compression;
    if !(c.threshold > 0.0 && c.threshold <= 1.0) {
        return Err(bad(
            "model.compression.threshold",
            "must be a fraction above 0 and at most 1".into(),
        ));
    }
    if !(c.preserve_fraction > 0.0 && c.preserve_fraction < 1.0) {
        return Err(bad(
            "model.compression.preserve_fraction",
            "must be a fraction between 0 and 1".into(),
        ));
    }
    if !(c.tool_result_share > 0.0 && c.tool_result_share <= 1.0) {
        return Err(bad(
            "model.compression.tool_result_share",
            "must be a fraction above 0 and at most 1".into(),
        ));
    }
    for entry in &c.token_limits {
        parse_token_limit(entry).map_err(|m| bad("model.compression.token_limits", m))?;
    }
    Ok(())
}

/// `edit.*`, `context.*` and `tools.*`: caches, context files, actors and threads.
fn check_edit_context_and_tools(
    s: &Settings,
    bad: &impl Fn(&str, String) -> SettingsError,
) -> Result<(), SettingsError> {
    if s.edit.correction_cache_entries == 0 {
        return Err(bad(
            "edit.correction_cache_entries",
            "must be at least 1".into(),
        ));
    }
    if s.context.file_names.is_empty()
        || s.context
            .file_names
            .iter()
            .any(|n| n.trim().is_empty() || n.contains('/'))
    {
        return Err(bad(
            "context.file_names",
            "must list at least one plain file name".into(),
        ));
    }
    if s.tools.actors_per_tool == 0 || s.tools.actors_per_tool > 64 {
        return Err(bad(
            "tools.actors_per_tool",
            "must be between 1 and 64".into(),
        ));
    }
    if s.tools.max_in_flight == 0 {
        return Err(bad("tools.max_in_flight", "must be at least 1".into()));
    }
    if s.tools.fs_threads == 0 {
        return Err(bad("tools.fs_threads", "must be at least 1".into()));
    }
    Ok(())
}
