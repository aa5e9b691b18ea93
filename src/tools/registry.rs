//! The tool registry: type-erased handles over the typed tools, each backed by its
//! own `ToolActor<T>`, plus lookup by name or legacy alias and "did you mean".

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use futures::future::BoxFuture;
use serde_json::Value;

use super::{apply_aliases, declaration_of, PolicyHint, Services, Tool, ToolContext, Touched};
use crate::engine::schema;
use crate::protocol::content::FunctionDeclaration;
use crate::protocol::{ConfirmationDetails, ToolFacts, ToolFactsTable, ToolKind};
use crate::tools::host::ToolActor;
use crate::tools::invoke::{HostOutcome, Invoke};

/// A validated call, ready to be confirmed and executed.
pub trait Invocation: Send {
    fn touched(&self) -> &Touched;
    /// A tool's own approval policy for this call, replacing the built-in one (MCP
    /// tools: server trust, `readOnlyHint`); `None` uses the built-in policy.
    fn decide(
        &self,
        _mode: crate::protocol::ApprovalMode,
        _interactive: bool,
    ) -> Option<crate::engine::policy::PolicyDecision> {
        None
    }
    fn policy_hint(&self) -> Option<PolicyHint>;
    /// Settles a hint that needs the file system ([`Tool::policy_hint_settled`]);
    /// once awaited, [`Invocation::policy_hint`] is final. `None`: it already is.
    fn settle_hint(&mut self) -> Option<BoxFuture<'_, ()>> {
        None
    }
    fn approval_keys(&self) -> &[String];
    fn confirmation(&self, ctx: &ToolContext) -> BoxFuture<'static, Option<ConfirmationDetails>>;
    /// The actor the call goes to (`read_file#1@tool-arbiter-0`), for traces.
    fn actor_label(&self) -> Arc<str>;
    /// Sends the call to the tool's actor.
    fn execute(self: Box<Self>, ctx: ToolContext) -> BoxFuture<'static, HostOutcome>;
}

/// A registered tool, whatever its parameter type.
pub trait ToolHandle: Send + Sync {
    fn name(&self) -> &str;
    fn display_name(&self) -> &str;
    fn kind(&self) -> ToolKind;
    /// The tool's facts ([`Tool::facts`]); a tool that is not a built-in one (an MCP
    /// server's) has the unknown facts with its own kind.
    fn facts(&self) -> ToolFacts {
        ToolFacts {
            kind: self.kind(),
            ..ToolFacts::UNKNOWN
        }
    }
    /// The MCP server the tool comes from (policy rules' `mcpName`); `None` for a
    /// built-in tool.
    fn mcp_server(&self) -> Option<&str> {
        None
    }
    fn description(&self) -> String;
    fn declaration(&self) -> FunctionDeclaration;
    /// Aliases, schema, deserialisation, then the tool's own checks.
    fn prepare(&self, args: &Value, services: &Services) -> Result<Box<dyn Invocation>, String>;
    fn modified_args(&self, args: &Value, edited_content: &str) -> Option<Value>;
    /// [`Tool::conversation_restarted`]; nothing for a tool that is not a built-in one.
    fn conversation_restarted(&self) {}
}

struct Hosted<T: Tool> {
    tool: Arc<T>,
    /// The tool's actors with their labels; calls are spread over them in turn.
    addrs: Vec<(Addr<ToolActor<T>>, Arc<str>)>,
    next: std::sync::atomic::AtomicUsize,
    /// The parameter schema, built once.
    schema: Value,
}

struct Prepared<T: Tool> {
    tool: Arc<T>,
    addr: Addr<ToolActor<T>>,
    label: Arc<str>,
    params: T::Params,
    touched: Touched,
    hint: Option<PolicyHint>,
    /// The hint still to be settled on the FileSystem pool, if any.
    settling: Option<BoxFuture<'static, Option<PolicyHint>>>,
    keys: Vec<String>,
    /// The tool's own policy for the call ([`Tool::decider`]).
    decider: Option<super::Decider>,
}

impl<T: Tool> Invocation for Prepared<T> {
    fn decide(
        &self,
        mode: crate::protocol::ApprovalMode,
        interactive: bool,
    ) -> Option<crate::engine::policy::PolicyDecision> {
        self.decider.as_ref().and_then(|d| d(mode, interactive))
    }

    fn touched(&self) -> &Touched {
        &self.touched
    }

    fn policy_hint(&self) -> Option<PolicyHint> {
        self.hint
    }

    fn settle_hint(&mut self) -> Option<BoxFuture<'_, ()>> {
        let settling = self.settling.take()?;
        Some(Box::pin(async move {
            self.hint = settling.await;
        }))
    }

    fn approval_keys(&self) -> &[String] {
        &self.keys
    }

    fn confirmation(&self, ctx: &ToolContext) -> BoxFuture<'static, Option<ConfirmationDetails>> {
        self.tool.confirmation(&self.params, ctx)
    }

    fn actor_label(&self) -> Arc<str> {
        self.label.clone()
    }

    fn execute(self: Box<Self>, ctx: ToolContext) -> BoxFuture<'static, HostOutcome> {
        let addr = self.addr;
        let params = self.params;
        let Touched { reads, writes } = self.touched;
        let jit_dirs =
            super::jit::start_dirs(self.tool.name(), reads.into_iter().chain(writes).collect());
        let services = ctx.services.clone();
        // Sent now, so the future below keeps only the reply's receiver. `do_send`
        // ignores the mailbox's capacity; an actor that stopped drops the message and
        // with it the reply's sender.
        let (reply, outcome) = tokio::sync::oneshot::channel();
        addr.do_send(Invoke::<T> { params, ctx, reply });
        Box::pin(async move {
            let outcome = outcome.await.map(|boxed| *boxed).unwrap_or_else(|_| {
                HostOutcome::Unavailable("the tool's actor stopped before answering".into())
            });
            let claimed = super::jit::claim_dirs(&outcome, &services, jit_dirs);
            if claimed.is_empty() {
                return outcome;
            }
            // Boxed: only the first call in a directory searches it, so the search's
            // state is not reserved in every call in flight.
            Box::pin(super::jit::with_jit_context(outcome, &services, claimed)).await
        })
    }
}

impl<T: Tool> ToolHandle for Hosted<T> {
    fn name(&self) -> &str {
        self.tool.name()
    }

    fn display_name(&self) -> &str {
        self.tool.display_name()
    }

    fn kind(&self) -> ToolKind {
        self.tool.kind()
    }

    fn facts(&self) -> ToolFacts {
        self.tool.facts()
    }

    fn description(&self) -> String {
        self.tool.description()
    }

    fn declaration(&self) -> FunctionDeclaration {
        declaration_of(self.tool.as_ref())
    }

    fn prepare(&self, args: &Value, services: &Services) -> Result<Box<dyn Invocation>, String> {
        // `wait_for_previous` is the Scheduler's, not the tool's: it goes before the
        // tool's own checks. Arguments are copied only when it is there or a legacy
        // name must be renamed.
        let args = super::wait_for_previous::stripped(args);
        let renamed = needs_aliases(&args, self.tool.aliases())
            .then(|| apply_aliases(&args, self.tool.aliases()));
        let args = renamed.as_ref().unwrap_or(&args);
        schema::validate(&self.schema, args)?;
        let params = <T::Params as serde::Deserialize>::deserialize(args)
            .map_err(|e| format!("Invalid parameters: {e}"))?;
        self.tool.validate(&params, services)?;
        let i = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (addr, label) = &self.addrs[i % self.addrs.len()];
        Ok(Box::new(Prepared {
            tool: self.tool.clone(),
            addr: addr.clone(),
            label: label.clone(),
            touched: self.tool.touched(&params, services),
            hint: self.tool.policy_hint_in(&params, services),
            settling: self.tool.policy_hint_settled(&params, services),
            keys: self.tool.approval_keys(&params, services),
            decider: self.tool.decider(&params, services),
            params,
        }))
    }

    fn modified_args(&self, args: &Value, edited_content: &str) -> Option<Value> {
        self.tool.modified_args(args, edited_content)
    }

    fn conversation_restarted(&self) {
        self.tool.conversation_restarted();
    }
}

/// True when `args` uses a legacy name whose current name is absent.
fn needs_aliases(args: &Value, aliases: &[(&str, &str)]) -> bool {
    args.as_object().is_some_and(|map| {
        aliases
            .iter()
            .any(|(old, new)| map.contains_key(*old) && !map.contains_key(*new))
    })
}

/// Every tool of a session, in registration order: the built-in tools, then the
/// dynamic ones (MCP servers' tools), which may change between turns.
pub struct ToolRegistry {
    tools: Vec<Arc<dyn ToolHandle>>,
    by_name: HashMap<String, usize>,
    dynamic: super::dynamic::DynamicTools,
    timeout: Duration,
    actors_per_tool: usize,
    /// The arbiters (threads) the tool actors live on, shared by all tools.
    arbiters: Vec<ArbiterHandle>,
    /// How traces name those arbiters (`tool-arbiter`, `scheduler-arbiter`).
    arbiter_label: &'static str,
    /// Actors started so far (places the next one on the next arbiter).
    placed: usize,
    /// The facts of every tool registered, by name (kept when [`ToolRegistry::retain`]
    /// leaves a tool out, so a call of it is treated as before), and the legacy names.
    facts: ToolFactsTable,
    /// MCP servers configured but not started (an untrusted folder's project servers):
    /// a call of one of their tools is told why it is not there.
    withheld: Vec<String>,
    /// The filter of [`ToolRegistry::retain`], for tools registered after it.
    keep: Option<KeepFilter>,
}

/// Which tool names the settings let a session offer.
type KeepFilter = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// Where a registry starts its tool actors.
pub enum ToolArbiters {
    /// On an arbiter that already runs (the Scheduler's): no thread of their own.
    Shared(ArbiterHandle),
    /// On these arbiters, started for them and shared by all tools (their starter
    /// stops them); none: on the current arbiter.
    Own(Vec<ArbiterHandle>),
}

/// Names a model trained on older gemini-cli versions may still call.
const LEGACY_ALIASES: [(&str, &str); 1] = [("search_file_content", "grep_search")];

impl ToolRegistry {
    /// `actors_per_tool` actors serve each tool; a tool's calls are spread over them in
    /// turn. The actors of all tools live on the arbiters `arbiters` names, placed
    /// round-robin, so with several threads a tool's actors sit on different ones. Must
    /// run inside an actix `System`.
    pub fn new(call_timeout: Duration, actors_per_tool: usize, arbiters: ToolArbiters) -> Self {
        let (arbiters, label) = match arbiters {
            ToolArbiters::Shared(handle) => (vec![handle], "scheduler-arbiter"),
            ToolArbiters::Own(handles) if handles.is_empty() => {
                (vec![Arbiter::current()], "current-arbiter")
            }
            ToolArbiters::Own(handles) => (handles, "tool-arbiter"),
        };
        let mut facts = ToolFactsTable::default();
        for (old, new) in LEGACY_ALIASES {
            facts.alias(old, new);
        }
        Self {
            tools: Vec::new(),
            by_name: HashMap::new(),
            facts,
            dynamic: Default::default(),
            timeout: call_timeout,
            actors_per_tool: actors_per_tool.max(1),
            arbiters,
            arbiter_label: label,
            placed: 0,
            withheld: Vec::new(),
            keep: None,
        }
    }

    /// Names the MCP servers that are configured but withheld (an untrusted folder's
    /// project servers), for [`ToolRegistry::not_found_message`].
    pub fn withhold_servers(&mut self, servers: Vec<String>) {
        self.withheld = servers;
    }

    /// Registers a tool and starts its actors on the tool arbiters. Must run inside an
    /// actix `System`.
    pub fn register<T: Tool>(&mut self, tool: T) {
        let tool = Arc::new(tool);
        let timeout = tool.time_limit(self.timeout);
        let addrs = (0..self.actors_per_tool)
            .map(|k| {
                let hosted_tool = tool.clone();
                let slot = self.placed % self.arbiters.len();
                self.placed += 1;
                let addr = ToolActor::start_in_arbiter(&self.arbiters[slot], move |_| {
                    ToolActor::new(hosted_tool, timeout)
                });
                let label: Arc<str> =
                    format!("{}#{k}@{}-{slot}", tool.name(), self.arbiter_label).into();
                (addr, label)
            })
            .collect();
        self.by_name
            .insert(tool.name().to_string(), self.tools.len());
        self.facts.insert(tool.name(), tool.facts());
        let schema = tool.schema();
        self.tools.push(Arc::new(Hosted {
            tool,
            addrs,
            next: std::sync::atomic::AtomicUsize::new(0),
            schema,
        }));
    }

    /// Keeps only the tools `keep` accepts (from `tools.core` / `tools.exclude`), and
    /// asks it about the tools registered later ([`ToolRegistry::keeps`]).
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool + Send + Sync + 'static) {
        self.tools.retain(|t| keep(t.name()));
        self.keep = Some(Arc::new(keep));
        self.by_name = self
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name().to_string(), i))
            .collect();
    }

    /// Whether the settings let a tool of this name be offered (what
    /// [`ToolRegistry::retain`] was given; every name before it was called).
    pub fn keeps(&self, name: &str) -> bool {
        self.keep.as_ref().is_none_or(|keep| keep(name))
    }

    /// Looks a tool up by name or legacy alias (built-in first, then dynamic).
    pub fn get(&self, name: &str) -> Option<Arc<dyn ToolHandle>> {
        let name = LEGACY_ALIASES
            .iter()
            .find(|(old, _)| *old == name)
            .map(|(_, new)| *new)
            .unwrap_or(name);
        match self.by_name.get(name) {
            Some(&i) => Some(self.tools[i].clone()),
            None => self.dynamic.get(name),
        }
    }

    /// The facts of the tools registered, by name ([`Tool::facts`]), for the parts of
    /// the runtime that must know what a tool does without calling it.
    pub fn facts(&self) -> &ToolFactsTable {
        &self.facts
    }

    /// The built-in tools.
    pub fn tools(&self) -> &[Arc<dyn ToolHandle>] {
        &self.tools
    }

    /// The dynamic tools (MCP servers' tools), which can be replaced between turns.
    pub fn dynamic(&self) -> &super::dynamic::DynamicTools {
        &self.dynamic
    }

    /// Built-in declarations, then the dynamic tools' as they are now.
    pub fn declarations(&self) -> Vec<FunctionDeclaration> {
        let mut out: Vec<FunctionDeclaration> = self
            .tools
            .iter()
            .filter(|t| !t.facts().subagents_only)
            .map(|t| t.declaration())
            .collect();
        out.extend(self.dynamic.declarations());
        out
    }

    /// Tells every built-in tool that the conversation starts over.
    pub fn conversation_restarted(&self) {
        self.tools.iter().for_each(|t| t.conversation_restarted());
    }

    /// gemini-cli's message for an unknown tool, with the closest names; for a tool of
    /// a withheld MCP server (`mcp_<server>_…`), why that server did not start.
    pub fn not_found_message(&self, name: &str) -> String {
        if let Some(server) = self
            .withheld
            .iter()
            .filter(|s| name.starts_with(&mcp_prefix(s)))
            .max_by_key(|s| s.len())
        {
            return format!(
                "Tool \"{name}\" not found. It belongs to MCP server \"{server}\", which is configured in this folder's project settings (.troupe/config.toml) and does not start because the folder is not trusted. The user can trust the folder with `troupe trust` (or configure the server in the user settings with `troupe mcp add -s user`)."
            );
        }
        let dynamic = self.dynamic.names();
        let mut scored: Vec<(usize, &str)> = self
            .tools
            .iter()
            .map(|t| t.name())
            .chain(dynamic.iter().map(String::as_str))
            .map(|n| (strsim::levenshtein(name, n), n))
            .collect();
        scored.sort();
        let top: Vec<String> = scored
            .iter()
            .take(3)
            .map(|(_, n)| format!("\"{n}\""))
            .collect();
        let suggestion = match top.len() {
            0 => String::new(),
            1 => format!(" Did you mean {}?", top[0]),
            _ => format!(" Did you mean one of: {}?", top.join(", ")),
        };
        format!("Tool \"{name}\" not found.{suggestion}")
    }
}

/// The prefix of an MCP server's tool names as the model sees them (`mcp_<server>_`,
/// characters outside `[A-Za-z0-9_.:-]` replaced by `_`, as `mcp::convert::tool_name`).
fn mcp_prefix(server: &str) -> String {
    format!("mcp_{server}_")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Registers the built-in tools: one line per tool.
pub fn register_builtin(registry: &mut ToolRegistry) {
    registry.register(super::list_directory::ListDirectory);
    registry.register(super::read_file::ReadFile);
    registry.register(super::grep::GrepSearch);
    registry.register(super::glob::Glob);
    registry.register(super::replace::Replace::default());
    registry.register(super::write_file::WriteFile);
    registry.register(super::web_fetch::WebFetch::new());
    registry.register(super::shell::RunShellCommand);
    registry.register(super::background_tools::ListBackgroundProcesses);
    registry.register(super::background_tools::ReadBackgroundOutput);
    registry.register(super::save_memory::SaveMemory);
    registry.register(super::write_todos::WriteTodos);
    registry.register(super::read_many_files::ReadManyFiles);
    // Offered to subagents only.
    registry.register(super::complete_task::CompleteTask);
    registry.register(super::internal_docs::GetInternalDocs);
    registry.register(super::update_topic::UpdateTopic::default());
    registry.register(super::enter_plan_mode::EnterPlanMode);
    registry.register(super::exit_plan_mode::ExitPlanMode);
    registry.register(super::ask_user::AskUser);
}
