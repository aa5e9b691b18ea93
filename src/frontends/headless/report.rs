//! What a headless run reports when it ends: the summary the front end hands back, the
//! `-o json` object, the stream-json `result` event, and a reply given without the
//! model.

use std::io::Write;
use std::time::SystemTime;

use serde_json::{json, Value};

use crate::engine::sanitize::for_terminal;
use crate::engine::stats::SessionStats;
use crate::engine::text::iso8601;
use crate::protocol::{CallStatus, CompletedCall, TurnOutcome};

use super::OutputFormat;

/// What the run came to.
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub session_id: String,
    pub model: String,
    pub outcome: TurnOutcome,
    /// The final model round's text (as gemini-cli's `-o json` gives it).
    pub response: String,
    pub stats: SessionStats,
    /// Some of the tokens in `stats` are estimates (the server never counted them: the
    /// run was interrupted, or it sends no usage).
    pub tokens_estimated: bool,
    pub calls: Vec<CallRecord>,
    pub elapsed: std::time::Duration,
    /// From the Chat taking the prompt (`TurnStarted`) to the end of the turn.
    pub turn_elapsed: std::time::Duration,
    /// CPU time of the whole process (every thread) over the same span as
    /// `turn_elapsed`: what the runtime spent, whatever the machine's load.
    pub turn_cpu: std::time::Duration,
    /// The signal (SIGINT, SIGTERM, SIGHUP) that ended the run, if one did.
    pub interrupted_by: Option<i32>,
    /// The calls the approval policy refused (needing an approval this run cannot
    /// give, or denied by the mode), each as `name(args): reason`: nothing they asked
    /// for was done. A hook's block is not counted: it is the user's own rule.
    pub refused: Vec<String>,
    /// What the turn did not do of what its prompt asked (`model.check_outcome`), and
    /// the sentence that says so: the run does not end as a success.
    pub unmet: Option<(crate::protocol::Unmet, String)>,
    /// The warnings of the run (hooks not run in an untrusted folder, a hook that
    /// failed, ...), in the order they came.
    pub warnings: Vec<String>,
}

/// What a run keeps of each finished call (for benchmarks and traces): no contents.
#[derive(Debug, Clone)]
pub struct CallRecord {
    pub call_id: String,
    pub name: String,
    pub status: CallStatus,
    pub ok: bool,
    pub duration: std::time::Duration,
    pub timeline: crate::protocol::CallTimeline,
    /// The subagent whose track the call is on (`--trace`): the subagent that made it,
    /// or, for an `invoke_agent` call, the subagent it ran. `None`: the main session's.
    pub agent: Option<String>,
}

impl CallRecord {
    pub fn of(call: &CompletedCall) -> Self {
        let ran = call
            .data
            .as_ref()
            .and_then(|d| d.get("agentId"))
            .and_then(|a| a.as_str());
        Self {
            call_id: call.call_id.clone(),
            name: call.name.clone(),
            status: call.status,
            ok: call.error.is_none(),
            duration: call.duration,
            timeline: call.timeline.clone(),
            agent: ran
                .filter(|_| call.name == crate::tools::invoke_agent::INVOKE_AGENT)
                .map(str::to_string),
        }
    }

    /// The record of a call made by subagent `agent`.
    pub fn of_agent(call: &CompletedCall, agent: &str) -> Self {
        Self {
            agent: Some(agent.to_string()),
            ..Self::of(call)
        }
    }
}

/// The `-o json` object for a finished run.
pub fn json_report(summary: &RunSummary) -> Value {
    let mut report = json!({
        "session_id": summary.session_id,
        "response": summary.response,
        "stats": summary.stats.to_json(&summary.model),
    });
    match &summary.outcome {
        TurnOutcome::Completed { .. } => {}
        TurnOutcome::Failed { message } => {
            report["error"] = json!({"type": "Error", "message": message, "code": 1});
        }
        TurnOutcome::Cancelled => {
            report["error"] =
                json!({"type": "Cancelled", "message": "The turn was cancelled.", "code": 130});
        }
        TurnOutcome::LoopDetected { message } => {
            report["error"] = json!({"type": "LoopDetected", "message": message,
                "code": crate::frontends::LOOP_EXIT_CODE});
        }
        TurnOutcome::MaxTurns { limit } => {
            report["error"] = json!({"type": "MaxTurns", "message": format!("Reached the limit of {limit} model turns (model.max_turns)."), "code": 53});
        }
    }
    if let (TurnOutcome::Completed { .. }, Some((unmet, message))) =
        (&summary.outcome, &summary.unmet)
    {
        report["error"] = json!({
            "type": unmet.error_type(),
            "message": message,
            "code": UNMET_EXIT_CODE,
        });
        // Not gemini-cli's key: only a run that did not do what was asked has it.
        report["status"] = json!(unmet.status());
    }
    if let (TurnOutcome::Completed { .. }, false) = (&summary.outcome, summary.refused.is_empty()) {
        report["error"] = json!({
            "type": "ToolCallsRefused",
            "message": refused_message(&summary.refused),
            "code": REFUSED_EXIT_CODE,
        });
    }
    if let Some(signal) = summary.interrupted_by {
        let name = crate::tools::shell::process::signal_name(signal);
        report["error"] = json!({
            "type": "Interrupted",
            "message": format!("Interrupted by {name}: the turn was cancelled and every process Troupe started was killed."),
            "code": 128 + signal,
        });
    }
    if !summary.warnings.is_empty() {
        report["warnings"] = json!(summary.warnings);
    }
    if summary.tokens_estimated {
        report["stats"]["tokens_estimated"] = json!(true);
    }
    report
}

/// The exit code of a run whose turn finished but whose calls the approval policy
/// refused: what they asked for was not done (gemini-cli's code for a tool execution
/// error, `FatalToolExecutionError`).
pub const REFUSED_EXIT_CODE: i32 = 54;

/// The exit code of a run whose turn finished without doing what its prompt asked: a
/// change that was not made, tests that were not run, a tool call that was required
/// and not made (`model.check_outcome`; stream-json status `no_change`,
/// `tests_not_run`, `no_tool_call`).
pub const UNMET_EXIT_CODE: i32 = 56;

/// What the end of a run says about its refused calls.
fn refused_message(refused: &[String]) -> String {
    let calls = match refused.len() {
        1 => "1 tool call was".to_string(),
        n => format!("{n} tool calls were"),
    };
    format!(
        "{calls} refused, so what the model said it did may not have happened: {}",
        refused.join("; ")
    )
}

/// The stream-json closing `result` event.
pub fn stream_result(summary: &RunSummary) -> Value {
    let ok = matches!(summary.outcome, TurnOutcome::Completed { .. })
        && summary.interrupted_by.is_none()
        && summary.refused.is_empty();
    let unmet = summary
        .unmet
        .as_ref()
        .filter(|_| matches!(summary.outcome, TurnOutcome::Completed { .. }))
        .filter(|_| summary.interrupted_by.is_none() && summary.refused.is_empty());
    let status = match (ok, unmet) {
        (true, Some((unmet, _))) => unmet.status(),
        (true, None) => "success",
        (false, _) => "error",
    };
    let mut ev = json!({
        "type": "result",
        "timestamp": iso8601(SystemTime::now()),
        "status": status,
        "stats": summary.stats.stream_json(&summary.model, summary.elapsed.as_millis() as u64),
    });
    if summary.tokens_estimated {
        ev["stats"]["tokens_estimated"] = json!(true);
    }
    if let Some(err) = json_report(summary).get("error") {
        ev["error"] = err.clone();
    }
    ev
}

/// Prints the result of a run that failed before or outside its turn (settings, the
/// server, the session): for `-o json` one object with `error` {type, message, code},
/// for stream-json a `result` event with status "error" and the error, as a failed turn
/// reports; nothing in the other formats (the message goes to stderr).
pub fn print_failure(format: OutputFormat, kind: &str, message: &str, code: i32) {
    let error = json!({"type": kind, "message": message, "code": code});
    let line = match format {
        OutputFormat::Json => {
            let report = json!({"response": "", "error": error});
            serde_json::to_string_pretty(&report).unwrap_or_default()
        }
        OutputFormat::StreamJson => json!({
            "type": "result",
            "timestamp": iso8601(SystemTime::now()),
            "status": "error",
            "error": error,
            "stats": {"total_tokens": 0, "input_tokens": 0, "output_tokens": 0,
                "cached": 0, "input": 0, "duration_ms": 0, "tool_calls": 0, "models": {}},
        })
        .to_string(),
        _ => return,
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Prints a reply given without the model (`/<prompt> help`) as `format` prints an
/// answer (the json object is printed by the report).
pub fn print_reply(format: OutputFormat, text: &str) {
    let mut out = std::io::stdout().lock();
    match format {
        OutputFormat::Text | OutputFormat::Transcript => {
            let shown = if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
                for_terminal(text).into_owned()
            } else {
                text.to_string()
            };
            // The report ends the line.
            let _ = write!(out, "{shown}");
            let _ = out.flush();
        }
        OutputFormat::StreamJson => {
            let _ = writeln!(
                out,
                "{}",
                json!({"type": "message", "timestamp": iso8601(SystemTime::now()), "role": "assistant", "content": text})
            );
        }
        OutputFormat::Json | OutputFormat::Silent => {}
    }
}
