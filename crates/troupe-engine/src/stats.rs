//! Session statistics gathered from the event stream: tool calls by tool, tokens,
//! lines changed, edit strategies and corrections. Rendered with gemini-cli's keys
//! (its `uiTelemetry` metrics: `models`, `tools`, `files`).

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::{json, Value};

use crate::protocol::content::Usage;
use crate::protocol::{CallStatus, CompletedCall, UiEvent};

/// Counters of one tool.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolStat {
    pub count: u64,
    pub success: u64,
    pub fail: u64,
    pub duration_ms: f64,
    pub decisions: Decisions,
}

/// How calls were approved, with gemini-cli's names (`ToolCallDecision`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Decisions {
    /// Approved when asked, or run under `--yolo` (gemini-cli counts those so too).
    pub accept: u64,
    /// Refused: denied when asked, or needing an approval that could not be given.
    pub reject: u64,
    /// Changed by the user before it ran (never in Troupe: it has no modify step).
    pub modify: u64,
    /// Approved by a remembered "always" answer.
    pub auto_accept: u64,
}

impl Decisions {
    fn add(&mut self, other: &Decisions) {
        self.accept += other.accept;
        self.reject += other.reject;
        self.modify += other.modify;
        self.auto_accept += other.auto_accept;
    }

    fn to_json(self) -> Value {
        json!({"accept": self.accept, "reject": self.reject, "modify": self.modify,
            "auto_accept": self.auto_accept})
    }
}

/// Counters of the subagents of one agent name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentStat {
    pub count: u64,
    /// How they ended, by termination reason (`GOAL`, `TIMEOUT`, …).
    pub reasons: BTreeMap<String, u64>,
    pub turns: u64,
    pub tool_calls: u64,
    pub tokens: u64,
    pub duration_ms: u64,
}

/// Everything counted in a session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionStats {
    pub by_tool: BTreeMap<String, ToolStat>,
    pub requests: u64,
    /// Failed model attempts (each retry), by type (an HTTP status, `MAX_TOKENS`,
    /// `UNKNOWN`).
    pub errors_by_type: BTreeMap<String, u64>,
    /// Time from sending each model request to the last of its answer seen.
    pub latency_ms: u64,
    /// Calls run without asking are counted as accepted (`--yolo`), as gemini-cli does.
    pub approve_all: bool,
    pub prompt_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    pub cached_tokens: u64,
    pub thought_tokens: u64,
    pub lines_added: u64,
    pub lines_removed: u64,
    /// Which edit strategy matched (`exact`, `flexible`, …), by count.
    pub edit_strategies: BTreeMap<String, u64>,
    /// How LLM corrections ended (`success`, `failure`, `no_change`), by count.
    pub corrections: BTreeMap<String, u64>,
    /// Prompt tokens of the latest request (for compression decisions).
    pub last_prompt_tokens: u64,
    /// The subagents that ended, by agent name.
    pub agents: BTreeMap<String, AgentStat>,
    current: Usage,
    /// The request in flight: when it was sent and when its answer was last seen.
    in_flight: Option<(Instant, Instant)>,
}

impl SessionStats {
    /// Empty stats; with `approve_all` the calls run without asking count as accepted
    /// (`--yolo`).
    pub fn approving_all(approve_all: bool) -> Self {
        Self {
            approve_all,
            ..Self::default()
        }
    }

    pub fn record(&mut self, event: &UiEvent) {
        match event {
            // Gemini repeats cumulative usage on every chunk: keep the last of each request.
            UiEvent::Usage(u) => {
                self.current = *u;
                self.seen_answer();
            }
            UiEvent::TextDelta(_) | UiEvent::Thought(_) | UiEvent::ToolCallRequested { .. } => {
                self.seen_answer();
            }
            UiEvent::ModelRequest { .. } => {
                self.fold_current();
                self.requests += 1;
                let now = Instant::now();
                self.in_flight = Some((now, now));
            }
            UiEvent::Retry { reason, .. } => {
                *self.errors_by_type.entry(error_type(reason)).or_default() += 1;
            }
            UiEvent::ToolCallCompleted(call) => self.record_call(call),
            UiEvent::Agent(update) => {
                if let crate::protocol::AgentStep::Finished(totals) = &update.what {
                    let stat = self.agents.entry(update.name.clone()).or_default();
                    stat.count += 1;
                    *stat.reasons.entry(totals.reason.clone()).or_default() += 1;
                    stat.turns += u64::from(totals.turns);
                    stat.tool_calls += u64::from(totals.tool_calls);
                    stat.tokens += totals.tokens;
                    stat.duration_ms += totals.elapsed_ms;
                }
            }
            _ => {}
        }
    }

    /// The answer of the request in flight arrived (a chunk of it).
    fn seen_answer(&mut self) {
        if let Some((_, last)) = self.in_flight.as_mut() {
            *last = Instant::now();
        }
    }

    fn fold_current(&mut self) {
        if let Some((sent, last)) = self.in_flight.take() {
            self.latency_ms += last.duration_since(sent).as_millis() as u64;
        }
        let u = std::mem::take(&mut self.current);
        if u.prompt_token_count > 0 {
            self.last_prompt_tokens = u.prompt_token_count;
        }
        self.prompt_tokens += u.prompt_token_count;
        self.output_tokens += u.candidates_token_count;
        self.total_tokens += u.total_token_count;
        self.cached_tokens += u.cached_content_token_count;
        self.thought_tokens += u.thoughts_token_count;
    }

    /// Totals including the request in flight.
    pub fn settled(&self) -> SessionStats {
        let mut s = self.clone();
        s.fold_current();
        s
    }

    fn record_call(&mut self, call: &CompletedCall) {
        if !self.by_tool.contains_key(&call.name) {
            self.by_tool.insert(call.name.clone(), Default::default());
        }
        let Some(stat) = self.by_tool.get_mut(&call.name) else {
            return;
        };
        stat.count += 1;
        if call.status == CallStatus::Success {
            stat.success += 1;
        } else {
            stat.fail += 1;
        }
        stat.duration_ms += call.duration.as_secs_f64() * 1000.0;
        let asked = call.timeline.awaiting_approval.is_some();
        let ran = call.timeline.executing.is_some();
        match (asked, ran) {
            (true, true) => stat.decisions.accept += 1,
            (true, false) => stat.decisions.reject += 1,
            (false, true) if self.approve_all => stat.decisions.accept += 1,
            _ if refused_by_policy(call) => stat.decisions.reject += 1,
            _ => {}
        }
        if let Some(data) = &call.data {
            if let Some(n) = data
                .pointer("/diff_stat/lines_added")
                .and_then(Value::as_u64)
            {
                self.lines_added += n;
            }
            if let Some(n) = data
                .pointer("/diff_stat/lines_removed")
                .and_then(Value::as_u64)
            {
                self.lines_removed += n;
            }
            if let Some(s) = data.get("strategy").and_then(Value::as_str) {
                *self.edit_strategies.entry(s.to_string()).or_default() += 1;
            }
            if let Some(s) = data.get("correction").and_then(Value::as_str) {
                *self.corrections.entry(s.to_string()).or_default() += 1;
            }
        }
    }

    pub fn total_calls(&self) -> u64 {
        self.by_tool.values().map(|s| s.count).sum()
    }

    /// Failed model attempts.
    pub fn total_errors(&self) -> u64 {
        self.errors_by_type.values().sum()
    }

    /// Prompt tokens not served from the cache (gemini-cli's `tokens.input`).
    pub fn input_tokens(&self) -> u64 {
        self.prompt_tokens.saturating_sub(self.cached_tokens)
    }

    /// The `tokens` object of a model or role, with gemini-cli's keys (`tool`: Troupe
    /// does not read the tool-use prompt count, so 0).
    fn tokens_json(&self) -> Value {
        json!({
            "input": self.input_tokens(),
            "prompt": self.prompt_tokens,
            "candidates": self.output_tokens,
            "total": self.total_tokens,
            "cached": self.cached_tokens,
            "thoughts": self.thought_tokens,
            "tool": 0
        })
    }

    /// The `models` object: the session's model with its `api`, `tokens` and the
    /// `main` role (every request counted here is the main session's).
    fn models_json(&self, model: &str) -> Value {
        let mut roles = serde_json::Map::new();
        if self.requests > 0 || self.total_errors() > 0 {
            roles.insert(
                "main".into(),
                json!({"totalRequests": self.requests, "totalErrors": self.total_errors(),
                    "totalLatencyMs": self.latency_ms, "tokens": self.tokens_json()}),
            );
        }
        json!({
            model: {
                "api": {"totalRequests": self.requests, "totalErrors": self.total_errors(),
                    "totalLatencyMs": self.latency_ms, "errorsByType": self.errors_by_type},
                "tokens": self.tokens_json(),
                "roles": roles
            }
        })
    }

    /// The stream-json `result.stats`, with gemini-cli's keys
    /// (`StreamJsonFormatter.convertToStreamStats`).
    pub fn stream_json(&self, model: &str, duration_ms: u64) -> Value {
        let per_model = json!({"total_tokens": self.total_tokens,
            "input_tokens": self.prompt_tokens, "output_tokens": self.output_tokens,
            "cached": self.cached_tokens, "input": self.input_tokens()});
        json!({
            "total_tokens": self.total_tokens,
            "input_tokens": self.prompt_tokens,
            "output_tokens": self.output_tokens,
            "cached": self.cached_tokens,
            "input": self.input_tokens(),
            "duration_ms": duration_ms,
            "tool_calls": self.total_calls(),
            "models": {model: per_model}
        })
    }

    /// The `stats` object of `-o json`, with gemini-cli's keys.
    pub fn to_json(&self, model: &str) -> Value {
        let by_name: serde_json::Map<String, Value> = self
            .by_tool
            .iter()
            .map(|(name, s)| {
                (
                    name.clone(),
                    json!({"count": s.count, "success": s.success, "fail": s.fail,
                           "durationMs": s.duration_ms.round() as u64,
                           "decisions": s.decisions.to_json()}),
                )
            })
            .collect();
        let success: u64 = self.by_tool.values().map(|s| s.success).sum();
        let fail: u64 = self.by_tool.values().map(|s| s.fail).sum();
        let duration: f64 = self.by_tool.values().map(|s| s.duration_ms).sum();
        let mut decisions = Decisions::default();
        for s in self.by_tool.values() {
            decisions.add(&s.decisions);
        }
        let mut out = json!({
            "models": self.models_json(model),
            "tools": {
                "totalCalls": self.total_calls(),
                "totalSuccess": success,
                "totalFail": fail,
                "totalDurationMs": duration.round() as u64,
                "totalDecisions": decisions.to_json(),
                "byName": by_name
            },
            "files": {
                "totalLinesAdded": self.lines_added,
                "totalLinesRemoved": self.lines_removed
            },
            // Not gemini-cli's (its edit strategies go to telemetry only).
            "edits": {
                "strategies": self.edit_strategies,
                "corrections": self.corrections
            }
        });
        if !self.agents.is_empty() {
            // Not gemini-cli's: its stats do not count subagents.
            let agents: serde_json::Map<String, Value> = self
                .agents
                .iter()
                .map(|(name, a)| {
                    let stat = json!({"count": a.count, "terminationReasons": a.reasons,
                        "turns": a.turns, "toolCalls": a.tool_calls, "tokens": a.tokens,
                        "durationMs": a.duration_ms});
                    (name.clone(), stat)
                })
                .collect();
            out["agents"] = Value::Object(agents);
        }
        out
    }
}

/// What kind of failure a retry `reason` names: the HTTP status in it, `MAX_TOKENS`
/// for an answer cut at the output limit, `UNKNOWN` otherwise.
fn error_type(reason: &str) -> String {
    if reason.starts_with("the answer was cut") {
        return "MAX_TOKENS".into();
    }
    reason
        .split(|c: char| !c.is_ascii_digit())
        .find(|w| w.len() == 3 && matches!(w.as_bytes()[0], b'4' | b'5'))
        .map_or_else(|| "UNKNOWN".into(), str::to_string)
}

/// A call refused by the approval policy without asking (headless, `default` mode).
fn refused_by_policy(call: &CompletedCall) -> bool {
    call.error.as_ref().is_some_and(|e| {
        e.kind == crate::protocol::ToolErrorKind::PolicyViolation
            && e.message.starts_with("Tool execution denied by policy.")
    })
}
