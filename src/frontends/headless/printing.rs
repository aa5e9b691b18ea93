//! How the headless front end prints: model text (sanitised for a terminal), the
//! transcript's lines, stream-json lines and warnings, and the calls refused or failed.

use std::borrow::Cow;
use std::io::Write;

use serde_json::{json, Value};

use super::{now, summarize_args, HeadlessFront, OutputFormat, DENIED_BY_POLICY};
use crate::engine::sanitize::{for_terminal, one_line};
use crate::protocol::{CompletedCall, ToolErrorKind};

impl HeadlessFront {
    /// Transcript: starts a fresh line for a tool line.
    pub(super) fn close_line(&mut self) {
        if self.line_open {
            println!();
            self.line_open = false;
        }
    }

    /// Text and transcript: prints model text (sanitised for a terminal).
    pub(super) fn print_text(&mut self, text: &str) {
        if !matches!(self.format, OutputFormat::Text | OutputFormat::Transcript) {
            return;
        }
        if self.called_since_text && self.line_open && !text.is_empty() {
            // The text of the next round starts on a line of its own.
            println!();
        }
        self.called_since_text &= text.is_empty();
        if text.is_empty() {
            return;
        }
        let shown = if self.to_terminal {
            for_terminal(text)
        } else {
            Cow::Borrowed(text)
        };
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(shown.as_bytes());
        let _ = out.flush();
        self.line_open = !text.ends_with('\n');
    }

    /// Text and transcript: ends the line the model's text left open.
    pub(super) fn end_open_line(&mut self) {
        if matches!(self.format, OutputFormat::Text | OutputFormat::Transcript) && self.line_open {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(b"\n");
            let _ = out.flush();
            self.line_open = false;
        }
    }

    /// Text and transcript, at the end of the turn: the report ends a line after a
    /// response that does not end one (`frontends::report`); the last line is made to
    /// end exactly once whatever was printed since the final round began.
    pub(super) fn settle_last_line(&mut self) {
        if !matches!(self.format, OutputFormat::Text | OutputFormat::Transcript) {
            return;
        }
        let report_ends_it = !self.response.is_empty() && !self.response.ends_with('\n');
        match (self.line_open, report_ends_it) {
            (true, false) => self.end_open_line(),
            // Already ended (a warning came after the text): the text formats read
            // `response` for nothing else.
            (false, true) => self.response.push('\n'),
            _ => {}
        }
    }

    /// Text and transcript: shows what is held back of a retried attempt that ended.
    pub(super) fn settle_attempt(&mut self) {
        let text = self.attempt.settle();
        self.print_text(&text);
    }

    pub(super) fn json_line(&self, value: Value) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{value}");
    }

    /// Stream-json: a warning as gemini-cli's non-fatal `error` event.
    pub(super) fn warning_line(&self, message: &str) {
        self.json_line(
            json!({"type": "error", "timestamp": now(), "severity": "warning", "message": message}),
        );
    }

    /// Notes a finished call that was refused or failed; text mode says so on stderr
    /// (the model's answer alone may claim it worked).
    pub(super) fn note_unsuccessful(&mut self, call: &CompletedCall) {
        let Some(error) = &call.error else {
            return;
        };
        // Refused for want of an approval this run cannot give (or by the mode);
        // otherwise blocked by a hook, or failed.
        let refused = error.kind == ToolErrorKind::PolicyViolation
            && error.message.starts_with(DENIED_BY_POLICY);
        let verb = match (refused, error.kind) {
            (true, _) => "refused",
            (false, ToolErrorKind::PolicyViolation) => "blocked",
            _ => "failed",
        };
        let mut args = summarize_args(&call.args);
        if args.chars().count() > 100 {
            args = args.chars().take(99).collect::<String>() + "…";
        }
        let reason = error.message.lines().next().unwrap_or("");
        let what = format!("{}({args}): {reason}", call.name);
        if self.format == OutputFormat::Text {
            eprintln!("troupe: {verb}: {}", one_line(&what));
        }
        if refused {
            self.refused.push(what);
        }
    }
}
