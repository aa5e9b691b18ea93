//! A session's run as an ATIF trajectory (Agent Trajectory Interchange Format, the
//! `trajectory.json` that Harbor and its converters read): built from the session's
//! events as a front end sees them, with no I/O (the caller passes each event's time
//! and writes the document where it likes).
//!
//! One user step per prompt; one agent step per model request, holding the request's
//! text, thoughts, usage, the calls it asked for and, as its observation, their
//! results; a system step when a turn ends other than by completing. Subagents are
//! trajectories of their own, embedded in their parent's `subagent_trajectories` and
//! referenced from the `invoke_agent` result that ran them.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::protocol::content::Usage;
use crate::protocol::{AgentStep, AgentUpdate, CompletedCall, TurnOutcome, UiEvent};

/// The ATIF version written: the first with `trajectory_id`, embedded subagents and
/// `llm_call_count`, all of which Troupe uses.
pub const SCHEMA_VERSION: &str = "ATIF-v1.7";

/// The tool whose result references a subagent's trajectory.
const INVOKE_AGENT: &str = "invoke_agent";

/// Who made a trajectory: the agent system, its version and default model.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct AgentInfo {
    pub name: String,
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Value>,
}

/// One step of a trajectory.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Step {
    pub step_id: usize,
    pub timestamp: String,
    pub source: &'static str,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observation: Option<Observation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm_call_count: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Value>,
}

/// A call the model asked for.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ToolCall {
    pub tool_call_id: String,
    pub function_name: String,
    pub arguments: Value,
}

/// The results of a step's calls.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Observation {
    pub results: Vec<ObservationResult>,
}

/// One call's result.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ObservationResult {
    pub source_call_id: String,
    pub content: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagent_trajectory_ref: Option<Vec<SubagentRef>>,
    pub extra: Value,
}

/// A reference to an embedded subagent trajectory.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SubagentRef {
    pub trajectory_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// A model request's token counts.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Metrics {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cached_tokens: u64,
}

/// The trajectory's totals.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FinalMetrics {
    pub total_prompt_tokens: u64,
    pub total_completion_tokens: u64,
    pub total_cached_tokens: u64,
    pub total_steps: usize,
    pub extra: Value,
}

/// A whole trajectory document.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Trajectory {
    pub schema_version: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trajectory_id: Option<String>,
    pub agent: AgentInfo,
    pub steps: Vec<Step>,
    pub final_metrics: FinalMetrics,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagent_trajectories: Option<Vec<Trajectory>>,
}

/// The model request being built into an agent step.
#[derive(Debug, Default, Clone)]
struct OpenRound {
    timestamp: String,
    text: String,
    thoughts: String,
    usage: Option<Usage>,
    calls: Vec<ToolCall>,
    results: Vec<ObservationResult>,
}

/// One agent's steps so far (the session's own, or a subagent's).
#[derive(Debug)]
struct Track {
    /// The subagent's id and its parent's (`None` for the session itself).
    ids: Option<(String, String)>,
    agent_name: String,
    session_id: Option<String>,
    model: Option<String>,
    steps: Vec<Step>,
    open: Option<OpenRound>,
    ended: Option<String>,
}

impl Track {
    fn new(ids: Option<(String, String)>, agent_name: &str) -> Self {
        Self {
            ids,
            agent_name: agent_name.to_string(),
            session_id: None,
            model: None,
            steps: Vec::new(),
            open: None,
            ended: None,
        }
    }

    fn push(&mut self, mut step: Step) {
        step.step_id = self.steps.len() + 1;
        self.steps.push(step);
    }

    fn observe(&mut self, event: &UiEvent, now: &str) {
        match event {
            UiEvent::SessionStarted { session_id, model } => {
                self.session_id.get_or_insert_with(|| session_id.clone());
                if !model.is_empty() {
                    self.model = Some(model.clone());
                }
            }
            UiEvent::TurnStarted { prompt, .. } => {
                self.close_round();
                self.push(plain_step("user", prompt.clone(), now));
            }
            UiEvent::ModelRequest { .. } => {
                self.close_round();
                self.open = Some(OpenRound {
                    timestamp: now.to_string(),
                    ..OpenRound::default()
                });
            }
            UiEvent::Retry { .. } => {
                if let Some(open) = &mut self.open {
                    // The failed attempt's partial answer is void; the retry's replaces it.
                    (open.text, open.thoughts, open.usage) = (String::new(), String::new(), None);
                }
            }
            UiEvent::TextDelta(text) => self.round(now).text.push_str(text),
            UiEvent::Thought(text) => self.round(now).thoughts.push_str(text),
            UiEvent::Usage(usage) => self.round(now).usage = Some(*usage),
            UiEvent::ToolCallCompleted(call) => self.on_call(call, now),
            UiEvent::TurnFinished(outcome) => {
                self.close_round();
                if let Some(text) = unfinished(outcome) {
                    self.push(plain_step("system", text, now));
                }
            }
            _ => {}
        }
    }

    fn round(&mut self, now: &str) -> &mut OpenRound {
        self.open.get_or_insert_with(|| OpenRound {
            timestamp: now.to_string(),
            ..OpenRound::default()
        })
    }

    fn on_call(&mut self, call: &CompletedCall, now: &str) {
        let subagent = (call.name == INVOKE_AGENT)
            .then(|| {
                call.data
                    .as_ref()?
                    .get("agentId")?
                    .as_str()
                    .map(str::to_string)
            })
            .flatten();
        let round = self.round(now);
        round.calls.push(ToolCall {
            tool_call_id: call.call_id.clone(),
            function_name: call.name.clone(),
            arguments: call.args.as_ref().clone(),
        });
        round.results.push(ObservationResult {
            source_call_id: call.call_id.clone(),
            content: call_output(call),
            subagent_trajectory_ref: subagent.map(|id| {
                vec![SubagentRef {
                    trajectory_id: id,
                    session_id: None,
                }]
            }),
            extra: serde_json::json!({"status": call.status}),
        });
    }

    fn close_round(&mut self) {
        if let Some(open) = self.open.take() {
            self.push(round_step(open));
        }
    }

    fn document(&self, agent: &AgentInfo, children: Vec<Trajectory>) -> Trajectory {
        let mut steps = self.steps.clone();
        if let Some(open) = &self.open {
            // A request still in flight is shown as far as it got.
            let mut step = round_step(open.clone());
            step.step_id = steps.len() + 1;
            steps.push(step);
        }
        let sum = |f: fn(&Metrics) -> u64| -> u64 {
            steps.iter().filter_map(|s| s.metrics.as_ref()).map(f).sum()
        };
        let final_metrics = FinalMetrics {
            total_prompt_tokens: sum(|m| m.prompt_tokens),
            total_completion_tokens: sum(|m| m.completion_tokens),
            total_cached_tokens: sum(|m| m.cached_tokens),
            total_steps: steps.len(),
            extra: serde_json::json!({
                "tool_calls": steps.iter().filter_map(|s| s.tool_calls.as_ref()).map(Vec::len).sum::<usize>(),
            }),
        };
        let mut info = agent.clone();
        if let Some(model) = &self.model {
            info.model_name = Some(model.clone());
        }
        if self.ids.is_some() {
            info.extra = Some(serde_json::json!({
                "subagent": self.agent_name,
                "termination_reason": self.ended,
            }));
        }
        Trajectory {
            schema_version: SCHEMA_VERSION,
            session_id: self.session_id.clone(),
            trajectory_id: self.ids.as_ref().map(|(id, _)| id.clone()),
            agent: info,
            steps,
            final_metrics,
            subagent_trajectories: (!children.is_empty()).then_some(children),
        }
    }
}

/// Builds a session's trajectory from its events ([`TrajectoryBuilder::observe`]).
#[derive(Debug)]
pub struct TrajectoryBuilder {
    agent: AgentInfo,
    root: Track,
    /// Subagents by id, in the order they were queued.
    subagents: BTreeMap<usize, Track>,
    order: BTreeMap<String, usize>,
}

impl TrajectoryBuilder {
    /// A builder for a run of `agent` (its name and version; the model is taken from
    /// the session's start).
    pub fn new(agent: AgentInfo) -> Self {
        Self {
            agent,
            root: Track::new(None, ""),
            subagents: BTreeMap::new(),
            order: BTreeMap::new(),
        }
    }

    /// Takes one event of the session, which happened at `now` (ISO 8601).
    pub fn observe(&mut self, event: &UiEvent, now: &str) {
        match event {
            UiEvent::Agent(update) => self.on_agent(update, now),
            other => self.root.observe(other, now),
        }
    }

    fn on_agent(&mut self, update: &AgentUpdate, now: &str) {
        if let AgentStep::Event(event) = &update.what {
            if let UiEvent::Agent(inner) = event.as_ref() {
                // A grandchild's updates may come wrapped in its parent's.
                return self.on_agent(inner, now);
            }
        }
        let index = match self.order.get(&update.agent_id) {
            Some(index) => *index,
            None => {
                let index = self.order.len();
                self.order.insert(update.agent_id.clone(), index);
                let ids = (update.agent_id.clone(), update.parent_id.clone());
                let mut track = Track::new(Some(ids), &update.name);
                track.session_id = self.root.session_id.clone();
                self.subagents.insert(index, track);
                index
            }
        };
        let Some(track) = self.subagents.get_mut(&index) else {
            return;
        };
        match &update.what {
            // The child's prompt comes as its session's own TurnStarted.
            AgentStep::Queued { .. } | AgentStep::Started => {}
            AgentStep::Event(event) => track.observe(event, now),
            AgentStep::Finished(totals) => {
                track.close_round();
                track.ended = Some(totals.reason.clone());
            }
        }
    }

    /// Whether there is anything to write (a trajectory needs at least one step).
    pub fn is_empty(&self) -> bool {
        self.root.steps.is_empty() && self.root.open.is_none()
    }

    /// The trajectory as it stands: every subagent embedded under its parent.
    pub fn document(&self) -> Trajectory {
        self.document_of(None, &self.root)
    }

    fn document_of(&self, id: Option<&str>, track: &Track) -> Trajectory {
        let parent = id.unwrap_or("");
        let children = self
            .subagents
            .values()
            .filter(|child| {
                child.ids.as_ref().is_some_and(|(_, p)| {
                    p == parent || (id.is_none() && !self.order.contains_key(p))
                })
            })
            .filter(|child| !child.steps.is_empty())
            .map(|child| {
                let child_id = child.ids.as_ref().map(|(c, _)| c.as_str());
                self.document_of(child_id, child)
            })
            .collect();
        track.document(&self.agent, children)
    }
}

/// A model request's agent step.
fn round_step(open: OpenRound) -> Step {
    let metrics = open.usage.map(|u| Metrics {
        prompt_tokens: u.prompt_token_count,
        completion_tokens: u.candidates_token_count + u.thoughts_token_count,
        cached_tokens: u.cached_content_token_count,
    });
    let has_calls = !open.calls.is_empty();
    Step {
        step_id: 0,
        timestamp: open.timestamp,
        source: "agent",
        message: open.text,
        reasoning_content: (!open.thoughts.is_empty()).then_some(open.thoughts),
        tool_calls: has_calls.then_some(open.calls),
        observation: has_calls.then_some(Observation {
            results: open.results,
        }),
        metrics,
        llm_call_count: Some(1),
        extra: None,
    }
}

fn plain_step(source: &'static str, message: String, now: &str) -> Step {
    Step {
        step_id: 0,
        timestamp: now.to_string(),
        source,
        message,
        reasoning_content: None,
        tool_calls: None,
        observation: None,
        metrics: None,
        llm_call_count: None,
        extra: None,
    }
}

/// What a turn that did not complete says in its system step.
fn unfinished(outcome: &TurnOutcome) -> Option<String> {
    match outcome {
        TurnOutcome::Completed { .. } => None,
        TurnOutcome::Cancelled => Some("The turn was cancelled.".into()),
        TurnOutcome::MaxTurns { limit } => Some(format!(
            "The turn reached its limit of {limit} model rounds."
        )),
        TurnOutcome::Failed { message } => Some(format!("The turn failed: {message}")),
        TurnOutcome::LoopDetected { message } => {
            Some(format!("The turn was stopped in a loop: {message}"))
        }
    }
}

/// A call's result as the model got it: the output text, the error, or the response
/// as JSON.
fn call_output(call: &CompletedCall) -> String {
    let response = call
        .response_parts
        .iter()
        .find_map(|p| p.function_response.as_deref())
        .map(|r| &r.response);
    match response {
        Some(Value::Object(map)) => match (map.get("output"), map.get("error")) {
            (Some(Value::String(out)), _) => out.clone(),
            (_, Some(Value::String(err))) => err.clone(),
            _ => Value::Object(map.clone()).to_string(),
        },
        Some(other) => other.to_string(),
        None => call
            .error
            .as_ref()
            .map(|e| e.message.clone())
            .unwrap_or_else(|| call.display.clone()),
    }
}

#[cfg(test)]
#[path = "trajectory_tests.rs"]
mod tests;
