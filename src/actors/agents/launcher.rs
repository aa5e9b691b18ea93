//! The launcher one session of a tree holds for its `invoke_agent` calls: it knows the
//! agents, makes each subagent's services, tools and session specification, and hands
//! the run to [`super::drive`].

use std::sync::{Arc, OnceLock};

use futures::future::BoxFuture;

use super::catalog::{AgentCatalog, AgentDef, AgentPrompt, AgentTools};
use super::AgentTree;
use crate::actors::session::{ChildSpec, TreeParts};
use crate::protocol::content::FunctionDeclaration;
use crate::protocol::ToolOutput;
use crate::tools::complete_task::COMPLETE_TASK;
use crate::tools::invoke_agent::{AgentLauncher, AgentSeat, ToolFilter, INVOKE_AGENT};
use crate::tools::{Services, ToolContext};

/// What the subagents of one agent share.
#[derive(Clone)]
struct AgentEquipment {
    declarations: Arc<Vec<FunctionDeclaration>>,
    allowed: Arc<ToolFilter>,
    with_mcp: bool,
    system_prompt: Arc<str>,
}

/// Starts the subagents of one session of the tree (the main session at depth 0).
#[derive(Clone)]
pub struct TreeLauncher {
    pub tree: Arc<AgentTree>,
    pub catalog: Arc<AgentCatalog>,
    pub parts: TreeParts,
    /// How deep the session that holds this launcher is (0: the main session).
    pub depth: u32,
    /// The id of that session (the `parent_id` of the subagents it starts).
    pub parent_id: String,
    /// What each agent's subagents get alike, made at the first of them.
    equipped: Arc<std::sync::Mutex<std::collections::HashMap<String, Arc<AgentEquipment>>>>,
}

impl AgentLauncher for TreeLauncher {
    fn knows(&self, agent_name: &str) -> bool {
        self.catalog.get(agent_name).is_some()
    }

    fn launch(
        &self,
        agent_name: String,
        prompt: String,
        ctx: ToolContext,
    ) -> BoxFuture<'static, ToolOutput> {
        let Some(def) = self.catalog.get(&agent_name).cloned() else {
            let out = not_found(&agent_name);
            return Box::pin(async move { out });
        };
        // Entered now, in the order the calls reach the tool; run later.
        match super::drive::admit(self, &def, &ctx) {
            Ok(admitted) => Box::pin(super::drive::run(self.clone(), def, admitted, prompt, ctx)),
            Err(refused) => Box::pin(async move { *refused }),
        }
    }
}

fn not_found(name: &str) -> ToolOutput {
    let msg = format!("Subagent '{name}' not found.");
    ToolOutput::error(
        crate::protocol::ToolErrorKind::InvalidToolParams,
        msg.clone(),
        msg,
    )
}

impl TreeLauncher {
    /// The launcher of the main session (depth 0) of `tree`.
    pub fn new(
        tree: Arc<AgentTree>,
        catalog: Arc<AgentCatalog>,
        parts: TreeParts,
        session_id: &str,
    ) -> Self {
        Self {
            tree,
            catalog,
            parts,
            depth: 0,
            parent_id: session_id.to_string(),
            equipped: Default::default(),
        }
    }

    /// Whether the subagents this launcher starts may start their own.
    fn children_may_delegate(&self) -> bool {
        self.depth + 1 < self.tree.max_depth
    }

    /// The session specification of subagent `agent_id` running `def`.
    pub(super) fn child_spec(
        &self,
        def: &AgentDef,
        agent_id: &str,
        parent: &Services,
    ) -> ChildSpec {
        let seat = Arc::new(AgentSeat {
            agent_id: agent_id.to_string(),
            name: def.name.clone(),
            output_name: def.output_name.clone(),
        });
        let model_name = def
            .model
            .clone()
            .unwrap_or_else(|| parent.model_name.clone());
        let services = Arc::new(Services {
            workspace: parent.workspace.clone(),
            fs: parent.fs.clone(),
            settings: parent.settings.clone(),
            model: parent.model.clone(),
            model_name: model_name.clone(),
            session_id: agent_id.to_string(),
            corrector: parent.corrector.clone(),
            processes: parent.processes.clone(),
            temp_dir: parent.temp_dir.clone(),
            context: parent.context.clone(),
            hooks: parent.hooks.clone(),
            author: format!("agent {agent_id} ({})", def.name),
            ledger: parent.ledger.clone(),
            agents: OnceLock::new(),
            agent: Some(seat),
            mode: parent.mode.clone(),
        });
        let delegate = self.children_may_delegate();
        if delegate {
            let nested = TreeLauncher {
                depth: self.depth + 1,
                parent_id: agent_id.to_string(),
                equipped: Default::default(),
                ..self.clone()
            };
            let _ = services.agents.set(Arc::new(nested));
        }
        let equipment = self.equipment(def, delegate, parent);
        let AgentEquipment {
            declarations,
            allowed,
            with_mcp,
            system_prompt,
        } = equipment.as_ref().clone();
        let system_prompt = system_prompt.to_string();
        ChildSpec {
            agent_id: agent_id.to_string(),
            name: def.name.clone(),
            services,
            model_name,
            system_prompt,
            declarations,
            allowed,
            max_turns: def.max_turns,
            temperature: def.temperature,
            with_mcp,
        }
    }

    /// What every subagent of `def` gets alike (its tools, its filter, its system
    /// prompt), made once per agent and shared: a thousand generalists hold one copy.
    fn equipment(&self, def: &AgentDef, delegate: bool, parent: &Services) -> Arc<AgentEquipment> {
        let mut made = self.equipped.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(equipment) = made.get(&def.name) {
            return equipment.clone();
        }
        let (mut declarations, mut allowed, with_mcp) = self.tools_of(def, delegate);
        declarations.push(def.complete_task_declaration());
        allowed.names.insert(COMPLETE_TASK.to_string());
        let base = match (&def.prompt, &self.parts.main_prompt) {
            // The main prompt, describing the tools this subagent has.
            (AgentPrompt::Main, Some((prompt, memory))) => {
                let mut prompt = prompt.clone();
                prompt.tools = declarations.clone();
                prompt.render(memory)
            }
            (AgentPrompt::Main, None) => String::new(),
            (AgentPrompt::Own(text), _) => text.clone(),
        };
        let equipment = Arc::new(AgentEquipment {
            declarations: Arc::new(declarations),
            allowed: Arc::new(allowed),
            with_mcp,
            system_prompt: format!("{base}\n\n{}", subagent_rules(def, parent)).into(),
        });
        // A generalist offered live MCP tools sees new ones at each request; one given
        // one server's tools is equipped once, with those discovered by then.
        made.insert(def.name.clone(), equipment.clone());
        equipment
    }

    /// The declarations and the filter of `def`'s tools, and whether the MCP servers'
    /// tools are declared live (all of them).
    fn tools_of(
        &self,
        def: &AgentDef,
        delegate: bool,
    ) -> (Vec<FunctionDeclaration>, ToolFilter, bool) {
        let registry = &self.parts.registry;
        let mut filter = ToolFilter::default();
        let mut live_mcp = false;
        match &def.tools {
            AgentTools::All => {
                filter.prefixes.push("mcp_".into());
                live_mcp = true;
            }
            AgentTools::Named(names) => {
                for name in names {
                    match name.as_str() {
                        "*" => {
                            filter.prefixes.push("mcp_".into());
                            live_mcp = true;
                        }
                        wild if wild.starts_with("mcp_") && wild.ends_with('*') => {
                            filter.prefixes.push(wild.trim_end_matches('*').to_string());
                        }
                        exact => {
                            filter.names.insert(exact.to_string());
                        }
                    }
                }
            }
        }
        let everything = live_mcp;
        let mut declarations = Vec::new();
        for tool in registry.tools() {
            let name = tool.name();
            let offered = match everything {
                true => !tool.facts().subagents_only,
                false => filter.names.contains(name),
            } && !tool.facts().main_session_only;
            if !offered || (name == INVOKE_AGENT && !delegate) {
                continue;
            }
            filter.names.insert(name.to_string());
            declarations.push(tool.declaration());
        }
        if !delegate {
            filter.names.remove(INVOKE_AGENT);
        }
        // Named in an agent file or not, a main session's own tool is not the agent's.
        filter
            .names
            .retain(|name| !registry.facts().get(name).main_session_only);
        if !live_mcp && !filter.prefixes.is_empty() {
            // One server's tools: those discovered by now.
            let dynamic = registry.dynamic().declarations();
            declarations.extend(dynamic.into_iter().filter(|d| filter.allows(&d.name)));
        }
        (declarations, filter, live_mcp)
    }
}

/// What every subagent's system prompt ends with: where it works, that nobody can
/// answer it, and that `complete_task` is how it finishes.
fn subagent_rules(def: &AgentDef, parent: &Services) -> String {
    let roots: Vec<String> = parent
        .workspace
        .roots()
        .iter()
        .map(|r| r.display().to_string())
        .collect();
    format!(
        "# Working as a subagent\n\
         You are the `{name}` subagent, started by another agent for one task. Workspace roots: {roots}.\n\
         - Nobody can answer a question of yours: decide for yourself and go on with the tools you have.\n\
         - Work through the task step by step, with absolute paths under the workspace roots.\n\
         - If a call of yours is refused, do not repeat it: find another way, or report what blocked you.\n\
         - When the task is done, call `complete_task` with your output in `{output}`, and no other tool in that answer. It is the only way to finish: stopping without it fails the task.",
        name = def.name,
        roots = roots.join(", "),
        output = def.output_name,
    )
}
