//! The agents a session can start: the three built-in ones (gemini-cli 0.61's
//! `generalist`, `codebase_investigator`, `cli_help`), then the agent files
//! (`crate::settings::agents`), then `agents.overrides.<name>` from the settings.

use std::time::Duration;

use serde_json::{json, Value};

use crate::settings::agents::{AgentFile, LoadedAgents};
use crate::settings::{AgentOverride, Settings};

/// Which tools an agent gets.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentTools {
    /// Every tool of its parent (MCP tools included).
    All,
    /// These names, `*`, `mcp_*` and `mcp_<server>_*` among them.
    Named(Vec<String>),
}

/// Where an agent's system prompt comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentPrompt {
    /// The main session's own system prompt (the generalist's).
    Main,
    Own(String),
}

/// One agent that can be started.
#[derive(Debug, Clone)]
pub struct AgentDef {
    pub name: String,
    pub display_name: String,
    pub description: String,
    pub prompt: AgentPrompt,
    /// The first message of its turn, `{input}` standing for the caller's prompt.
    pub query: String,
    pub tools: AgentTools,
    /// The argument of `complete_task` that carries the output, and its schema.
    pub output_name: String,
    pub output_schema: Value,
    pub output_description: String,
    /// `None`: its parent's model.
    pub model: Option<String>,
    pub temperature: Option<f64>,
    pub max_turns: u32,
    pub timeout: Duration,
}

impl AgentDef {
    /// The declaration of `complete_task` this agent is offered.
    pub fn complete_task_declaration(&self) -> crate::protocol::content::FunctionDeclaration {
        let mut schema = self.output_schema.clone();
        if let Some(map) = schema.as_object_mut() {
            map.entry("description")
                .or_insert_with(|| Value::String(self.output_description.clone()));
        }
        crate::protocol::content::FunctionDeclaration {
            name: crate::tools::complete_task::COMPLETE_TASK.to_string(),
            description: "Submits your final output to the agent that started you and ends your task; there is no other way to finish. Call it once, when the task is done.".into(),
            // gemini-cli's complete_task is built on its base tool class, which adds
            // `wait_for_previous`.
            parameters_json_schema: crate::tools::wait_for_previous::declared(json!({
                "type": "object",
                "properties": { self.output_name.clone(): schema },
                "required": [self.output_name],
            })),
        }
    }

    /// The first message of the agent's turn for the caller's `prompt`.
    pub fn query_for(&self, prompt: &str) -> String {
        self.query.replace("{input}", prompt)
    }
}

/// The agents of a session.
#[derive(Debug, Clone, Default)]
pub struct AgentCatalog {
    pub agents: Vec<AgentDef>,
}

impl AgentCatalog {
    /// The built-ins, the files `loaded` (a file cannot replace a built-in: as in
    /// gemini-cli, the later of two agents of one name is left out, with a warning),
    /// then the overrides of `settings`. Answers the warnings too.
    pub fn new(settings: &Settings, loaded: &LoadedAgents) -> (Self, Vec<String>) {
        let mut agents = builtin();
        let mut warnings = Vec::new();
        for file in &loaded.agents {
            if agents.iter().any(|a| a.name == file.name) {
                warnings.push(format!("Duplicate agent name '{}' detected. The later definition will be ignored. Rename one of the agents to avoid this conflict. ({})", file.name, file.path.display()));
                continue;
            }
            agents.push(from_file(file));
        }
        for (name, over) in &settings.agents.overrides {
            apply_override(&mut agents, name, over);
        }
        (Self { agents }, warnings)
    }

    pub fn get(&self, name: &str) -> Option<&AgentDef> {
        self.agents.iter().find(|a| a.name == name)
    }

    /// `(name, description)` of each, for `invoke_agent`'s description.
    pub fn summary(&self) -> Vec<(String, String)> {
        let agents = self.agents.iter();
        agents
            .map(|a| (a.name.clone(), a.description.clone()))
            .collect()
    }
}

fn apply_override(agents: &mut Vec<AgentDef>, name: &str, over: &AgentOverride) {
    if over.enabled == Some(false) {
        agents.retain(|a| a.name != name);
        return;
    }
    let Some(agent) = agents.iter_mut().find(|a| a.name == name) else {
        return;
    };
    if let Some(model) = over
        .model
        .as_ref()
        .filter(|m| !m.is_empty() && *m != "inherit")
    {
        agent.model = Some(model.clone());
    }
    if let Some(turns) = over.max_turns {
        agent.max_turns = turns.max(1);
    }
    if let Some(mins) = over.timeout_mins.filter(|m| *m > 0.0) {
        agent.timeout = Duration::from_secs_f64(mins * 60.0);
    }
}

fn from_file(file: &AgentFile) -> AgentDef {
    AgentDef {
        name: file.name.clone(),
        display_name: file
            .display_name
            .clone()
            .unwrap_or_else(|| file.name.clone()),
        description: file.description.clone(),
        prompt: AgentPrompt::Own(file.prompt.clone()),
        query: "{input}".into(),
        tools: match &file.tools {
            None => AgentTools::All,
            Some(names) => AgentTools::Named(names.clone()),
        },
        output_name: "result".into(),
        output_schema: json!({
            "type": "string",
            "description": "Your final results or findings to return to the agent that started you, complete and in the form your instructions ask for."
        }),
        output_description: "Your final results or findings.".into(),
        model: file.model.clone(),
        temperature: file.temperature,
        max_turns: file.max_turns.max(1),
        timeout: Duration::from_secs_f64(file.timeout_mins.max(0.01) * 60.0),
    }
}

fn builtin() -> Vec<AgentDef> {
    vec![generalist(), codebase_investigator(), cli_help()]
}

fn generalist() -> AgentDef {
    AgentDef {
        name: "generalist".into(),
        display_name: "Generalist Agent".into(),
        description: "An agent with all of your tools and a context of its own. Best for tasks that take many turns or much output (refactoring or fixing errors across several files, running commands with long output, speculative investigations), so that this conversation stays short.".into(),
        prompt: AgentPrompt::Main,
        query: "{input}".into(),
        tools: AgentTools::All,
        output_name: "result".into(),
        output_schema: json!({
            "type": "object",
            "properties": {
                "response": {"type": "string", "description": "The agent's final answer."}
            },
            "required": ["response"],
            "additionalProperties": false
        }),
        output_description: "The final answer or results of the task.".into(),
        model: None,
        temperature: None,
        max_turns: 20,
        timeout: Duration::from_secs(10 * 60),
    }
}

fn codebase_investigator() -> AgentDef {
    let location = json!({
        "type": "object",
        "properties": {
            "FilePath": {"type": "string"},
            "Reasoning": {"type": "string"},
            "KeySymbols": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["FilePath", "Reasoning", "KeySymbols"],
        "additionalProperties": false
    });
    AgentDef {
        name: "codebase_investigator".into(),
        display_name: "Codebase Investigator Agent".into(),
        description: "Investigates the codebase with read-only tools and returns a structured report: the files and symbols that matter, how they connect, and what a change would touch. Use it for vague requests, root causes of bugs, refactorings and features that span the system, and questions that need a look around first.".into(),
        prompt: AgentPrompt::Own(INVESTIGATOR_PROMPT.into()),
        query: "Investigate the codebase for this objective, and find every file, symbol and connection needed to reach it:\n<objective>\n{input}\n</objective>".into(),
        tools: AgentTools::Named(
            [
                crate::tools::list_directory::NAME,
                crate::tools::read_file::NAME,
                crate::tools::glob::NAME,
                crate::tools::grep::NAME,
            ]
            .map(String::from)
            .to_vec(),
        ),
        output_name: "report".into(),
        output_schema: json!({
            "type": "object",
            "properties": {
                "SummaryOfFindings": {"type": "string", "description": "What the investigation concluded, for the agent that asked."},
                "ExplorationTrace": {"type": "array", "items": {"type": "string"}, "description": "The steps taken and the tools used, in order."},
                "RelevantLocations": {"type": "array", "items": location, "description": "The files that matter and their key symbols."}
            },
            "required": ["SummaryOfFindings", "ExplorationTrace", "RelevantLocations"],
            "additionalProperties": false
        }),
        output_description: "The final investigation report as a JSON object.".into(),
        model: None,
        temperature: Some(0.1),
        max_turns: 50,
        timeout: Duration::from_secs(10 * 60),
    }
}

fn cli_help() -> AgentDef {
    AgentDef {
        name: "cli_help".into(),
        display_name: "CLI Help Agent".into(),
        description: "Answers questions about Troupe itself (its flags, settings, approval modes, sandbox, sessions, MCP, hooks, agents and agent files) from the documentation Troupe carries.".into(),
        prompt: AgentPrompt::Own(CLI_HELP_PROMPT.into()),
        query: "Answer this question about Troupe:\n<question>\n{input}\n</question>".into(),
        tools: AgentTools::Named(vec![crate::tools::internal_docs::GET_INTERNAL_DOCS.into()]),
        output_name: "report".into(),
        output_schema: json!({
            "type": "object",
            "properties": {
                "answer": {"type": "string", "description": "The answer to the question."},
                "sources": {"type": "array", "items": {"type": "string"}, "description": "The documentation files the answer comes from."}
            },
            "required": ["answer", "sources"],
            "additionalProperties": false
        }),
        output_description: "The answer and its sources as a JSON object.".into(),
        model: None,
        temperature: Some(0.1),
        max_turns: 10,
        timeout: Duration::from_secs(3 * 60),
    }
}

const INVESTIGATOR_PROMPT: &str = "You are the Codebase Investigator, a subagent that studies a codebase for another agent. You do not change anything: your tools only list, find and read files. Your whole job is to understand the code that bears on the objective you are given and to report it so well that the agent who asked can act without looking again.

How to work:
- Start from the strongest clues in the objective (names, messages, paths) and widen from there. Follow imports, callers and definitions until you understand why the code is the way it is, not only where it is.
- Keep a short plan as you go: what you have checked, what you still need to answer, what turned out not to matter.
- Think about the consequences of a change: who calls what you found, which types and tests would have to change with it.
- Do not stop at the first file that looks right, and do not write the implementation.

When you are done, call `complete_task` with your report: a summary of what you found and concluded, the steps you took, and the relevant files with their key symbols and why each matters. That call is the only way to finish.";

const CLI_HELP_PROMPT: &str = "You are the CLI Help agent: you answer questions about Troupe, a terminal coding agent, from its own documentation.

Use `get_internal_docs` to find the answer: called without a path it lists the documents Troupe carries; with a path it gives one of them. Answer precisely from what the documents say, and name the documents you used. You cannot ask the user anything: if the question is ambiguous, answer the most likely reading.

When you have the answer, call `complete_task` with a report holding the `answer` and the `sources` you used. That call is the only way to finish.";
