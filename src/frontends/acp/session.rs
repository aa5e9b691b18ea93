//! Starting the Troupe session behind `session/new` and `session/load`: the model
//! (with the key `authenticate` gave), the client's MCP servers as `[mcp_servers]`
//! entries, and the session recorded through the project's session store
//! ([`crate::platform::sessions::SessionStore`]) like a REPL or headless one
//! (`session/load` resumes a recorded session from it, or one of gemini-cli's).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::front::{self, AcpFront, TurnEnd};
use super::{editor, models, Link, State};
use crate::actors::session::{EndReason, SessionHandle, SessionOptions};
use crate::platform::filesystem::editor::SharedEditor;
use crate::platform::sessions::plan::{open_existing, plan, SessionArgs, SessionPlan};
use crate::platform::workspace::Workspace;
use crate::protocol::content::Content;
use crate::protocol::{ApprovalMode, Op};
use crate::providers::ModelClient;
use crate::settings::mcp::{McpServerConfig, Scope, ServerEntry};
use crate::settings::Settings;

/// One ACP session: the Troupe session's handle, who waits for its turn, and what
/// the connection tracks.
pub struct AcpSession {
    pub session: Arc<SessionHandle>,
    /// The end of the turn in flight, told by the session's event loop.
    pub turns: Arc<TurnEnd>,
    /// The models `session/set_model` may choose (`None`: the provider could not say).
    pub models: Option<Vec<String>>,
    pub model: Mutex<String>,
    /// The "Always allow" rules last written to the user's config.
    pub persisted: Mutex<Vec<String>>,
}

/// A started session and what `session/new` / `session/load` answer with.
pub struct Started {
    pub id: String,
    pub mode: &'static str,
    pub models: Value,
    /// ACP's `configOptions` (the model as a session config option).
    pub config_options: Value,
    /// The recorded history (`session/load`), to replay.
    pub history: Vec<Content>,
    /// The recorded edits' file diffs by call id (`session/load`), to replay.
    pub edits: std::collections::HashMap<String, Value>,
    /// The session's tool facts (the replayed calls' ACP kinds).
    pub tool_facts: Arc<crate::protocol::ToolFactsTable>,
}

/// The user's config file, where "Always allow" saves rules (as the REPL's).
pub fn user_config() -> PathBuf {
    crate::settings::troupe_home().join("config.toml")
}

/// [`user_config`] with the home directory as `~`.
pub fn user_config_label() -> String {
    let path = user_config();
    let home = crate::settings::home_dir();
    match path.strip_prefix(&home) {
        Ok(rest) if home != Path::new("/") => format!("~/{}", rest.display()),
        _ => path.display().to_string(),
    }
}

/// The client's MCP server descriptions (ACP `McpServer`: stdio, or `type` http/sse)
/// as `[mcp_servers.NAME]` entries; stdio servers run in the session's cwd.
pub fn mcp_servers(servers: &[Value], cwd: &Path) -> Result<Vec<McpServerConfig>, String> {
    let pairs = |v: &Value| -> std::collections::BTreeMap<String, String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| {
                Some((
                    p["name"].as_str()?.to_string(),
                    p["value"].as_str()?.to_string(),
                ))
            })
            .collect()
    };
    let mut out = Vec::new();
    for server in servers {
        let name = server["name"].as_str().unwrap_or("").trim().to_string();
        if name.is_empty() {
            return Err(format!("an MCP server without a name: {server}"));
        }
        let kind = server["type"].as_str().unwrap_or("stdio");
        let entry = match kind {
            "stdio" => {
                let command = server["command"].as_str().unwrap_or("").to_string();
                if command.is_empty() {
                    return Err(format!(
                        "MCP server `{name}`: a stdio server needs a command"
                    ));
                }
                ServerEntry {
                    command: Some(command),
                    args: server["args"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|a| a.as_str().map(str::to_string))
                        .collect(),
                    env: pairs(&server["env"]),
                    cwd: Some(cwd.display().to_string()),
                    ..ServerEntry::default()
                }
            }
            "http" | "sse" => {
                let url = server["url"].as_str().unwrap_or("").to_string();
                if url.is_empty() {
                    return Err(format!("MCP server `{name}`: an {kind} server needs a url"));
                }
                ServerEntry {
                    url: Some(url),
                    transport: Some(kind.to_string()),
                    headers: pairs(&server["headers"]),
                    ..ServerEntry::default()
                }
            }
            other => return Err(format!("MCP server `{name}`: unknown type `{other}`")),
        };
        out.push(McpServerConfig {
            name,
            entry,
            scope: Scope::User,
            blocked: None,
            env_pass: Vec::new(),
        });
    }
    Ok(out)
}

/// Starts a session for `session/new` (`load` = `None`) or resumes recorded session
/// `load` for `session/load`.
pub(super) async fn start(
    state: &State,
    req: &Value,
    link: Link,
    load: Option<&str>,
) -> Result<Started, String> {
    let (workspace, mut settings) = workspace_and_settings(state, req)?;
    let chosen = choose_model(state, &mut settings).await?;
    let settings = Arc::new(settings);
    let recorded = session_plan(&workspace, load)?;
    let mode = ApprovalMode::parse(&settings.approval.mode).unwrap_or_default();
    let id = recorded.plan.session_id.clone();
    let order = editor::EventOrder::default();
    let editor = client_editor(state, &link, &id, &order);
    let root = workspace.primary().to_path_buf();
    // The client's servers' tools are there for the first prompt (wait_for_mcp); the
    // SessionStart hook's context goes before it.
    let session = SessionHandle::start(SessionOptions {
        workspace,
        settings,
        model: chosen.model,
        model_name: chosen.name.clone(),
        approval_mode: mode,
        request_log: state.args.log_requests.clone(),
        test_tools: crate::platform::test_hooks::enabled(),
        editor_files: editor,
        plan: Some(recorded.plan),
        call_progress: true,
        wait_for_mcp: true,
        interactive: true,
        trajectory: state
            .args
            .trajectory
            .as_deref()
            .map(|path| crate::frontends::trajectory_path::per_session(path, &id)),
    })
    .await
    .map(Arc::new)
    .map_err(|e| e.to_string())?;
    let _ = order.set(session.handled_events());
    let turns = Arc::new(TurnEnd::default());
    let tool_facts = session.tool_facts();
    let front = AcpFront::new(
        id.clone(),
        Arc::new(link),
        root,
        user_config_label(),
        tool_facts.clone(),
        session.mcp().cloned(),
    );
    actix::spawn(front::drive(session.clone(), front, turns.clone()));
    let persisted = crate::frontends::repl::saved_rules::saved_rule_texts(&session.policy().rules);
    let models = models::models_json(&chosen.name, &chosen.available);
    let config_options = models::config_options(&chosen.name, &chosen.available);
    if let Ok(mut sessions) = state.sessions.lock() {
        sessions.insert(
            id.clone(),
            Arc::new(AcpSession {
                session,
                turns,
                models: chosen.available,
                model: Mutex::new(chosen.name),
                persisted: Mutex::new(persisted),
            }),
        );
    }
    Ok(Started {
        id,
        mode: mode.as_str(),
        models,
        config_options,
        history: recorded.history,
        edits: recorded.edits,
        tool_facts,
    })
}

/// The session's workspace (the request's `cwd` and `--include-directories`) and its
/// settings, with the client's MCP servers in place of configured ones of their names.
fn workspace_and_settings(
    state: &State,
    req: &Value,
) -> Result<(Arc<Workspace>, Settings), String> {
    let cwd = PathBuf::from(req["cwd"].as_str().unwrap_or(""));
    if !cwd.is_absolute() {
        return Err(format!(
            "cwd must be an absolute path, got {}",
            cwd.display()
        ));
    }
    // With the project temp directory, as every front end's workspace: the plans
    // directory and saved tool outputs live there.
    let workspace = Workspace::new(&cwd, &state.args.include_directories)
        .and_then(|ws| {
            let temp = crate::platform::workspace::project_temp_dir(
                &crate::settings::troupe_home(),
                ws.primary(),
            );
            ws.with_temp_dir(&temp)
        })
        .map(Arc::new)
        .map_err(|e| format!("workspace: {e}"))?;
    let mut loaded =
        crate::frontends::load_settings(&workspace, &state.args).map_err(|e| e.to_string())?;
    let client_servers = mcp_servers(
        req["mcpServers"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]),
        workspace.primary(),
    )?;
    for mut server in client_servers {
        server.env_pass = loaded.settings.environment.pass.clone();
        loaded
            .settings
            .mcp_servers
            .retain(|s| s.name != server.name);
        loaded.settings.mcp_servers.push(server);
    }
    Ok((workspace, loaded.settings))
}

/// The session's model, its name and the models it may switch to.
struct ChosenModel {
    model: Arc<dyn ModelClient>,
    name: String,
    available: Option<Vec<String>>,
}

/// Picks the model (with the key `authenticate` gave); an unset model name becomes
/// the provider's default in `settings`.
async fn choose_model(state: &State, settings: &mut Settings) -> Result<ChosenModel, String> {
    let model = {
        let env = |name: &str| state.credentials.env(name);
        crate::providers::select::select(
            settings,
            &crate::providers::select::ModelChoice {
                fake_responses: state.args.fake_responses.as_deref(),
                record_responses: state.args.record_responses.as_deref(),
                env: &env,
            },
        )
        .map_err(|e| e.to_string())?
    };
    if settings.model.name.trim().is_empty() {
        settings.model.name = model.default_model().await.map_err(|e| e.to_string())?;
    }
    let name = settings.model.name.clone();
    let available = models::available(model.as_ref(), &name).await;
    Ok(ChosenModel {
        model,
        name,
        available,
    })
}

/// Where the session is recorded and, for `session/load`, what it recorded.
struct RecordedSession {
    plan: SessionPlan,
    /// The recorded history (`session/load`), to replay.
    history: Vec<Content>,
    /// The recorded edits' file diffs by call id (`session/load`), to replay.
    edits: std::collections::HashMap<String, Value>,
}

/// A new session in the project's store, or recorded session `load` resumed.
fn session_plan(workspace: &Workspace, load: Option<&str>) -> Result<RecordedSession, String> {
    let store = crate::frontends::sessions::store(workspace).map_err(|e| e.to_string())?;
    let Some(id) = load else {
        let plan = plan(store, &SessionArgs::default()).map_err(|f| f.message)?;
        return Ok(RecordedSession {
            plan,
            history: Vec::new(),
            edits: Default::default(),
        });
    };
    let info = store
        .list()
        .into_iter()
        .find(|s| s.session_id == id)
        .ok_or_else(|| format!("Invalid session identifier \"{id}\""))?;
    let plan = open_existing(store, info).map_err(|e| e.to_string())?;
    Ok(RecordedSession {
        history: plan.history.clone(),
        edits: super::load::recorded_edits(&plan.file),
        plan,
    })
}

/// The client editor's files for session `id`, when the client offers to read or
/// write them (`fs.readTextFile` / `fs.writeTextFile`).
fn client_editor(
    state: &State,
    link: &Link,
    id: &str,
    order: &editor::EventOrder,
) -> Option<SharedEditor> {
    let (reads, writes) = state.client_fs.lock().map(|c| *c).unwrap_or((false, false));
    (reads || writes).then(|| {
        Arc::new(editor::ClientFiles::new(
            link.cx.clone(),
            Arc::new(Mutex::new(id.to_string())),
            (reads, writes),
            order.clone(),
        )) as SharedEditor
    })
}

/// Writes the session's "Always allow" rules to the user's config when they changed
/// (the REPL's store: a new session reads them back as `approval.allowed`).
pub fn save_always_rules(session: &AcpSession) {
    let current =
        crate::frontends::repl::saved_rules::saved_rule_texts(&session.session.policy().rules);
    let Ok(mut persisted) = session.persisted.lock() else {
        return;
    };
    if *persisted == current {
        return;
    }
    match crate::frontends::repl::saved_rules::update_allowed(&user_config(), &persisted, &current)
    {
        Ok(()) => *persisted = current,
        Err(e) => {
            eprintln!("troupe: cannot save the \"Always allow\" rule: {e}");
            tracing::warn!(error = %e, "cannot save always-allow rules");
        }
    }
}

/// Ends a session (`session/close`, or every open one when the client is gone): its
/// turn is cancelled, its "Always allow" rules are saved, and the session shuts down
/// (SessionEnd with `reason`, its threads and MCP server processes ended).
pub async fn close(session: &AcpSession, reason: EndReason) {
    session.session.submit(Op::Cancel);
    save_always_rules(session);
    session.session.shutdown(reason).await;
}
