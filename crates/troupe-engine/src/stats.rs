//! Session statistics gathered from the event stream: tool calls by tool, tokens,
//! lines changed, edit strategies and corrections. Rendered with gemini-cli's keys.

use std::collections::BTreeMap;

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
}

impl SessionStats {
    pub fn record(&mut self, event: &UiEvent) {
        match event {
            // Gemini repeats cumulative usage on every chunk: keep the last of each request.
            UiEvent::Usage(u) => self.current = *u,
            UiEvent::ModelRequest { .. } => {
                self.fold_current();
                self.requests += 1;
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

    fn fold_current(&mut self) {
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

    /// The `stats` object of `-o json`, with gemini-cli's keys.
    pub fn to_json(&self, model: &str) -> Value {
        let by_name: serde_json::Map<String, Value> = self
            .by_tool
            .iter()
            .map(|(name, s)| {
                (
                    name.clone(),
                    json!({"count": s.count, "success": s.success, "fail": s.fail,
                           "durationMs": s.duration_ms.round() as u64}),
                )
            })
            .collect();
        let success: u64 = self.by_tool.values().map(|s| s.success).sum();
        let fail: u64 = self.by_tool.values().map(|s| s.fail).sum();
        let duration: f64 = self.by_tool.values().map(|s| s.duration_ms).sum();
        let mut out = json!({
            "models": {
                model: {
                    "api": {"totalRequests": self.requests},
                    "tokens": {
                        "prompt": self.prompt_tokens,
                        "candidates": self.output_tokens,
                        "total": self.total_tokens,
                        "cached": self.cached_tokens,
                        "thoughts": self.thought_tokens
                    }
                }
            },
            "tools": {
                "totalCalls": self.total_calls(),
                "totalSuccess": success,
                "totalFail": fail,
                "totalDurationMs": duration.round() as u64,
                "byName": by_name
            },
            "files": {
                "totalLinesAdded": self.lines_added,
                "totalLinesRemoved": self.lines_removed
            },
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
