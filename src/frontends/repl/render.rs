//! Turns the event stream into transcript lines: the model's text line by line with
//! light Markdown styling (code blocks kept verbatim), one status line per finished
//! tool call (a summary line for large batches), notices, retries and the end of a
//! turn. Also tracks what the spinner should say.
//!
//! Every text that came from the model, a tool, a server or a hook goes through the
//! one sanitiser ([`crate::engine::sanitize`]) before it is styled: escape sequences
//! and other control or hidden characters are shown visibly (`\e]52;…^G`), never sent
//! to the terminal.

use std::collections::HashSet;
use std::time::Duration;

use crate::engine::sanitize::{for_terminal, one_line};
use crate::frontends::headless::{summarize_args, AttemptText};
use crate::protocol::{CallStatus, CompletedCall, TurnOutcome, UiEvent, WaitingFor};

use super::terminal::{fit, width, Palette};

/// Batches larger than this get one summary line instead of a line per call.
pub const LARGE_BATCH: usize = 12;

/// What the turn is doing, for the spinner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Activity {
    Thinking,
    /// Something slow the user should know about (the model's first token, a retry's
    /// back-off, an edit correction).
    Waiting(WaitingFor),
    Tools {
        running: usize,
        done: usize,
        total: usize,
    },
    Cancelling,
}

/// Model text, buffered until whole lines can be styled.
#[derive(Debug, Default)]
struct TextStream {
    partial: String,
    in_code: bool,
    /// The message's first line was printed (screen-reader output labels it).
    labelled: bool,
}

impl TextStream {
    fn push(&mut self, delta: &str, palette: Palette) -> Vec<String> {
        self.partial.push_str(delta);
        let mut lines = Vec::new();
        while let Some(pos) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=pos).collect();
            let line = line.strip_suffix('\n').unwrap_or(&line);
            let styled = self.style(&for_terminal(line), palette);
            lines.push(self.label(styled));
        }
        lines
    }

    /// The first line of a model message, for screen readers: `Model: ` before it (the
    /// label gemini-cli gives them).
    fn label(&mut self, line: String) -> String {
        if self.labelled || !super::terminal::screen_reader() {
            return line;
        }
        self.labelled = true;
        format!("Model: {line}")
    }

    fn flush(&mut self, palette: Palette) -> Option<String> {
        if self.partial.is_empty() {
            return None;
        }
        let line = std::mem::take(&mut self.partial);
        let styled = self.style(&for_terminal(&line), palette);
        Some(self.label(styled))
    }

    fn style(&mut self, line: &str, palette: Palette) -> String {
        if line.trim_start().starts_with("```") {
            self.in_code = !self.in_code;
            return palette.dim(line);
        }
        if self.in_code {
            return palette.cyan(line);
        }
        if line.starts_with('#') {
            return palette.bold(line);
        }
        style_inline_code(line, palette)
    }
}

/// Colours `inline code` spans, keeping the backticks.
fn style_inline_code(line: &str, palette: Palette) -> String {
    if !palette.color || !line.contains('`') {
        return line.to_string();
    }
    let mut out = String::new();
    for (i, piece) in line.split('`').enumerate() {
        if i > 0 {
            out.push('`');
        }
        if i % 2 == 1 && line.matches('`').count().is_multiple_of(2) {
            out.push_str(&palette.cyan(piece));
        } else {
            out.push_str(piece);
        }
    }
    out
}

/// What sets a command's live output off from the transcript: a rule, or (for screen
/// readers) nothing drawn.
fn output_rule() -> &'static str {
    if super::terminal::screen_reader() {
        ""
    } else {
        "│"
    }
}

/// Renders events to lines and keeps the counts behind the spinner.
#[derive(Debug)]
pub struct EventRenderer {
    palette: Palette,
    text: TextStream,
    activity: Activity,
    batch_total: usize,
    batch_done: usize,
    batch_by_status: [usize; 3],
    executing: HashSet<String>,
    /// What the current model request has shown (a retry is not shown twice).
    attempt: AttemptText,
    /// The subagents running now, for the live view under the spinner.
    live: super::agent_lines::LiveAgents,
}

impl EventRenderer {
    pub fn new(palette: Palette) -> Self {
        Self {
            palette,
            text: TextStream::default(),
            activity: Activity::Thinking,
            batch_total: 0,
            batch_done: 0,
            batch_by_status: [0; 3],
            executing: HashSet::new(),
            attempt: AttemptText::default(),
            live: Default::default(),
        }
    }

    pub fn activity(&self) -> &Activity {
        &self.activity
    }

    /// The live view of the running subagents (one line each).
    pub fn live_agents(&self) -> Vec<String> {
        self.live.lines()
    }

    pub fn cancelling(&mut self) {
        self.activity = Activity::Cancelling;
    }

    /// The lines this event adds to the transcript.
    pub fn render(&mut self, event: &UiEvent) -> Vec<String> {
        let p = self.palette;
        match event {
            UiEvent::TurnStarted { .. } => {
                self.text = TextStream::default();
                self.attempt = AttemptText::default();
                self.activity = Activity::Thinking;
                Vec::new()
            }
            UiEvent::ModelRequest { .. } => {
                self.batch_total = 0;
                self.batch_done = 0;
                self.batch_by_status = [0; 3];
                self.executing.clear();
                if self.activity != Activity::Cancelling {
                    self.activity = Activity::Thinking;
                }
                let held = self.attempt.request();
                let lines = self.text.push(&held, p);
                // What the model writes next is a message of its own.
                self.text.labelled = false;
                lines
            }
            UiEvent::TextDelta(delta) => {
                if matches!(self.activity, Activity::Waiting(_)) {
                    self.activity = Activity::Thinking;
                }
                let shown = self.attempt.delta(delta);
                self.text.push(&shown, p)
            }
            UiEvent::Waiting { what, .. } => {
                if self.activity != Activity::Cancelling {
                    self.activity = Activity::Waiting(*what);
                }
                Vec::new()
            }
            UiEvent::Thought(thought) => {
                let mut lines = self.flush_text();
                lines.extend(
                    for_terminal(thought)
                        .lines()
                        .map(|l| p.dim(&format!("  ✦ {l}"))),
                );
                lines
            }
            UiEvent::ToolCallRequested { .. } => {
                self.batch_total += 1;
                self.update_tools();
                let held = self.attempt.settle();
                let mut lines = self.text.push(&held, p);
                lines.extend(self.flush_text());
                lines
            }
            UiEvent::ToolCallStatus {
                call_id, status, ..
            } => {
                if *status == CallStatus::Executing {
                    self.executing.insert(call_id.clone());
                }
                self.update_tools();
                Vec::new()
            }
            UiEvent::ToolOutputChunk { chunk, .. } => {
                let mut lines = self.flush_text();
                lines.extend(
                    for_terminal(chunk)
                        .lines()
                        .map(|l| p.dim(&format!("    {} {l}", output_rule()))),
                );
                lines
            }
            UiEvent::ToolCallCompleted(call) => self.completed(call),
            UiEvent::Retry { attempt, reason } => {
                self.attempt.retry();
                vec![p.yellow(&format!(
                    "  ↻ Retrying the model request (attempt {attempt}): {}",
                    for_terminal(reason)
                ))]
            }
            UiEvent::Warning(message) => {
                let mut lines = self.flush_text();
                lines.push(p.yellow(&format!("  ⚠ {}", for_terminal(message))));
                lines
            }
            UiEvent::Notice(message) => {
                let mut lines = self.flush_text();
                lines.push(p.yellow(&format!("  ℹ {}", for_terminal(message))));
                lines
            }
            UiEvent::Unmet { message, .. } => {
                let mut lines = self.flush_text();
                lines.push(p.yellow(&format!("  ⚠ {}", for_terminal(message))));
                lines
            }
            UiEvent::TurnFinished(outcome) => self.finished(outcome),
            UiEvent::Agent(update) => {
                self.live.note(update);
                let mut lines = self.flush_text();
                lines.extend(super::agent_lines::agent_lines(update, p));
                lines
            }
            UiEvent::SessionStarted { .. } | UiEvent::Usage(_) | UiEvent::ModelProgress { .. } => {
                Vec::new()
            }
        }
    }

    /// The turn's last text and how it ended.
    fn finished(&mut self, outcome: &TurnOutcome) -> Vec<String> {
        let p = self.palette;
        let held = self.attempt.settle();
        let mut lines = self.text.push(&held, p);
        lines.extend(self.flush_text());
        match outcome {
            TurnOutcome::Completed { .. } => {}
            TurnOutcome::Cancelled => lines.push(p.yellow("⊘ Request cancelled.")),
            TurnOutcome::MaxTurns { limit } => lines.push(p.yellow(&format!(
                "Stopped after {limit} model turns (model.max_turns)."
            ))),
            TurnOutcome::Failed { message } => {
                lines.push(p.red(&format!("✗ Error: {}", for_terminal(message))))
            }
            TurnOutcome::LoopDetected { message } => {
                lines.push(p.yellow(&format!("⟳ {}", for_terminal(message))))
            }
        }
        lines
    }

    fn flush_text(&mut self) -> Vec<String> {
        self.text.flush(self.palette).into_iter().collect()
    }

    fn update_tools(&mut self) {
        if self.activity == Activity::Cancelling {
            return;
        }
        self.activity = Activity::Tools {
            running: self.executing.len(),
            done: self.batch_done,
            total: self.batch_total,
        };
    }

    fn completed(&mut self, call: &CompletedCall) -> Vec<String> {
        self.batch_done += 1;
        self.executing.remove(&call.call_id);
        let slot = match call.status {
            CallStatus::Success => 0,
            CallStatus::Cancelled => 2,
            _ => 1,
        };
        self.batch_by_status[slot] += 1;
        self.update_tools();
        if self.batch_total <= LARGE_BATCH {
            if let Some(lines) = topic_lines(call, self.palette) {
                return lines;
            }
            return vec![call_line(call, self.palette)];
        }
        if self.batch_done < self.batch_total {
            return Vec::new();
        }
        let [ok, failed, cancelled] = self.batch_by_status;
        vec![self.palette.bold(&format!(
            "● {} tool calls: {ok} succeeded, {failed} failed, {cancelled} cancelled",
            self.batch_total
        ))]
    }
}

/// `✓ name(args) — result` for one finished call.
pub fn call_line(call: &CompletedCall, p: Palette) -> String {
    let (mark, paint): (&str, fn(&Palette, &str) -> String) = match call.status {
        CallStatus::Success => ("✓", Palette::green),
        CallStatus::Cancelled => ("⊘", Palette::yellow),
        _ => ("✗", Palette::red),
    };
    let args = fit(&one_line(&summarize_args(&call.args)), 60);
    let name = one_line(&call.name);
    let text = call
        .error
        .as_ref()
        .map(|e| e.message.as_str())
        .unwrap_or(call.display.as_str());
    let first = text.lines().next().unwrap_or("");
    let first = one_line(first);
    let took = duration_text(call.duration);
    let used = name.chars().count() + args.chars().count() + took.chars().count() + 7;
    let first = fit(&first, width().saturating_sub(used).max(20));
    format!(
        "{} {}({}) {} {}",
        paint(&p, mark),
        p.bold(&name),
        p.dim(&args),
        first,
        p.dim(&took)
    )
}

/// A successful call that states the session's topic (`update_topic`, whose data
/// holds `{"topic": {"title", "intent", "new"}}`) as a chapter line: `📂 <title>` in
/// bold when a new chapter starts, then `  ↳ <intent>`; `None` for any other call.
fn topic_lines(call: &CompletedCall, p: Palette) -> Option<Vec<String>> {
    if call.status != CallStatus::Success {
        return None;
    }
    let topic = call.data.as_ref()?.get("topic")?;
    let text = |key: &str| {
        topic
            .get(key)
            .and_then(serde_json::Value::as_str)
            .map(one_line)
            .unwrap_or_else(|| "...".into())
    };
    let mut lines = Vec::new();
    if topic.get("new") == Some(&serde_json::Value::Bool(true)) {
        lines.push(p.bold(&fit(&format!("📂 {}", text("title")), width())));
    }
    lines.push(p.dim(&fit(&format!("  ↳ {}", text("intent")), width())));
    Some(lines)
}

/// `850 ms`, `3.2 s`, `2m 05s`.
pub fn duration_text(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        format!("{}m {:02}s", d.as_secs() / 60, d.as_secs() % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_printed_by_whole_lines_with_code_blocks_kept() {
        let p = Palette::plain();
        let mut r = EventRenderer::new(p);
        assert!(r.render(&UiEvent::TextDelta("Here:\n```rs\nfn ".into())) == ["Here:", "```rs"]);
        assert_eq!(
            r.render(&UiEvent::TextDelta("main() {}\n```\nend".into())),
            ["fn main() {}", "```"]
        );
        assert_eq!(
            r.render(&UiEvent::TurnFinished(TurnOutcome::Completed {
                response: String::new()
            })),
            ["end"]
        );
    }

    #[test]
    fn a_topic_is_drawn_as_a_chapter_line() {
        let p = Palette::plain();
        let mut call = CompletedCall {
            call_id: "c1".into(),
            name: "update_topic".into(),
            args: crate::protocol::content::CallArgs::new(serde_json::json!({})),
            status: CallStatus::Success,
            response_parts: Vec::new(),
            display: "## 📂 Topic: **Fix**".into(),
            error: None,
            duration: Duration::ZERO,
            data: Some(
                serde_json::json!({"topic": {"title": "Fix", "intent": "Read.", "new": true}}),
            ),
            timeline: Default::default(),
        };
        assert_eq!(topic_lines(&call, p).unwrap(), ["📂 Fix", "  ↳ Read."]);
        call.data =
            Some(serde_json::json!({"topic": {"title": "Fix", "intent": "Edit.", "new": false}}));
        assert_eq!(topic_lines(&call, p).unwrap(), ["  ↳ Edit."]);
        call.data = None;
        assert!(topic_lines(&call, p).is_none());
    }

    #[test]
    fn text_from_the_model_and_tools_is_drawn_with_its_escapes_visible() {
        let p = Palette::plain();
        let mut r = EventRenderer::new(p);
        assert_eq!(
            r.render(&UiEvent::TextDelta("\x1b]0;title\x07hi\r\x1b[2K\n".into())),
            ["\\e]0;title^Ghi^M\\e[2K"]
        );
        assert_eq!(
            r.render(&UiEvent::Warning("hook said \x1b[8mhidden".into())),
            ["  ⚠ hook said \\e[8mhidden"]
        );
    }
}
