//! `troupe mcp add|remove|list|get|serve`. Like gemini-cli, messages of add, remove and
//! list go to stderr; unlike it, `-e K=a=b` keeps `a=b` and comma lists are split.
//! What a server said (its tools' names, its errors and stderr) and what a settings
//! file holds are printed through the one sanitiser: escapes are shown, not obeyed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use toml_edit::{DocumentMut, Item, Table};

use crate::engine::sanitize::{for_terminal, one_line};
use crate::mcp::server::{open, TroupeClient};
use crate::settings::mcp::{McpServerConfig, Scope, ServerEntry};

/// `troupe mcp` subcommands.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Add a server to the user's or the project's settings (or update it).
    Add(AddArgs),
    /// Remove a server from the user's or the project's settings.
    Remove {
        #[arg(short = 's', long = "scope", value_enum, default_value_t = ScopeArg::Project)]
        scope: ScopeArg,
        name: String,
    },
    /// Connect to every configured server and show its status.
    List,
    /// Show one server's settings, status and tools.
    Get { name: String },
    /// Serve Troupe's built-in tools over MCP on stdio.
    Serve(crate::frontends::mcp_serve::ServeArgs),
}

/// `-s` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScopeArg {
    User,
    Project,
}

/// `-t` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TransportArg {
    Stdio,
    Sse,
    Http,
}

/// `troupe mcp add` options.
#[derive(Debug, Args)]
pub struct AddArgs {
    /// Which settings file: the project's `.troupe/config.toml` or the user's.
    #[arg(short = 's', long = "scope", value_enum, default_value_t = ScopeArg::Project)]
    pub scope: ScopeArg,
    /// How to reach the server (default: stdio; for an http(s):// target, Streamable
    /// HTTP then SSE).
    #[arg(short = 't', long = "transport", visible_alias = "type", value_enum)]
    pub transport: Option<TransportArg>,
    /// Environment variable for a stdio server: -e KEY=value (repeatable).
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// HTTP header for a remote server: -H "Name: value" (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// Milliseconds allowed for connecting and for each call.
    #[arg(long)]
    pub timeout: Option<u64>,
    /// Run this server's tools without asking.
    #[arg(long)]
    pub trust: bool,
    #[arg(long)]
    pub description: Option<String>,
    /// Only these tools (comma-separated or repeated).
    #[arg(long = "include-tools", value_delimiter = ',')]
    pub include_tools: Vec<String>,
    /// Never these tools (comma-separated or repeated).
    #[arg(long = "exclude-tools", value_delimiter = ',')]
    pub exclude_tools: Vec<String>,
    pub name: String,
    /// The command (stdio) or the URL (sse, http).
    #[arg(value_name = "COMMAND_OR_URL")]
    pub target: String,
    /// Arguments of the command.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// A `troupe mcp` failure.
#[derive(Debug, thiserror::Error)]
pub enum McpCliError {
    #[error("{0}")]
    Usage(String),
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot parse {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Settings(#[from] crate::settings::SettingsError),
}

fn settings_file(scope: ScopeArg, cwd: &Path) -> PathBuf {
    match scope {
        ScopeArg::User => crate::settings::troupe_home().join("config.toml"),
        ScopeArg::Project => cwd.join(".troupe").join("config.toml"),
    }
}

fn scope_name(scope: ScopeArg) -> &'static str {
    match scope {
        ScopeArg::User => "user",
        ScopeArg::Project => "project",
    }
}

/// Runs a `troupe mcp` subcommand; returns the exit code.
pub fn run(command: McpCommand) -> Result<i32, McpCliError> {
    let cwd = std::env::current_dir().map_err(|e| McpCliError::Usage(e.to_string()))?;
    match command {
        McpCommand::Add(args) => add(args, &cwd),
        McpCommand::Remove { scope, name } => remove(scope, &name, &cwd),
        McpCommand::List => list(&cwd),
        McpCommand::Get { name } => get(&name, &cwd),
        McpCommand::Serve(args) => crate::frontends::mcp_serve::run(args, &cwd)
            .map_err(|e| McpCliError::Usage(e.to_string())),
    }
}

fn entry_of(args: &AddArgs) -> Result<ServerEntry, McpCliError> {
    let mut entry = ServerEntry {
        timeout_ms: args.timeout,
        trust: args.trust,
        description: args.description.clone(),
        include_tools: clean(&args.include_tools),
        exclude_tools: clean(&args.exclude_tools),
        ..ServerEntry::default()
    };
    for pair in &args.env {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| McpCliError::Usage(format!("-e {pair}: expected KEY=value")))?;
        entry.env.insert(k.trim().to_string(), v.to_string());
    }
    for header in &args.headers {
        let (k, v) = header
            .split_once(':')
            .ok_or_else(|| McpCliError::Usage(format!("-H {header}: expected \"Name: value\"")))?;
        entry
            .headers
            .insert(k.trim().to_string(), v.trim().to_string());
    }
    let is_url = args.target.starts_with("http://") || args.target.starts_with("https://");
    match args.transport {
        Some(TransportArg::Stdio) => {
            entry.command = Some(args.target.clone());
            entry.args = args.args.clone();
        }
        None if !is_url => {
            entry.command = Some(args.target.clone());
            entry.args = args.args.clone();
        }
        remote => {
            if !args.args.is_empty() {
                return Err(McpCliError::Usage(format!(
                    "{}: a URL takes no arguments (got {})",
                    args.target,
                    args.args.join(" ")
                )));
            }
            entry.url = Some(args.target.clone());
            // No type for a URL: Streamable HTTP, then SSE, when connecting.
            entry.transport = match remote {
                Some(TransportArg::Sse) => Some("sse".into()),
                Some(TransportArg::Http) => Some("http".into()),
                _ => None,
            };
        }
    }
    Ok(entry)
}

fn clean(list: &[String]) -> Vec<String> {
    list.iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

pub(crate) fn read_doc(path: &Path) -> Result<DocumentMut, McpCliError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => {
            return Err(McpCliError::Read {
                path: path.into(),
                source,
            })
        }
    };
    text.parse()
        .map_err(|e: toml_edit::TomlError| McpCliError::Parse {
            path: path.into(),
            message: e.to_string(),
        })
}

/// Writes the settings file; a project file's new content is pinned as trusted when
/// the folder is trusted and the file was as trusted before (Troupe's own write must
/// not make the folder ask to be trusted again).
pub(crate) fn write_doc(path: &Path, doc: &DocumentMut, cwd: &Path) -> Result<(), McpCliError> {
    let err = |source| McpCliError::Write {
        path: path.into(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(err)?;
    let before = crate::settings::trust::pin::file_hash(path);
    crate::platform::filesystem::owned_file::replace_private(path, doc.to_string().as_bytes())
        .map_err(|e| err(e.into_io()))?;
    if path.starts_with(cwd) {
        crate::frontends::trust::pin_own_write(cwd, path, before.as_deref());
    }
    Ok(())
}

fn add(args: AddArgs, cwd: &Path) -> Result<i32, McpCliError> {
    let entry = entry_of(&args)?;
    let path = settings_file(args.scope, cwd);
    let mut doc = read_doc(&path)?;
    let scope = scope_name(args.scope);
    let text = toml::to_string(&entry).map_err(|e| McpCliError::Usage(e.to_string()))?;
    let new: DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| McpCliError::Usage(e.to_string()))?;
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        })
        .as_table_mut()
        .ok_or_else(|| McpCliError::Parse {
            path: path.clone(),
            message: "`mcp_servers` is not a table".into(),
        })?;
    let existed = servers.contains_key(&args.name);
    servers.insert(&args.name, Item::Table(new.as_table().clone()));
    write_doc(&path, &doc, cwd)?;
    let name = &args.name;
    if existed {
        eprintln!("MCP server \"{name}\" is already configured within {scope} settings.");
        eprintln!("MCP server \"{name}\" updated in {scope} settings.");
    } else {
        let transport = match (&entry.command, entry.transport.as_deref()) {
            (Some(_), _) => "stdio",
            (None, Some(t)) => t,
            (None, None) => "http+sse",
        };
        eprintln!("MCP server \"{name}\" added to {scope} settings. ({transport})");
    }
    if args.scope == ScopeArg::Project && !folder_trusted(cwd) {
        eprintln!("{}", untrusted_add_note(name, cwd));
    }
    Ok(0)
}

/// Whether the project settings of `cwd` apply (the trust file, or
/// `TROUPE_TRUST_WORKSPACE=1`).
pub(crate) fn folder_trusted(cwd: &Path) -> bool {
    crate::settings::hook_trust::workspace_trusted(cwd)
        || crate::settings::trust::is_trusted(cwd).is_trusted()
}

/// What `mcp add` says after writing a project server in an untrusted folder.
fn untrusted_add_note(name: &str, cwd: &Path) -> String {
    format!(
        "Warning: this folder ({}) is not trusted, so its project settings are not applied and \"{}\" will not start here. Trust the folder with `troupe trust`, or add the server to your user settings instead with `troupe mcp add -s user …`.",
        cwd.display(),
        one_line(name)
    )
}

fn remove(scope: ScopeArg, name: &str, cwd: &Path) -> Result<i32, McpCliError> {
    let path = settings_file(scope, cwd);
    let mut doc = read_doc(&path)?;
    let scope = scope_name(scope);
    let removed = doc
        .get_mut("mcp_servers")
        .and_then(Item::as_table_mut)
        .is_some_and(|t| t.remove(name).is_some());
    if removed {
        write_doc(&path, &doc, cwd)?;
        eprintln!("Server \"{name}\" removed from {scope} settings.");
    } else {
        eprintln!("Server \"{name}\" not found in {scope} settings.");
    }
    Ok(0)
}

/// Connects to `config` (5 s at most, as gemini-cli's list) and says how it went.
async fn probe(config: &McpServerConfig, cwd: &Path) -> Result<Probed, String> {
    if let Some(reason) = &config.blocked {
        return Err(reason.clone());
    }
    let limit = config.timeout().min(Duration::from_secs(5));
    let client = TroupeClient::new(vec![cwd.to_path_buf()], None);
    let connected = tokio::time::timeout(limit, open(config, client, Some(cwd.to_path_buf())))
        .await
        .map_err(|_| format!("no answer to initialize within {} ms", limit.as_millis()))??;
    let listing = tokio::time::timeout(
        limit,
        crate::mcp::listing::list_tools(connected.service.peer()),
    )
    .await
    .map_err(|_| "tools/list timed out".to_string())??;
    let _ = connected.service.cancel().await;
    let tools = listing
        .tools
        .iter()
        .filter(|t| config.keeps_tool(&t.name))
        .map(|t| crate::mcp::convert::tool_name(&config.name, &t.name))
        .collect();
    Ok((tools, listing.skipped))
}

/// The tools a probe found (model-facing names), and the tools it skipped.
type Probed = (Vec<String>, Vec<crate::mcp::listing::SkippedTool>);

fn skipped_lines(result: &Result<Probed, String>) -> Vec<String> {
    match result {
        Ok((_, skipped)) => skipped
            .iter()
            .map(|t| {
                let line = format!("    Skipped tool {}: {}", t.name, t.reason);
                one_line(&line).into_owned()
            })
            .collect(),
        Err(_) => Vec::new(),
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, McpCliError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| McpCliError::Usage(e.to_string()))
}

fn line(config: &McpServerConfig, result: &Result<Probed, String>) -> String {
    let (symbol, state) = match result {
        _ if config.blocked.is_some() => ("⛔", "Blocked"),
        _ if !config.enabled() => ("○", "Disabled"),
        Ok(_) => ("✓", "Connected"),
        Err(_) => ("✗", "Disconnected"),
    };
    let line = format!(
        "{symbol} {}: {} ({}) - {state}",
        config.name,
        config.target(),
        config.transport()
    );
    one_line(&line).into_owned()
}

fn list(cwd: &Path) -> Result<i32, McpCliError> {
    let loaded = crate::settings::load(cwd, &[])?;
    let mut servers = loaded.settings.mcp_servers;
    let untrusted = loaded.settings.untrusted_mcp_servers;
    if servers.is_empty() && untrusted.is_empty() {
        eprintln!("No MCP servers configured.");
        return Ok(0);
    }
    servers.sort_by_key(|s| s.scope != Scope::User);
    let results = runtime()?.block_on(futures::future::join_all(servers.iter().map(|s| async {
        if s.enabled() {
            probe(s, cwd).await
        } else {
            Err("disabled".to_string())
        }
    })));
    eprintln!("Configured MCP servers:\n");
    for (server, result) in servers.iter().zip(&results) {
        eprintln!("{}", line(server, result));
        if let (Err(e), true) = (result, server.enabled()) {
            eprintln!("    Error: {}", one_line(e));
        }
        for skipped in skipped_lines(result) {
            eprintln!("{skipped}");
        }
    }
    for server in &untrusted {
        eprintln!("{}", untrusted_line(server));
    }
    if !untrusted.is_empty() {
        eprintln!(
            "\nThis folder is not trusted, so its project servers do not start: trust it with `troupe trust`, or configure them in your user settings (`troupe mcp add -s user …`)."
        );
    }
    Ok(0)
}

/// The line of a server that is configured but not applied (untrusted folder).
fn untrusted_line(config: &McpServerConfig) -> String {
    let line = format!(
        "⛔ {}: {} ({}) - {} ({} settings)",
        config.name,
        config.target(),
        config.transport(),
        crate::settings::mcp::UNTRUSTED_REASON,
        config.config_scope()
    );
    one_line(&line).into_owned()
}

fn get(name: &str, cwd: &Path) -> Result<i32, McpCliError> {
    let loaded = crate::settings::load(cwd, &[])?;
    if let Some(server) = loaded
        .settings
        .untrusted_mcp_servers
        .iter()
        .find(|s| s.name == name)
    {
        println!(
            "{} ({} settings)",
            one_line(&server.name),
            server.config_scope()
        );
        let entry = toml::to_string(&server.entry).unwrap_or_default();
        print!("{}", for_terminal(&entry));
        println!("{}", untrusted_line(server));
        println!(
            "    This folder is not trusted: trust it with `troupe trust`, or configure the server in your user settings (`troupe mcp add -s user …`)."
        );
        return Ok(0);
    }
    let Some(server) = loaded
        .settings
        .mcp_servers
        .into_iter()
        .find(|s| s.name == name)
    else {
        eprintln!("Server \"{name}\" not found in user or project settings.");
        return Ok(1);
    };
    let result = if server.enabled() {
        runtime()?.block_on(probe(&server, cwd))
    } else {
        Err("disabled".into())
    };
    println!(
        "{} ({} settings)",
        one_line(&server.name),
        server.config_scope()
    );
    let entry = toml::to_string(&server.entry).unwrap_or_default();
    print!("{}", for_terminal(&entry));
    println!("{}", line(&server, &result));
    match &result {
        Ok((tools, _)) => tools.iter().for_each(|t| println!("  - {}", one_line(t))),
        Err(e) => println!("    Error: {}", one_line(e)),
    }
    for skipped in skipped_lines(&result) {
        println!("{skipped}");
    }
    Ok(0)
}

impl McpServerConfig {
    fn config_scope(&self) -> &'static str {
        self.scope.as_str()
    }
}
