//! Command-line arguments. Flags follow gemini-cli's where they overlap, so scripts and
//! habits carry over.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use crate::frontends::options::{OutputFormatArg, RunArgs};

pub mod bench;
pub mod completion;
pub mod config_cmd;
mod config_policy;
pub mod demo;
pub mod extensions;
mod extensions_author;
pub mod extensions_show;
pub mod hooks_cmd;
pub mod hooks_migrate;
mod install_files;
pub mod mcp;
pub mod skills;
mod skills_install;

/// Troupe — a terminal coding agent built as a troupe of actors.
///
/// Without -p, starts an interactive session in the current directory. Logs go to
/// <troupe home>/logs/troupe.log (troupe home: $TROUPE_HOME, else ~/.troupe), or to
/// --log-file / log.file.
#[derive(Debug, Parser)]
#[command(
    name = "troupe",
    version,
    disable_version_flag = true,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Print version (`-V` works too).
    #[arg(short = 'v', long = "version", short_alias = 'V', action = clap::ArgAction::Version)]
    pub version: Option<bool>,

    #[command(flatten)]
    pub run: RunArgs,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Copy a small sample project to a temp dir and run a scripted session on it (offline).
    Demo,
    /// Run many tasks at once (a JSONL file of prompts), each a session on its own copy
    /// of its workspace; results, resume and ATIF trajectories in an output folder.
    Batch(Box<crate::frontends::batch::BatchArgs>),
    /// Concurrency benchmark: N parallel tool calls in one model turn.
    Bench(Box<BenchArgs>),
    /// Manage MCP servers (add, remove, list, get) or serve Troupe's tools over MCP.
    Mcp {
        #[command(subcommand)]
        command: crate::cli::mcp::McpCommand,
    },
    /// Manage agent skills (list, enable, disable, install, link, uninstall).
    Skills {
        #[command(subcommand)]
        command: crate::cli::skills::SkillsCommand,
    },
    /// Manage gemini-cli extensions (install, link, uninstall, list, enable, disable,
    /// validate, new), kept in ~/.gemini/extensions.
    #[command(alias = "extension")]
    Extensions {
        #[command(subcommand)]
        command: crate::cli::extensions::ExtensionsCommand,
    },
    /// Print the effective settings and where each came from.
    Config(crate::cli::config_cmd::ConfigArgs),
    /// Trust a folder (default: the current one): its project settings apply from now on.
    Trust {
        /// The folder to trust (default: the current directory); its subfolders are
        /// trusted with it.
        #[arg(value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Stop trusting a folder (default: the current one).
    Untrust {
        /// The folder to stop trusting (default: the current directory).
        #[arg(value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Manage hooks (`troupe hooks migrate --from-claude`).
    Hooks {
        #[command(subcommand)]
        action: HooksAction,
    },
    /// Print a shell completion script: `troupe completion bash > /etc/bash_completion.d/troupe`.
    ///
    /// The words `completion` and `man` (like `demo` or `config`) name subcommands when
    /// they are the first argument on their own; a prompt that starts with one goes
    /// after `--` or in quotes with its other words (`troupe "completion is slow"`).
    Completion {
        /// The shell: bash, zsh, fish, elvish or powershell.
        #[arg(value_name = "SHELL")]
        shell: Option<clap_complete::Shell>,
    },
    /// Print the manual page (troff): `troupe man > troupe.1`.
    Man,
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
    /// Parallel calls in the model turn (at least 1; default 1000), or with --agents
    /// the calls each subagent makes (default 1).
    #[arg(long = "calls", value_parser = parse_calls)]
    pub calls_given: Option<usize>,
    /// The calls of the turn: --calls, else 1000.
    #[arg(skip = 1000usize)]
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
    /// A long session instead: N model turns of one `read_file` each, run with N/4
    /// and with N turns; prints the cost of a turn against the turn number and the
    /// ratio of the two runs' times (4 when every turn costs the same).
    #[arg(long, value_name = "N")]
    pub turns: Option<usize>,
    /// Print the size of the first model request (system prompt and tool
    /// declarations) in bytes and estimated tokens, with and without `--profile small`.
    #[arg(long)]
    pub prompt_size: bool,
    /// Subagents instead: one parent answer starts N `generalist` subagents at once,
    /// each making --calls read_file calls (default 1) before it reports; prints the
    /// time and the memory per agent.
    #[arg(long, value_name = "N")]
    pub agents: Option<usize>,
    /// The batch pool instead (`troupe batch`): N scripted tasks, each a session on its
    /// own copy of a small workspace, run at 1, 4, 16, 64 … up to -j at once; prints
    /// tasks per second and memory per running session, and a loop of N `troupe -p`
    /// runs of the same tasks as the baseline.
    #[arg(long, value_name = "N")]
    pub tasks: Option<usize>,
    /// With --tasks: the most tasks at once (default 64).
    #[arg(short = 'j', long = "jobs", value_name = "J", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub jobs: Option<usize>,
    /// With --tasks: skip the `troupe -p` loop.
    #[arg(long)]
    pub no_baseline: bool,
    /// With --agents: at most this many run at once (agents.max_concurrent; default N).
    #[arg(long, value_name = "K")]
    pub max_concurrent: Option<usize>,
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

/// `--calls N`: a whole number, at least 1 (a turn of no calls measures nothing).
fn parse_calls(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("the benchmark needs at least 1 call".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{text}` is not a whole number of calls")),
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
