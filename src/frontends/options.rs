//! The options of one session, interactive or headless, as the command line gives them
//! (`troupe` flattens them into its arguments).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// The flags that choose policy files and add policy rules: a run's, and `troupe
/// config`'s (which shows what a run with them would use).
#[derive(Debug, Clone, Args, Default)]
pub struct PolicyFlags {
    /// Policy files or directories of them, user tier (comma-separated or repeated);
    /// they replace ~/.gemini/policies and ~/.troupe/policies. Sets policy.paths.
    #[arg(long = "policy", value_name = "PATH", value_delimiter = ',')]
    pub policy: Vec<String>,

    /// Admin policy files or directories (comma-separated or repeated); ignored when
    /// /etc/gemini-cli/policies holds policies. Sets policy.admin_paths.
    #[arg(long = "admin-policy", value_name = "PATH", value_delimiter = ',')]
    pub admin_policy: Vec<String>,

    /// Tools that run without confirmation: `tool` or `run_shell_command(prefix)`
    /// (comma-separated or repeated). Sets tools.allowed.
    #[arg(long = "allowed-tools", value_name = "TOOL", value_delimiter = ',')]
    pub allowed_tools: Vec<String>,

    /// Only these MCP servers start (comma-separated or repeated); their tools run
    /// without confirmation outside plan mode. Sets mcp.allowed.
    #[arg(
        long = "allowed-mcp-server-names",
        value_name = "NAME",
        value_delimiter = ','
    )]
    pub allowed_mcp_server_names: Vec<String>,
}

impl PolicyFlags {
    /// Each flag with the setting it sets and its values.
    pub fn settings(&self) -> [(&'static str, &'static str, &[String]); 4] {
        [
            ("--policy", "policy.paths", &self.policy),
            ("--admin-policy", "policy.admin_paths", &self.admin_policy),
            ("--allowed-tools", "tools.allowed", &self.allowed_tools),
            (
                "--allowed-mcp-server-names",
                "mcp.allowed",
                &self.allowed_mcp_server_names,
            ),
        ]
    }
}

/// Options of a session (interactive or headless).
#[derive(Debug, Clone, Args, Default)]
pub struct RunArgs {
    /// Run headless with this prompt and exit.
    #[arg(short = 'p', long = "prompt")]
    pub prompt: Option<String>,

    /// A prompt to start an interactive session with.
    #[arg(value_name = "QUERY")]
    pub query: Vec<String>,

    /// Send PROMPT as the first request, then stay in the interactive session.
    #[arg(short = 'i', long = "prompt-interactive", value_name = "PROMPT", conflicts_with_all = ["prompt", "query"])]
    pub prompt_interactive: Option<String>,

    /// Work in a new git worktree of this repository: .gemini/worktrees/NAME on a new
    /// branch worktree-NAME (without NAME, one made of the time). It is kept afterwards.
    #[arg(short = 'w', long = "worktree", value_name = "NAME", num_args = 0..=1, default_missing_value = "")]
    pub worktree: Option<String>,

    /// Output for screen readers: lines printed one after another, never redrawn (no
    /// spinner, no status line under the prompt, no colours, numbered questions). Sets
    /// ui.screen_reader.
    #[arg(long = "screen-reader")]
    pub screen_reader: bool,

    /// Output format of a headless run.
    #[arg(short = 'o', long = "output-format", value_enum, default_value_t = OutputFormatArg::Text)]
    pub output_format: OutputFormatArg,

    /// How much runs without asking: plan, default, auto_edit or yolo.
    #[arg(long = "approval-mode", value_name = "MODE")]
    pub approval_mode: Option<String>,

    #[command(flatten)]
    pub policy: PolicyFlags,

    /// Only these extensions are enabled (comma-separated or repeated; `none`: none).
    /// Sets extensions.only.
    #[arg(
        short = 'e',
        long = "extensions",
        value_name = "NAME",
        value_delimiter = ','
    )]
    pub extensions: Vec<String>,

    /// List the installed extensions and exit.
    #[arg(short = 'l', long = "list-extensions")]
    pub list_extensions: bool,

    /// Run every tool call without asking (same as --approval-mode yolo).
    #[arg(short = 'y', long = "yolo", conflicts_with = "approval_mode")]
    pub yolo: bool,

    /// The kernel sandbox of the commands Troupe runs: workspace-write (the default, and
    /// what a bare -s means), read-only or off. Overrides sandbox.mode.
    #[arg(short = 's', long = "sandbox", value_name = "MODE", num_args = 0..=1, default_missing_value = "workspace-write")]
    pub sandbox: Option<String>,

    /// The model to use.
    #[arg(short = 'm', long = "model")]
    pub model: Option<String>,

    /// More workspace roots (comma-separated or repeated).
    #[arg(long = "include-directories", value_delimiter = ',')]
    pub include_directories: Vec<PathBuf>,

    /// Replay model responses from a gemini-cli fake-responses JSONL file (no network).
    #[arg(long = "fake-responses", value_name = "FILE")]
    pub fake_responses: Option<PathBuf>,

    /// Write what the model sent, in the fake-responses format, to FILE.
    #[arg(long = "record-responses", value_name = "FILE")]
    pub record_responses: Option<PathBuf>,

    /// Append every model request body (Gemini JSON) to FILE, one per line.
    #[arg(long = "log-requests", value_name = "FILE", hide = true)]
    pub log_requests: Option<PathBuf>,

    /// A settings preset applied before -c overrides: `small` for small local models
    /// (core tools, short system prompt, temperature 0, bounded answers, edits
    /// corrected without the model), `default` for none. Without it, a server whose
    /// context window is 16,384 tokens or fewer gets `small`.
    #[arg(long = "profile", value_name = "NAME")]
    pub profile: Option<String>,

    /// Override a setting: -c model.max_turns=20 (repeatable).
    #[arg(short = 'c', long = "config", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,

    /// Write the log here instead of the default file.
    #[arg(long = "log-file", value_name = "PATH")]
    pub log_file: Option<PathBuf>,

    /// Write every tool call's states as a Chrome trace-event timeline to FILE (Perfetto,
    /// chrome://tracing) when the session ends.
    #[arg(long = "trace", value_name = "FILE")]
    pub trace: Option<PathBuf>,

    /// Keep the run as an ATIF trajectory (the `trajectory.json` evaluation tools such
    /// as Harbor read) in FILE, rewritten whenever a turn ends. With --acp, one file
    /// per session: FILE's name with the session id before its extension.
    #[arg(long = "trajectory", value_name = "FILE")]
    pub trajectory: Option<PathBuf>,

    /// Trust the current folder for this run only (its .troupe/config.toml applies).
    #[arg(long = "skip-trust")]
    pub skip_trust: bool,

    /// Resume a previous session: `latest` (the default), its number in
    /// --list-sessions, or its id.
    #[arg(short = 'r', long = "resume", value_name = "latest|N|ID", num_args = 0..=1, default_missing_value = "latest")]
    pub resume: Option<String>,

    /// Continue the most recent session of this project (the same as --resume latest;
    /// Claude Code's flag): headless with -p, else interactive.
    #[arg(long = "continue", conflicts_with_all = ["resume", "session_id", "session_file"])]
    pub continue_latest: bool,

    /// List the sessions of this project and exit (never calls a model).
    #[arg(long = "list-sessions")]
    pub list_sessions: bool,

    /// Delete a session by its number in --list-sessions or its id, and exit.
    #[arg(long = "delete-session", value_name = "N|ID")]
    pub delete_session: Option<String>,

    /// Start from a session file (Troupe's or gemini-cli's, .jsonl or legacy .json);
    /// it is imported as a new session, the file itself is only read.
    #[arg(long = "session-file", value_name = "PATH")]
    pub session_file: Option<PathBuf>,

    /// Start a new session with this id (letters, digits, - and _).
    #[arg(long = "session-id", value_name = "ID")]
    pub session_id: Option<String>,

    /// Snapshot the workspace before each approved edit (/restore puts it back).
    #[arg(long = "checkpointing")]
    pub checkpointing: bool,
    /// Run as an Agent Client Protocol agent on stdio (for editors such as Zed).
    #[arg(long = "acp", alias = "experimental-acp")]
    pub acp: bool,
}

/// `-o` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum OutputFormatArg {
    #[default]
    Text,
    Json,
    StreamJson,
}
