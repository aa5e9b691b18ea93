//! The SessionRecorder actor: writes the session, as the Chat actor reports it, to a
//! JSONL file in gemini-cli 0.61's format. It runs on the session's background arbiter
//! (shared with the Corrector), off the turn's path; a record is one `write` of one
//! whole line to a file opened for appending, except a round's results, which are
//! written as the calls finish (in 64 KiB pieces) and end their line when the round
//! does. A process killed at any moment leaves complete lines and at worst one partial
//! last line, which the loader skips; the next run starts its records on a line of
//! their own. A write that fails turns recording off for the session with one warning,
//! in the log and to the user.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use actix::prelude::*;
use serde::Serialize;
use serde_json::{json, Value};

use crate::engine::session_file::{
    history_records, last_updated_record, metadata_record, record_call_id, user_record,
};
use crate::engine::text::iso8601;
use crate::protocol::content::{Content, Part, Usage};
use crate::protocol::EventSink;
use crate::protocol::{
    CallStatus, CompletedCall, FlushRecords, SessionEvent, SwitchSession, UiEvent,
};

/// Where and what a recorder writes.
pub struct RecorderSetup {
    pub file: PathBuf,
    pub session_id: String,
    pub project_hash: String,
    pub model: String,
    /// The file exists (a resumed session): no metadata line is written.
    pub existing: bool,
    /// Records appended first (calls a crash left unanswered, answered now).
    pub repairs: Vec<Value>,
    /// The session's lock, held as long as the recorder lives.
    pub lock: Option<File>,
    /// Told (as a warning) when recording turns off because a write failed.
    pub warnings: Option<EventSink>,
    /// A subagent's conversation: its first line says `kind: "subagent"` with these
    /// workspace directories. `None`: a main session.
    pub subagent_dirs: Option<Vec<String>>,
}

/// The most of one record line held before it is written out. A round of 1,000 calls
/// is a record of about 1 MB: with 1 MiB pieces the whole of it sat in the buffer
/// (1.8 KB per call of a `troupe -p` run's peak); 64 KiB pieces cost 16 `write`s.
const LINE_PIECE_BYTES: usize = 64 * 1024;

/// A record line on its way to the file: collected in `piece`, written when the piece
/// would pass [`LINE_PIECE_BYTES`] (and at the end).
struct PiecewiseLine<'a> {
    piece: &'a mut Vec<u8>,
    file: &'a mut File,
}

impl Write for PiecewiseLine<'_> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.piece.len() + data.len() > LINE_PIECE_BYTES {
            self.flush()?;
            if data.len() > LINE_PIECE_BYTES {
                self.file.write_all(data)?;
                return Ok(data.len());
            }
        }
        self.piece.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.piece.is_empty() {
            self.file.write_all(self.piece)?;
            self.piece.clear();
        }
        Ok(())
    }
}

/// Records one session to its file.
pub struct SessionRecorder {
    setup: RecorderSetup,
    file: Option<File>,
    failed: bool,
    /// The last `gemini` record, re-appended with its calls' results.
    last_gemini: Option<LastModel>,
    /// The line being written (kept to reuse its allocation).
    buffer: Vec<u8>,
    last_user: Option<String>,
    /// The file has its title: gemini-cli's `summary`, written with the first prompt
    /// of a new main session (a resumed file keeps what it has).
    titled: bool,
    /// The record of the round whose calls are being written, while it is open.
    round: Option<OpenRound>,
}

/// A round's record line, written as its calls finish: the model record's fields and
/// `"toolCalls":[` first, then each call, then `]}` when the round is over.
struct OpenRound {
    /// The part of the line not yet written (less than [`LINE_PIECE_BYTES`]).
    line: Vec<u8>,
    calls: usize,
}

impl SessionRecorder {
    pub fn new(setup: RecorderSetup) -> Self {
        Self {
            titled: setup.existing || setup.subagent_dirs.is_some(),
            setup,
            file: None,
            failed: false,
            last_gemini: None,
            last_user: None,
            buffer: Vec::new(),
            round: None,
        }
    }

    /// Starts the recorder on `arbiter` (the session's background arbiter, off the
    /// turn's path).
    pub fn start_on(arbiter: &ArbiterHandle, setup: RecorderSetup) -> Addr<Self> {
        let recorder = Self::new(setup);
        Self::start_in_arbiter(arbiter, move |_| recorder)
    }

    /// Recording is off for the session (until a switch to another file): said once,
    /// in the log and to the user.
    fn turn_off(&mut self, error: &str) {
        tracing::warn!(%error, "session recording is off");
        self.failed = true;
        if let Some(warnings) = &self.setup.warnings {
            warnings.do_send(UiEvent::Warning(format!(
                "Session recording is off: {error}"
            )));
        }
    }

    fn open(&mut self) -> Option<&mut File> {
        if self.failed {
            return None;
        }
        if self.file.is_none() {
            let path = &self.setup.file;
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            // The conversation is the user's alone: created 0600, before anything is
            // written to it.
            let opened = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .read(true)
                .mode(0o600)
                .open(path)
                .and_then(end_on_a_new_line);
            match opened {
                Ok(file) => self.file = Some(file),
                Err(e) => {
                    let message = format!("cannot open {}: {e}", path.display());
                    self.turn_off(&message);
                    return None;
                }
            }
            if !self.setup.existing {
                self.setup.existing = true;
                let now = iso8601(std::time::SystemTime::now());
                let (id, hash) = (&self.setup.session_id, &self.setup.project_hash);
                let meta = match &self.setup.subagent_dirs {
                    Some(dirs) => {
                        crate::engine::session_file::subagent_metadata_record(id, hash, &now, dirs)
                    }
                    None => metadata_record(id, hash, &now),
                };
                self.append(&meta);
            }
        }
        self.file.as_mut()
    }

    /// One record, one line: one `write` for a line up to [`LINE_PIECE_BYTES`]; a
    /// longer one (a batch of calls whose arguments are megabytes) goes out in pieces
    /// as it is serialised, so it is never held whole.
    fn append<T: Serialize>(&mut self, record: &T) {
        let mut line = std::mem::take(&mut self.buffer);
        line.clear();
        let Some(file) = self.open() else {
            self.buffer = line;
            return;
        };
        let mut out = PiecewiseLine {
            piece: &mut line,
            file,
        };
        let written = serde_json::to_writer(&mut out, record)
            .map_err(std::io::Error::from)
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush());
        if let Err(e) = written {
            self.turn_off(&format!("cannot write {}: {e}", self.setup.file.display()));
        }
        line.clear();
        if line.capacity() > LINE_PIECE_BYTES {
            line = Vec::new();
        }
        self.buffer = line;
    }

    fn message<T: Serialize>(&mut self, record: &T, now: &str) {
        self.append(record);
        self.append(&last_updated_record(now));
    }

    fn model(&mut self, content: &Content, usage: Option<Usage>) {
        let now = iso8601(std::time::SystemTime::now());
        let last = LastModel {
            id: crate::actors::session::new_session_id(),
            timestamp: now.clone(),
            text: content.text(),
            tokens: Tokens::from(usage.unwrap_or_default()),
        };
        let ids: Vec<String> = content
            .function_calls()
            .map(|c| {
                let mut id = String::new();
                record_call_id(&c.name, c.id.as_deref().unwrap_or_default(), &mut id);
                id
            })
            .collect();
        let calls = content
            .function_calls()
            .zip(&ids)
            .map(|(c, id)| CallEntry {
                id,
                name: &c.name,
                args: &c.args,
                result: None,
                status: "scheduled",
                timestamp: &now,
                result_display: None,
                agent_id: None,
            })
            .collect();
        let model = self.setup.model.clone();
        let record = last.record(&model, calls);
        self.message(&record, &now);
        self.last_gemini = Some(last);
    }

    /// Calls of the round that finished, written into its record line; `done` closes
    /// the line. The first calls open it with the last model record's fields.
    fn results(&mut self, completed: &[std::sync::Arc<CompletedCall>], done: bool) {
        let now = iso8601(std::time::SystemTime::now());
        if self.round.is_none() {
            let last = self.last_gemini.take().unwrap_or_else(|| LastModel {
                id: crate::actors::session::new_session_id(),
                timestamp: now.clone(),
                text: String::new(),
                tokens: Tokens::default(),
            });
            let model = self.setup.model.clone();
            // The record without calls ends with `}`: the calls go in its place.
            let mut line = serde_json::to_vec(&last.record(&model, Vec::new())).unwrap_or_default();
            line.pop();
            line.extend_from_slice(b",\"toolCalls\":[");
            self.round = Some(OpenRound { line, calls: 0 });
        }
        if let Err(e) = self.write_calls(completed, &now, done) {
            self.turn_off(&format!("cannot write {}: {e}", self.setup.file.display()));
            self.round = None;
            return;
        }
        if done {
            self.round = None;
            self.append(&last_updated_record(&now));
        }
    }

    fn write_calls(
        &mut self,
        completed: &[std::sync::Arc<CompletedCall>],
        now: &str,
        done: bool,
    ) -> std::io::Result<()> {
        let Some(mut round) = self.round.take() else {
            return Ok(());
        };
        let Some(file) = self.open() else {
            return Ok(());
        };
        let mut out = PiecewiseLine {
            piece: &mut round.line,
            file,
        };
        let mut id = String::new();
        for call in completed {
            if round.calls > 0 {
                out.write_all(b",")?;
            }
            round.calls += 1;
            record_call_id(&call.name, &call.call_id, &mut id);
            let entry = CallEntry {
                id: &id,
                name: &call.name,
                args: &call.args,
                result: Some(&call.response_parts),
                status: match call.status {
                    CallStatus::Success => "success",
                    CallStatus::Cancelled => "cancelled",
                    _ => "error",
                },
                timestamp: now,
                // gemini-cli's file-diff object for a (small) edit, else the text.
                result_display: Some(crate::engine::result_display::result_display(
                    &call.display,
                    call.data.as_ref(),
                )),
                agent_id: (call.name == crate::tools::invoke_agent::INVOKE_AGENT)
                    .then(|| call.data.as_ref()?.get("agentId")?.as_str())
                    .flatten(),
            };
            serde_json::to_writer(&mut out, &entry).map_err(std::io::Error::from)?;
        }
        if done {
            out.write_all(b"]}\n")?;
            out.flush()?;
        }
        self.round = Some(round);
        Ok(())
    }

    /// Ends an open round's line with the calls written so far (another record must
    /// not land inside it).
    fn close_round(&mut self) {
        if self.round.is_some() {
            self.results(&[], true);
        }
    }
}

/// A file a killed run left in the middle of a line gets its line ended, so that the
/// next record is a line of its own (the partial one is skipped when loaded).
fn end_on_a_new_line(mut file: File) -> std::io::Result<File> {
    use std::os::unix::fs::FileExt;
    let len = file.metadata()?.len();
    let mut last = [b'\n'];
    if len > 0 {
        file.read_exact_at(&mut last, len - 1)?;
    }
    if last[0] != b'\n' {
        file.write_all(b"\n")?;
    }
    Ok(file)
}

/// The last `gemini` record, re-appended with its calls' results.
struct LastModel {
    id: String,
    timestamp: String,
    text: String,
    tokens: Tokens,
}

impl LastModel {
    fn record<'a>(&'a self, model: &'a str, tool_calls: Vec<CallEntry<'a>>) -> GeminiRecord<'a> {
        GeminiRecord {
            id: &self.id,
            timestamp: &self.timestamp,
            kind: "gemini",
            content: &self.text,
            thoughts: [],
            tokens: self.tokens,
            model,
            tool_calls,
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GeminiRecord<'a> {
    id: &'a str,
    timestamp: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    content: &'a str,
    thoughts: [u8; 0],
    tokens: Tokens,
    model: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<CallEntry<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CallEntry<'a> {
    id: &'a str,
    name: &'a str,
    args: &'a Value,
    result: Option<&'a [Part]>,
    status: &'static str,
    timestamp: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    result_display: Option<Value>,
    /// The subagent an `invoke_agent` call ran (gemini-cli's link to its
    /// `chats/<session>/<agent id>.jsonl`).
    #[serde(skip_serializing_if = "Option::is_none")]
    agent_id: Option<&'a str>,
}

#[derive(Serialize, Clone, Copy, Default)]
struct Tokens {
    input: u64,
    output: u64,
    cached: u64,
    thoughts: u64,
    tool: u64,
    total: u64,
}

impl From<Usage> for Tokens {
    fn from(u: Usage) -> Self {
        Self {
            input: u.prompt_token_count,
            output: u.candidates_token_count,
            cached: u.cached_content_token_count,
            thoughts: u.thoughts_token_count,
            tool: 0,
            total: u.total_token_count,
        }
    }
}

impl Actor for SessionRecorder {
    type Context = Context<Self>;

    fn started(&mut self, _: &mut Self::Context) {
        for repair in std::mem::take(&mut self.setup.repairs) {
            self.append(&repair);
        }
    }
}

impl Handler<SessionEvent> for SessionRecorder {
    type Result = ();

    fn handle(&mut self, event: SessionEvent, _: &mut Self::Context) {
        if !matches!(event, SessionEvent::ToolResults { .. }) {
            self.close_round();
        }
        let now = iso8601(std::time::SystemTime::now());
        match event {
            SessionEvent::User { parts, display } => {
                let id = crate::actors::session::new_session_id();
                let record = user_record(&id, &now, &parts, display.as_deref());
                self.append(&record);
                // The first prompt of a new session titles it (gemini-cli's `summary`).
                let title = (!self.titled)
                    .then(|| crate::engine::session_file::summary_record(&record, &now))
                    .flatten();
                self.titled |= title.is_some();
                self.append(&title.unwrap_or_else(|| last_updated_record(&now)));
                self.last_user = Some(id);
            }
            SessionEvent::Model { content, usage } => self.model(&content, usage),
            SessionEvent::ToolResults { calls, done } => self.results(&calls, done),
            SessionEvent::RolledBack => {
                if let Some(id) = self.last_user.take() {
                    self.append(&json!({"$rewindTo": id}));
                    self.last_gemini = None;
                }
            }
            SessionEvent::Replaced(history) => {
                let mut ids = crate::actors::session::new_session_id;
                let messages = history_records(&history, &mut ids, &now);
                self.append(&json!({"$set": {"messages": messages, "lastUpdated": now}}));
                self.last_gemini = None;
                self.last_user = None;
            }
        }
    }
}

impl Handler<FlushRecords> for SessionRecorder {
    type Result = ();

    fn handle(&mut self, _: FlushRecords, _: &mut Self::Context) {
        self.close_round();
    }
}

impl Handler<SwitchSession> for SessionRecorder {
    type Result = ();

    fn handle(&mut self, msg: SwitchSession, _: &mut Self::Context) {
        self.close_round();
        self.setup.file = msg.file;
        self.setup.session_id = msg.session_id;
        self.setup.existing = msg.existing;
        self.setup.lock = Some(msg.lock);
        self.file = None;
        self.failed = false;
        self.last_gemini = None;
        self.last_user = None;
        self.titled = self.setup.existing;
        for repair in msg.repairs {
            self.append(&repair);
        }
    }
}
