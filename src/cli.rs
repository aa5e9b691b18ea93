//! Command-line arguments. Flags follow gemini-cli's where they overlap, so scripts and
//! habits carry over.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Troupe — a terminal coding agent built as a troupe of actors.
///
/// Without -p, starts an interactive session in the current directory. Logs go to
/// <troupe home>/logs/troupe.log (troupe home: $TROUPE_HOME, else ~/.troupe), or to
/// --log-file / log.file.
#[derive(Debug, Parser)]
#[command(name = "troupe", version, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub run: RunArgs,
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

    /// Output format of a headless run.
    #[arg(short = 'o', long = "output-format", value_enum, default_value_t = OutputFormatArg::Text)]
    pub output_format: OutputFormatArg,

    /// How much runs without asking: plan, default, auto_edit or yolo.
    #[arg(long = "approval-mode", value_name = "MODE")]
    pub approval_mode: Option<String>,

    /// Run every tool call without asking (same as --approval-mode yolo).
    #[arg(short = 'y', long = "yolo", conflicts_with = "approval_mode")]
    pub yolo: bool,

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
    /// corrected without the model).
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

    /// Trust the current folder for this run only (its .troupe/config.toml applies).
    #[arg(long = "skip-trust")]
    pub skip_trust: bool,

    /// Resume a previous session: `latest` (the default), its number in
    /// --list-sessions, or its id.
    #[arg(short = 'r', long = "resume", value_name = "latest|N|ID", num_args = 0..=1, default_missing_value = "latest")]
    pub resume: Option<String>,

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

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Copy a small sample project to a temp dir and run a scripted session on it (offline).
    Demo,
    /// Concurrency benchmark: N parallel tool calls in one model turn.
    Bench(Box<BenchArgs>),
    /// Manage MCP servers (add, remove, list, get) or serve Troupe's tools over MCP.
    Mcp {
        #[command(subcommand)]
        command: crate::mcp::cli::McpCommand,
    },
    /// Print the effective settings and where each came from.
    Config {
        #[arg(short = 'c', long = "config", value_name = "KEY=VALUE")]
        overrides: Vec<String>,
    },
    /// Trust a folder (default: the current one): its project settings apply from now on.
    Trust {
        #[arg(value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Stop trusting a folder (default: the current one).
    Untrust {
        #[arg(value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Manage hooks (`troupe hooks migrate --from-claude`).
    Hooks {
        #[command(subcommand)]
        action: HooksAction,
    },
}

/// `troupe hooks` actions.
#[derive(Debug, Subcommand)]
pub enum HooksAction {
    /// Convert Claude Code hooks (.claude/settings*.json) into .gemini/settings.json.
    Migrate {
        /// Migrate from Claude Code hooks.
        #[arg(long = "from-claude")]
        from_claude: bool,
    },
}

/// `troupe bench` options.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Parallel calls in the model turn.
    #[arg(long, default_value_t = 1000)]
    pub calls: usize,
    /// Which tool the calls use: read-file, list-directory, glob, or
    /// `mcp:SERVER/TOOL` (an MCP server's echo-like tool, as --mcp).
    #[arg(long, value_parser = parse_bench_tool, default_value = "read-file", value_name = "TOOL")]
    pub tool: BenchToolArg,
    /// Files in the generated workspace (default: as many as calls, at most 10000).
    #[arg(long)]
    pub files: Option<usize>,
    /// Threads of the FileSystem actor pool.
    #[arg(long)]
    pub fs_threads: Option<usize>,
    /// Actors serving each tool.
    #[arg(long)]
    pub actors_per_tool: Option<usize>,
    /// Record the session (to a session file in the bench's temp dir), as every real
    /// session is; without it the turn runs unrecorded (the baseline).
    #[arg(long)]
    pub record_session: bool,

    /// Call an MCP server's tool instead: SERVER/TOOL, the server configured in the
    /// user's config; each call gets `{"text": "call <i>"}` (an echo tool). The same
    /// as `--tool mcp:SERVER/TOOL`.
    #[arg(long, value_name = "SERVER/TOOL")]
    pub mcp: Option<String>,
    /// Calls in flight at once (tools.max_in_flight).
    #[arg(long)]
    pub window: Option<usize>,
    /// Threads of their own for the tool actors (tools.tool_threads; 0: on the
    /// Scheduler's thread).
    #[arg(long)]
    pub tool_threads: Option<usize>,
    /// Run every combination: `calls=100,1000`, `actors_per_tool=1,2,4`, `fs_threads=…`,
    /// `window=…` (repeatable). Prints a table.
    #[arg(long, value_name = "PARAM=V1,V2,…")]
    pub sweep: Vec<String>,
    /// A mixed workload by weight, e.g. `read_file=70,grep_search=10,replace=10,run_shell_command=10`
    /// (edits conflict on a few shared files). Tools: read_file, list_directory, glob,
    /// grep_search, replace, write_file, run_shell_command, synthetic.
    #[arg(long, value_name = "TOOL=WEIGHT,…")]
    pub mix: Option<String>,
    /// Calls of a synthetic tool that takes this long, e.g. `5ms` or `5ms±2ms` (`+-` works too).
    #[arg(long, value_name = "DURATION[±JITTER]")]
    pub latency: Option<String>,
    /// Run against this directory instead of a generated workspace (read-only tools
    /// only, unless --allow-writes, which works on a copy).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// With --workspace: allow editing tools, on a temporary copy of the directory.
    #[arg(long)]
    pub allow_writes: bool,
    /// Write a Chrome trace-event timeline of every call of the (last) run to FILE.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Draw latency distribution and throughput across the sweep to FILE.svg.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Run each cell K times and report medians.
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Seed of the mixed workload and the latency jitter.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Adds every call's latency to the JSON (used by --sweep for --plot).
    #[arg(long, hide = true)]
    pub emit_latencies: bool,
}

impl BenchArgs {
    /// The MCP tool to call, from `--mcp SERVER/TOOL` or `--tool mcp:SERVER/TOOL`.
    pub fn mcp_spec(&self) -> Option<&str> {
        self.mcp.as_deref().or(match &self.tool {
            BenchToolArg::Mcp(spec) => Some(spec.as_str()),
            BenchToolArg::Builtin(_) => None,
        })
    }
}

/// `troupe bench --tool`: a built-in tool or an MCP server's tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BenchToolArg {
    Builtin(BenchTool),
    /// `mcp:SERVER/TOOL` (kept without the `mcp:` prefix).
    Mcp(String),
}

impl BenchToolArg {
    /// The built-in tool (read_file when the calls go to an MCP tool).
    pub fn builtin(&self) -> BenchTool {
        match self {
            Self::Builtin(tool) => *tool,
            Self::Mcp(_) => BenchTool::ReadFile,
        }
    }
}

fn parse_bench_tool(text: &str) -> Result<BenchToolArg, String> {
    match text.strip_prefix("mcp:") {
        Some(spec) => Ok(BenchToolArg::Mcp(spec.to_string())),
        None => BenchTool::from_str(text, true)
            .map(BenchToolArg::Builtin)
            .map_err(|_| {
                format!(
                    "unknown tool `{text}`: use read-file, list-directory, glob or mcp:SERVER/TOOL"
                )
            }),
    }
}

/// Tools `troupe bench` can exercise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchTool {
    ReadFile,
    ListDirectory,
    Glob,
}
