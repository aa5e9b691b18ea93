//! The headless front end (`troupe -p`): renders events as text, JSON or stream-JSON,
//! answers confirmations by policy (in `default` mode nothing can be asked, so such
//! calls are refused with a clear message), and reports the run when the turn ends.
//!
//! Model text goes to stdout as it is when stdout is a file or a pipe (a script gets
//! the model's bytes), and through the one sanitiser ([`for_terminal`]) when it is a
//! terminal; transcript lines and the warnings on stderr always go through it.

use std::borrow::Cow;
use std::io::{IsTerminal, Write};
use std::time::{Instant, SystemTime};

use actix::prelude::*;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::engine::sanitize::{for_terminal, one_line};
use crate::engine::stats::SessionStats;
use crate::engine::text::iso8601;
use crate::protocol::{
    ApprovalDecision, ApprovalRequest, CallStatus, CompletedCall, TurnOutcome, UiEvent, WaitingFor,
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

/// What the run came to.
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub session_id: String,
    pub model: String,
    pub outcome: TurnOutcome,
    pub response: String,
    pub stats: SessionStats,
    pub calls: Vec<CallRecord>,
    pub elapsed: std::time::Duration,
    /// From the Chat taking the prompt (`TurnStarted`) to the end of the turn.
    pub turn_elapsed: std::time::Duration,
    /// CPU time of the whole process (every thread) over the same span as
    /// `turn_elapsed`: what the runtime spent, whatever the machine's load.
    pub turn_cpu: std::time::Duration,
    /// The signal (SIGINT, SIGTERM, SIGHUP) that ended the run, if one did.
    pub interrupted_by: Option<i32>,
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
}

impl CallRecord {
    pub fn of(call: &CompletedCall) -> Self {
        Self {
            call_id: call.call_id.clone(),
            name: call.name.clone(),
            status: call.status,
            ok: call.error.is_none(),
            duration: call.duration,
            timeline: call.timeline.clone(),
        }
    }
}

/// The headless front-end actor.
pub struct HeadlessFront {
    format: OutputFormat,
    session_id: String,
    model: String,
    response: String,
    stats: SessionStats,
    calls: Vec<CallRecord>,
    keep_calls: bool,
    started: Instant,
    turn_started: Option<Instant>,
    /// The process's CPU clock when the turn started.
    turn_cpu_started: Option<std::time::Duration>,
    done: Option<oneshot::Sender<RunSummary>>,
    mode_name: String,
    /// Length of `response` when the current model request began (a retry drops the
    /// partial text after it).
    request_start: usize,
    /// Transcript: whether the last thing printed ended a line.
    line_open: bool,
    /// Counts finished calls for a progress line (`troupe bench`).
    progress: Option<std::sync::Arc<std::sync::atomic::AtomicUsize>>,
    /// stdout is a terminal: model text is sanitised before it is printed.
    to_terminal: bool,
}

impl HeadlessFront {
    pub fn new(
        format: OutputFormat,
        mode_name: &str,
        keep_calls: bool,
        done: oneshot::Sender<RunSummary>,
    ) -> Self {
        Self {
            format,
            session_id: String::new(),
            model: String::new(),
            response: String::new(),
            stats: SessionStats::default(),
            calls: Vec::new(),
            keep_calls,
            started: Instant::now(),
            turn_started: None,
            turn_cpu_started: None,
            done: Some(done),
            mode_name: mode_name.to_string(),
            request_start: 0,
            line_open: false,
            progress: None,
            to_terminal: std::io::stdout().is_terminal(),
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

    /// Transcript: starts a fresh line for a tool line.
    fn close_line(&mut self) {
        if self.line_open {
            println!();
            self.line_open = false;
        }
    }

    fn json_line(&self, value: Value) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{value}");
    }
}

impl Actor for HeadlessFront {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(1 << 20);
    }
}

fn now() -> String {
    iso8601(SystemTime::now())
}

impl Handler<UiEvent> for HeadlessFront {
    type Result = ();

    fn handle(&mut self, event: UiEvent, _: &mut Self::Context) {
        self.stats.record(&event);
        if matches!(event, UiEvent::TurnStarted { .. }) && self.turn_started.is_none() {
            self.turn_started = Some(Instant::now());
            self.turn_cpu_started = Some(process_cpu_time());
        }
        let stream = self.format == OutputFormat::StreamJson;
        match &event {
            UiEvent::SessionStarted { session_id, model } => {
                self.session_id = session_id.clone();
                self.model = model.clone();
                if stream {
                    self.json_line(json!({"type": "init", "timestamp": now(), "session_id": session_id, "model": model}));
                }
            }
            UiEvent::TurnStarted { prompt, .. } if stream => {
                self.json_line(json!({"type": "message", "timestamp": now(), "role": "user", "content": prompt}));
            }
            UiEvent::TextDelta(text) => {
                self.response.push_str(text);
                match self.format {
                    OutputFormat::Text | OutputFormat::Transcript => {
                        let shown = if self.to_terminal {
                            for_terminal(text)
                        } else {
                            Cow::Borrowed(text.as_str())
                        };
                        let mut out = std::io::stdout().lock();
                        let _ = out.write_all(shown.as_bytes());
                        let _ = out.flush();
                        self.line_open = !text.ends_with('\n');
                    }
                    OutputFormat::StreamJson => self.json_line(
                        json!({"type": "message", "timestamp": now(), "role": "assistant", "content": text, "delta": true}),
                    ),
                    _ => {}
                }
            }
            UiEvent::ToolCallRequested {
                call_id,
                name,
                args,
            } => match self.format {
                OutputFormat::StreamJson => self
                    .json_line(json!({"type": "tool_use", "timestamp": now(),
                    "tool_name": name, "tool_id": call_id, "parameters": &**args})),
                OutputFormat::Transcript => {
                    self.close_line();
                    let line = format!("● {name}({})", summarize_args(args));
                    println!("{}", one_line(&line));
                }
                _ => {}
            },
            UiEvent::ToolCallCompleted(call) => {
                match self.format {
                    OutputFormat::StreamJson => {
                        let mut ev = json!({"type": "tool_result", "timestamp": now(), "tool_id": call.call_id,
                            "status": if call.status == CallStatus::Success { "success" } else { "error" }});
                        if let Some(err) = &call.error {
                            ev["error"] =
                                json!({"type": err.kind.as_str(), "message": err.message});
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
            UiEvent::ModelRequest { .. } => self.request_start = self.response.len(),
            UiEvent::Retry { attempt, reason } => {
                self.response.truncate(self.request_start);
                // On stderr in every format: stdout stays the format's own.
                if self.format != OutputFormat::Silent {
                    eprintln!(
                        "troupe: retrying model request (attempt {attempt}): {}",
                        for_terminal(reason)
                    );
                }
            }
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
            UiEvent::Warning(message) => {
                if !matches!(self.format, OutputFormat::Silent) {
                    eprintln!("troupe: {}", for_terminal(message));
                }
                tracing::warn!(%message, "warning");
            }
            UiEvent::Notice(message) => {
                if matches!(self.format, OutputFormat::Transcript) {
                    println!("  ℹ {}", for_terminal(message));
                }
                tracing::info!(%message, "notice");
            }
            UiEvent::TurnFinished(outcome) => {
                if let Some(done) = self.done.take() {
                    let _ = done.send(RunSummary {
                        session_id: self.session_id.clone(),
                        model: self.model.clone(),
                        outcome: outcome.clone(),
                        response: std::mem::take(&mut self.response),
                        stats: self.stats.settled(),
                        calls: std::mem::take(&mut self.calls),
                        elapsed: self.started.elapsed(),
                        turn_elapsed: self.turn_started.map(|t| t.elapsed()).unwrap_or_default(),
                        turn_cpu: self
                            .turn_cpu_started
                            .map(|t| process_cpu_time().saturating_sub(t))
                            .unwrap_or_default(),
                        interrupted_by: None,
                    });
                }
            }
            _ => {}
        }
    }
}

impl Handler<ApprovalRequest> for HeadlessFront {
    type Result = MessageResult<ApprovalRequest>;

    fn handle(&mut self, req: ApprovalRequest, _: &mut Self::Context) -> Self::Result {
        if let crate::protocol::ConfirmationDetails::Mcp { server, tool, .. } = &req.details {
            return MessageResult(ApprovalDecision::Deny {
                reason: format!(
                    "Tool execution denied by policy. MCP tool \"{tool}\" of server \"{server}\" needs the user's approval, which cannot be given in non-interactive mode (approval mode \"{}\"). Set `trust = true` in [mcp_servers.{server}] to trust this server, or run with --yolo to allow everything.",
                    self.mode_name
                ),
            });
        }
        MessageResult(ApprovalDecision::Deny {
            reason: format!(
                "Tool execution denied by policy. \"{}\" needs the user's approval, which cannot be given in non-interactive mode (approval mode \"{}\"). Run with --approval-mode auto_edit to allow edits, or --yolo to allow everything.",
                req.tool_name, self.mode_name
            ),
        })
    }
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
    if let Some(signal) = summary.interrupted_by {
        let name = crate::tools::shell::process::signal_name(signal);
        report["error"] = json!({
            "type": "Interrupted",
            "message": format!("Interrupted by {name}: the turn was cancelled and every process Troupe started was killed."),
            "code": 128 + signal,
        });
    }
    report
}

/// The stream-json closing `result` event.
pub fn stream_result(summary: &RunSummary) -> Value {
    let ok = matches!(summary.outcome, TurnOutcome::Completed { .. })
        && summary.interrupted_by.is_none();
    let mut ev = json!({
        "type": "result",
        "timestamp": now(),
        "status": if ok { "success" } else { "error" },
        "stats": {
            "total_tokens": summary.stats.total_tokens,
            "input_tokens": summary.stats.prompt_tokens,
            "output_tokens": summary.stats.output_tokens,
            "duration_ms": summary.elapsed.as_millis() as u64,
            "tool_calls": summary.stats.total_calls()
        }
    });
    if let Some(err) = json_report(summary).get("error") {
        ev["error"] = err.clone();
    }
    ev
}

/// CPU time this process has used so far, all threads (`CLOCK_PROCESS_CPUTIME_ID`).
pub fn process_cpu_time() -> std::time::Duration {
    cpu_clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// CPU time the calling thread has used so far (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu_time() -> std::time::Duration {
    cpu_clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn cpu_clock(clock: libc::clockid_t) -> std::time::Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock ids are the process's and
    // the thread's own, which always exist.
    let ok = unsafe { libc::clock_gettime(clock, &mut ts) } == 0;
    match ok {
        true => std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32),
        false => std::time::Duration::ZERO,
    }
}
