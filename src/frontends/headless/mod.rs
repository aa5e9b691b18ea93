//! The headless front end (`troupe -p`): renders events as text, JSON or stream-JSON,
//! answers confirmations by policy (in `default` mode nothing can be asked, so such
//! calls are refused with a clear message), and reports the run when the turn ends.
//!
//! Model text goes to stdout as it is when stdout is a file or a pipe (a script gets
//! the model's bytes), and through the one sanitiser ([`for_terminal`]) when it is a
//! terminal; transcript lines and the warnings on stderr always go through it.

mod agents;
mod attempt;
mod cpu_time;
mod printing;
mod report;

use std::io::IsTerminal;
use std::time::{Instant, SystemTime};

use serde_json::{json, Value};

use crate::actors::session::SessionHandle;
use crate::engine::sanitize::{for_terminal, one_line};
use crate::engine::stats::SessionStats;
use crate::engine::text::iso8601;
use crate::protocol::{
    ApprovalDecision, ApprovalRequest, CallStatus, CompletedCall, Event, Op, UiEvent, WaitingFor,
};

pub use attempt::{AttemptText, RETRY_MARK};
pub use cpu_time::{process_cpu_time, thread_cpu_time};
pub use report::{
    json_report, print_failure, print_reply, stream_result, CallRecord, RunSummary,
    REFUSED_EXIT_CODE, UNMET_EXIT_CODE,
};

/// How the run is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// The answer streamed as plain text.
    Text,
    /// One JSON object at the end.
    Json,
    /// One JSON event per line as things happen.
    StreamJson,
    /// Text plus a line per tool call and result (`troupe demo`).
    Transcript,
    /// Nothing (benchmarks).
    Silent,
}

impl OutputFormat {
    /// Are calls shown as they are requested and run, not only once finished?
    pub fn shows_call_progress(self) -> bool {
        matches!(self, OutputFormat::StreamJson | OutputFormat::Transcript)
    }
}

/// How the approval policy's refusals start (the scheduler's and [`HeadlessFront`]'s).
const DENIED_BY_POLICY: &str = "Tool execution denied by policy.";

/// The headless front end: renders a session's events ([`HeadlessFront::render`]) and
/// answers its approval requests by policy ([`HeadlessFront::decide`]); [`drive`] is its
/// event loop.
pub struct HeadlessFront {
    format: OutputFormat,
    session_id: String,
    model: String,
    /// The text of the latest model round (gemini-cli's `-o json` `response`: the
    /// final round's answer, not the text of the rounds that called tools).
    response: String,
    stats: SessionStats,
    calls: Vec<CallRecord>,
    keep_calls: bool,
    started: Instant,
    turn_started: Option<Instant>,
    /// The process's CPU clock when the turn started.
    turn_cpu_started: Option<std::time::Duration>,
    mode_name: String,
    /// Transcript: whether the last thing printed ended a line.
    line_open: bool,
    /// Counts finished calls for a progress line (`troupe bench`).
    progress: Option<std::sync::Arc<std::sync::atomic::AtomicUsize>>,
    /// stdout is a terminal: model text is sanitised before it is printed.
    to_terminal: bool,
    /// Text: a call was requested since the model's text last printed (the next text
    /// starts on a line of its own).
    called_since_text: bool,
    /// The calls refused so far, `name(args): reason`.
    refused: Vec<String>,
    /// What the turn did not do of what its prompt asked, and the sentence that says so.
    unmet: Option<(crate::protocol::Unmet, String)>,
    /// Every warning so far.
    warnings: Vec<String>,
    /// Stream-json: warnings that came before the `init` event (printed right after it).
    early_warnings: Vec<String>,
    /// Stream-json: the `init` event has been printed.
    initialised: bool,
    /// Text: what the current model request has shown (a retry is not shown twice).
    attempt: attempt::AttemptText,
    /// Tokens of requests the server did not count (an interrupted one).
    estimate: attempt::TokenEstimate,
}

impl HeadlessFront {
    /// A front printing `format`; `mode_name` is the approval mode its refusals name;
    /// `keep_calls` keeps each call's record for the summary (`--trace`, the bench).
    pub fn new(format: OutputFormat, mode_name: &str, keep_calls: bool) -> Self {
        Self {
            format,
            session_id: String::new(),
            model: String::new(),
            response: String::new(),
            stats: SessionStats::approving_all(mode_name == "yolo"),
            calls: Vec::new(),
            keep_calls,
            started: Instant::now(),
            turn_started: None,
            turn_cpu_started: None,
            mode_name: mode_name.to_string(),
            line_open: false,
            progress: None,
            to_terminal: std::io::stdout().is_terminal(),
            called_since_text: false,
            refused: Vec::new(),
            unmet: None,
            warnings: Vec::new(),
            early_warnings: Vec::new(),
            initialised: false,
            attempt: Default::default(),
            estimate: Default::default(),
        }
    }

    /// Counts every finished call in `counter`.
    pub fn with_progress(
        mut self,
        counter: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    ) -> Self {
        self.progress = Some(counter);
        self
    }
}

fn now() -> String {
    iso8601(SystemTime::now())
}

impl HeadlessFront {
    /// Renders one event of the session; the run's summary when the turn ended.
    pub fn render(&mut self, event: UiEvent) -> Option<RunSummary> {
        self.observe(&event);
        let stream = self.format == OutputFormat::StreamJson;
        match &event {
            UiEvent::SessionStarted { session_id, model } => {
                self.on_session_started(session_id, model)
            }
            UiEvent::Thought(text) if stream => {
                // Not gemini-cli's (its stream-json drops thoughts): a type of its own, so
                // a consumer joining the `message` deltas never mixes the thinking in.
                self.json_line(
                    json!({"type": "thought", "timestamp": now(), "content": text, "delta": true}),
                );
            }
            UiEvent::TurnStarted { prompt, .. } if stream => {
                self.json_line(json!({"type": "message", "timestamp": now(), "role": "user", "content": prompt}));
            }
            UiEvent::TextDelta(text) => self.on_text(text),
            UiEvent::ToolCallRequested {
                call_id,
                name,
                args,
            } => self.on_call_requested(call_id, name, args),
            UiEvent::ToolCallCompleted(call) => self.on_call_completed(call),
            UiEvent::ModelRequest { .. } => {
                self.response.clear();
                let held = self.attempt.request();
                self.print_text(&held);
                // A new answer after text (the model sent back to work) starts on a
                // line of its own.
                self.called_since_text |= self.line_open;
            }
            UiEvent::ModelProgress {
                output_bytes,
                elapsed_ms,
                ..
            } if stream => {
                // Not gemini-cli's: a slow model is seen working.
                let (phase, tokens, elapsed) = attempt::progress_fields(*output_bytes, *elapsed_ms);
                self.json_line(
                    json!({"type": "progress", "timestamp": now(), "phase": phase,
                    "output_tokens": tokens, "elapsed_ms": elapsed}),
                );
            }
            UiEvent::Retry { attempt, reason } => self.on_retry(*attempt, reason),
            UiEvent::Waiting { what, seconds }
                if *seconds > 0 && self.format != OutputFormat::Silent =>
            {
                let setting = match what {
                    WaitingFor::Model => "; the limit is model.network.first_byte_timeout_secs",
                    _ => "",
                };
                eprintln!(
                    "troupe: {}: {seconds} s so far{setting}",
                    what.describe().to_lowercase()
                );
            }
            UiEvent::Warning(message) => self.on_warning(message),
            UiEvent::Notice(message) => {
                if matches!(self.format, OutputFormat::Transcript) {
                    println!("  ℹ {}", for_terminal(message));
                }
                tracing::info!(%message, "notice");
            }
            UiEvent::Unmet { unmet, message } => self.unmet = Some((*unmet, message.clone())),
            UiEvent::TurnFinished(outcome) => return Some(self.summary(outcome.clone())),
            UiEvent::Agent(update) => self.on_agent(update),
            _ => {}
        }
        None
    }

    /// What every event counts for: the stats, the token estimate, the turn's clocks.
    fn observe(&mut self, event: &UiEvent) {
        self.stats.record(event);
        self.estimate.record(event);
        if matches!(event, UiEvent::TurnStarted { .. }) && self.turn_started.is_none() {
            self.turn_started = Some(Instant::now());
            self.turn_cpu_started = Some(process_cpu_time());
        }
        if matches!(
            event,
            UiEvent::ToolCallRequested { .. } | UiEvent::ToolCallCompleted(_)
        ) {
            self.called_since_text = true;
        }
    }

    fn on_session_started(&mut self, session_id: &str, model: &str) {
        self.session_id = session_id.to_string();
        self.model = model.to_string();
        if self.format == OutputFormat::StreamJson {
            self.json_line(json!({"type": "init", "timestamp": now(), "session_id": session_id, "model": model}));
            self.initialised = true;
            for warning in std::mem::take(&mut self.early_warnings) {
                self.warning_line(&warning);
            }
        }
    }

    fn on_text(&mut self, text: &str) {
        self.response.push_str(text);
        match self.format {
            OutputFormat::Text | OutputFormat::Transcript => {
                let shown = self.attempt.delta(text);
                self.print_text(&shown);
            }
            OutputFormat::StreamJson => self.json_line(
                json!({"type": "message", "timestamp": now(), "role": "assistant", "content": text, "delta": true}),
            ),
            _ => {}
        }
    }

    fn on_call_requested(&mut self, call_id: &str, name: &str, args: &Value) {
        match self.format {
            OutputFormat::Text => self.settle_attempt(),
            OutputFormat::StreamJson => self
                .json_line(json!({"type": "tool_use", "timestamp": now(),
                "tool_name": name, "tool_id": call_id, "parameters": args})),
            OutputFormat::Transcript => {
                self.settle_attempt();
                self.close_line();
                let line = format!("● {name}({})", summarize_args(args));
                println!("{}", one_line(&line));
            }
            _ => {}
        }
    }

    fn on_call_completed(&mut self, call: &CompletedCall) {
        self.note_unsuccessful(call);
        match self.format {
            OutputFormat::StreamJson => {
                let mut ev = json!({"type": "tool_result", "timestamp": now(), "tool_id": call.call_id,
                    "status": if call.status == CallStatus::Success { "success" } else { "error" }});
                if let Some(err) = &call.error {
                    ev["error"] = json!({"type": err.kind.as_str(), "message": err.message});
                } else {
                    ev["output"] = Value::String(call.display.clone());
                }
                self.json_line(ev);
            }
            OutputFormat::Transcript => {
                let mark = match call.status {
                    CallStatus::Success => "✓",
                    CallStatus::Cancelled => "⊘",
                    _ => "✗",
                };
                let text = match (&call.error, call.display.is_empty()) {
                    (Some(e), _) => e.message.clone(),
                    (None, false) => call.display.clone(),
                    (None, true) => output_summary(call),
                };
                let first = text.lines().next().unwrap_or("");
                let line = format!("  {mark} {}: {first}", call.name);
                self.close_line();
                println!("{}", one_line(&line));
            }
            _ => {}
        }
        if let Some(counter) = &self.progress {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        if self.keep_calls {
            self.calls.push(CallRecord::of(call));
        }
    }

    fn on_retry(&mut self, attempt: u32, reason: &str) {
        self.response.clear();
        self.attempt.retry();
        if self.format == OutputFormat::StreamJson {
            // Not gemini-cli's: the deltas already printed of the failed attempt are void.
            self.json_line(
                json!({"type": "retry", "timestamp": now(), "attempt": attempt,
                "reason": reason, "discard": "attempt"}),
            );
        }
        // On stderr in every format: stdout stays the format's own.
        if self.format != OutputFormat::Silent {
            eprintln!(
                "troupe: retrying model request (attempt {attempt}): {}",
                for_terminal(reason)
            );
        }
    }

    /// A warning: on stderr (unless silent), in the log, in the report, and as a
    /// stream-json line (held until the `init` line is out).
    pub fn on_warning(&mut self, message: &str) {
        if !matches!(self.format, OutputFormat::Silent) {
            // The warning starts a line of its own, also where stderr and stdout are
            // one terminal or one file: the model's open line is ended first.
            self.end_open_line();
            eprintln!("troupe: {}", for_terminal(message));
        }
        tracing::warn!(%message, "warning");
        self.warnings.push(message.to_string());
        match (self.format == OutputFormat::StreamJson, self.initialised) {
            (true, true) => self.warning_line(message),
            (true, false) => self.early_warnings.push(message.to_string()),
            _ => {}
        }
    }

    /// The run's summary at the end of its turn.
    fn summary(&mut self, outcome: crate::protocol::TurnOutcome) -> RunSummary {
        self.settle_attempt();
        self.settle_last_line();
        let mut stats = self.stats.settled();
        let tokens_estimated = self.estimate.apply(&mut stats);
        RunSummary {
            tokens_estimated,
            session_id: self.session_id.clone(),
            model: self.model.clone(),
            outcome,
            response: std::mem::take(&mut self.response),
            stats,
            calls: std::mem::take(&mut self.calls),
            elapsed: self.started.elapsed(),
            turn_elapsed: self.turn_started.map(|t| t.elapsed()).unwrap_or_default(),
            turn_cpu: self
                .turn_cpu_started
                .map(|t| process_cpu_time().saturating_sub(t))
                .unwrap_or_default(),
            interrupted_by: None,
            refused: std::mem::take(&mut self.refused),
            unmet: self.unmet.take(),
            warnings: std::mem::take(&mut self.warnings),
        }
    }

    /// The answer to a confirmation: headless cannot ask, so every call that needs one
    /// is refused, saying which flag or setting would allow it.
    pub fn decide(&self, req: &ApprovalRequest) -> ApprovalDecision {
        if let crate::protocol::ConfirmationDetails::Mcp { server, tool, .. } = &req.details {
            return ApprovalDecision::Deny {
                reason: format!(
                    "{DENIED_BY_POLICY} MCP tool \"{tool}\" of server \"{server}\" needs the user's approval, which cannot be given in non-interactive mode (approval mode \"{}\"). Set `trust = true` in [mcp_servers.{server}] to trust this server, or run with --yolo to allow everything.",
                    self.mode_name
                ),
            };
        }
        ApprovalDecision::Deny {
            reason: format!(
                "{DENIED_BY_POLICY} \"{}\" needs the user's approval, which cannot be given in non-interactive mode (approval mode \"{}\"). Run with --approval-mode auto_edit to allow edits, or --yolo to allow everything.",
                req.tool_name, self.mode_name
            ),
        }
    }
}

/// Renders `handle`'s events on `front` until the turn in flight ends, answering its
/// approval requests by `front`'s policy; the run's summary, or `None` when the
/// session's events ended first.
pub async fn drive(handle: &SessionHandle, front: &mut HeadlessFront) -> Option<RunSummary> {
    while let Some(event) = handle.next_event().await {
        match event {
            Event::Ui(event) => {
                if let Some(summary) = front.render(event) {
                    return Some(summary);
                }
            }
            Event::Approval { id, request } => {
                let decision = front.decide(&request);
                handle.submit(Op::Decide { id, decision });
            }
            Event::OpDone {
                result: Err(error), ..
            } => tracing::warn!(%error, "op refused"),
            Event::OpDone { .. } => {}
        }
    }
    None
}

/// What a successful call returned, in a few words, when it has no display text.
fn output_summary(call: &CompletedCall) -> String {
    let output = call
        .response_parts
        .first()
        .and_then(|p| p.function_response.as_deref())
        .and_then(|fr| fr.response.get("output"))
        .and_then(Value::as_str)
        .unwrap_or("");
    format!("{} line(s) returned", output.lines().count())
}

/// A one-line summary of call arguments for transcripts.
pub fn summarize_args(args: &Value) -> String {
    let Some(map) = args.as_object() else {
        return args.to_string();
    };
    map.iter()
        .map(|(k, v)| {
            let text = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let text = text.replace('\n', "⏎");
            let short: String = text.chars().take(60).collect();
            let ell = if text.chars().count() > 60 { "…" } else { "" };
            format!("{k}: {short}{ell}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}
