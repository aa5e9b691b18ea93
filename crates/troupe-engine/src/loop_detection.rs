//! Loop detection, as gemini-cli's `LoopDetectionService` does it: a model that asks for
//! the same tool call (same name, same arguments) [`TOOL_CALL_LOOP_THRESHOLD`] times in
//! a row, or that streams the same [`CONTENT_CHUNK_SIZE`]-character piece of text
//! [`CONTENT_LOOP_THRESHOLD`] times close together, is stuck. Pure logic: the Chat actor
//! feeds it the calls and text of a turn and decides what to do when it fires.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::call_key::CallKey;
use crate::protocol::content::FunctionCall;
use crate::protocol::{ToolFacts, ToolFactsTable};

/// Identical consecutive tool calls that make a loop (gemini-cli: 5).
pub const TOOL_CALL_LOOP_THRESHOLD: u32 = 5;
/// Repetitions of one text chunk that make a loop (gemini-cli: 10).
pub const CONTENT_LOOP_THRESHOLD: usize = 10;
/// The length of the text chunks compared (gemini-cli: 50).
pub const CONTENT_CHUNK_SIZE: usize = 50;
/// Text kept for the content check (gemini-cli: 1000).
const MAX_HISTORY_LENGTH: usize = 1000;
/// Failures of one call (same tool, same arguments) after which the model is told to
/// try something else; asking for it once more after that is a loop (not gemini-cli's:
/// it counts failures like any call, up to [`TOOL_CALL_LOOP_THRESHOLD`] in a row).
pub const FAILED_CALL_NUDGE: u32 = 3;

/// What kind of loop was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoopKind {
    /// The same call, `count` times in a row.
    ToolCall { name: String, count: u32 },
    /// The same piece of text over and over.
    Content { chunk: String },
    /// A call asked for again after it failed `failures` times, the model told so.
    FailingCall { name: String, failures: u32 },
}

impl LoopKind {
    /// What the user reads.
    pub fn describe(&self) -> String {
        match self {
            LoopKind::ToolCall { name, count } => {
                format!("the model called {name} with the same arguments {count} times in a row")
            }
            LoopKind::FailingCall { name, failures } => format!(
                "the model called {name} again with the same arguments after it failed {failures} times and was told to try something else"
            ),
            LoopKind::Content { chunk } => {
                let short: String = chunk.chars().take(40).collect();
                format!("the model repeated the same text over and over (\"{short}…\")")
            }
        }
    }
}

/// The state of one user turn.
#[derive(Debug, Default)]
pub struct LoopDetector {
    /// The fingerprint of the last call asked for.
    last_call: Option<u64>,
    repetitions: u32,
    /// Text streamed since the last tool call, at most [`MAX_HISTORY_LENGTH`] bytes.
    history: String,
    /// Where the next chunk to examine starts in `history`.
    next_index: usize,
    /// Start positions of each chunk seen, by its text.
    chunks: HashMap<String, Vec<usize>>,
    in_code_block: bool,
}

impl LoopDetector {
    /// Forgets everything (a new user turn, or the user chose to go on).
    pub fn reset(&mut self) {
        *self = Self::default();
    }

    /// A tool call the model asked for; `Some` when it makes a loop.
    pub fn check_call(&mut self, call: &FunctionCall) -> Option<LoopKind> {
        self.check_key(CallKey::of(call))
    }

    fn check_key(&mut self, key: CallKey<'_>) -> Option<LoopKind> {
        self.reset_content();
        let fingerprint = key.fingerprint();
        if self.last_call == Some(fingerprint) {
            self.repetitions += 1;
        } else {
            self.last_call = Some(fingerprint);
            self.repetitions = 1;
        }
        (self.repetitions >= TOOL_CALL_LOOP_THRESHOLD).then(|| LoopKind::ToolCall {
            name: key.name.to_string(),
            count: self.repetitions,
        })
    }

    /// The calls of one model turn: a call asked for twice in the same turn counts
    /// once (parallel duplicates are not a loop; asking again after the answer is).
    pub fn check_round<C: std::borrow::Borrow<FunctionCall>>(
        &mut self,
        calls: &[C],
    ) -> Option<LoopKind> {
        let mut seen = HashSet::with_capacity(calls.len());
        calls
            .iter()
            .map(|c| CallKey::of(c.borrow()))
            .filter(|key| seen.insert(*key))
            .find_map(|key| self.check_key(key))
    }

    /// A piece of streamed text; `Some` when the text has started to loop. Text inside
    /// code blocks, and Markdown structure (tables, lists, headings, rules), is not
    /// counted: repetition is normal there.
    pub fn check_text(&mut self, text: &str) -> Option<LoopKind> {
        let fences = text.matches("```").count();
        let structural = text.lines().any(is_structure);
        if fences > 0 || structural {
            self.reset_content();
            if fences % 2 == 1 {
                self.in_code_block = !self.in_code_block;
            }
            return None;
        }
        if self.in_code_block {
            return None;
        }
        self.history.push_str(text);
        self.trim_history();
        while self.next_index + CONTENT_CHUNK_SIZE <= self.history.len() {
            let at = self.next_index;
            let mut end = at + CONTENT_CHUNK_SIZE;
            while !self.history.is_char_boundary(end) {
                end += 1;
            }
            let chunk = self.history[at..end].to_string();
            self.next_index += 1;
            while !self.history.is_char_boundary(self.next_index) {
                self.next_index += 1;
            }
            if self.repeats(&chunk, at) {
                return Some(LoopKind::Content { chunk });
            }
        }
        None
    }

    fn repeats(&mut self, chunk: &str, at: usize) -> bool {
        let seen = self.chunks.entry(chunk.to_string()).or_default();
        seen.push(at);
        if seen.len() < CONTENT_LOOP_THRESHOLD {
            return false;
        }
        let recent = &seen[seen.len() - CONTENT_LOOP_THRESHOLD..];
        let span = recent[recent.len() - 1] - recent[0];
        let average = span as f64 / (CONTENT_LOOP_THRESHOLD - 1) as f64;
        average <= CONTENT_CHUNK_SIZE as f64 * 1.5
    }

    /// Keeps the text within bounds, shifting the recorded positions.
    fn trim_history(&mut self) {
        if self.history.len() <= MAX_HISTORY_LENGTH {
            return;
        }
        let mut cut = self.history.len() - MAX_HISTORY_LENGTH;
        while !self.history.is_char_boundary(cut) {
            cut += 1;
        }
        self.history.drain(..cut);
        self.next_index = self.next_index.saturating_sub(cut);
        self.chunks.retain(|_, positions| {
            positions.retain(|p| *p >= cut);
            for p in positions.iter_mut() {
                *p -= cut;
            }
            !positions.is_empty()
        });
    }

    fn reset_content(&mut self) {
        self.history.clear();
        self.next_index = 0;
        self.chunks.clear();
    }
}

/// Failures of each call (by its fingerprint, [`CallKey::fingerprint`]) in one user turn, so a call that keeps
/// failing the same way is caught after [`FAILED_CALL_NUDGE`] failures instead of
/// [`TOOL_CALL_LOOP_THRESHOLD`] calls.
#[derive(Debug, Default)]
pub struct FailedCalls {
    failures: HashMap<u64, u32>,
    /// The fingerprint of the last call that succeeded, and how many times in a row it
    /// did.
    last_success: Option<(u64, u32)>,
    /// The reads (tools whose answer depends on the files only,
    /// [`ToolFacts::answer_depends_on_files_only`]) that succeeded since the last call that may
    /// have changed something: the same read again gets the same answer.
    seen_reads: HashSet<u64>,
}

impl FailedCalls {
    /// A finished call: its failures so far (a success forgets them, and returns 0).
    pub fn record(&mut self, name: &str, args: &Value, failed: bool) -> u32 {
        if !failed && self.failures.is_empty() {
            return 0;
        }
        let key = failure_key(name, args);
        if !failed {
            self.failures.remove(&key);
            return 0;
        }
        let count = self.failures.entry(key).or_default();
        *count += 1;
        *count
    }

    /// A call that did not succeed: the next success starts a new row.
    pub fn record_other(&mut self) {
        self.last_success = None;
    }

    /// A call that succeeded: how many times in a row (over the model's turns) this
    /// same call has now succeeded. A second success means the model repeats a step it
    /// already made (a small model writes the same file again and again). A read that
    /// already succeeded earlier in the turn, with no other kind of call succeeding
    /// since, counts as at least a second success too (a small model alternated the
    /// same search and reads for three minutes).
    /// `facts` are the facts of the tool `name`.
    pub fn record_success(&mut self, name: &str, args: &Value, facts: &ToolFacts) -> u32 {
        let key = CallKey { name, args }.fingerprint();
        let read_again = if facts.answer_depends_on_files_only {
            !self.seen_reads.insert(key)
        } else {
            self.seen_reads.clear();
            false
        };
        let row = self.row_of_successes(key);
        if read_again {
            row.max(2)
        } else {
            row
        }
    }

    fn row_of_successes(&mut self, key: u64) -> u32 {
        match &mut self.last_success {
            Some((last, count)) if *last == key => {
                *count += 1;
                *count
            }
            _ => {
                self.last_success = Some((key, 1));
                1
            }
        }
    }

    /// The calls of a model turn: `Some` when one of them already failed
    /// [`FAILED_CALL_NUDGE`] times (the model was told to try something else).
    pub fn check_round<C: std::borrow::Borrow<FunctionCall>>(
        &self,
        calls: &[C],
    ) -> Option<LoopKind> {
        if self.failures.is_empty() {
            return None;
        }
        calls.iter().find_map(|c| {
            let call = c.borrow();
            let failures = *self.failures.get(&failure_key(&call.name, &call.args))?;
            (failures >= FAILED_CALL_NUDGE).then(|| LoopKind::FailingCall {
                name: call.name.clone(),
                failures,
            })
        })
    }
}

/// Whether a call's arguments make an edit that changes nothing: its `old_string` and
/// `new_string` are the same text (whatever else it says, `allow_multiple` too).
pub fn is_identity_edit(args: &Value) -> bool {
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    matches!((text("old_string"), text("new_string")), (Some(a), Some(b)) if a == b)
}

/// What failures of a call are counted under: the call itself, or, for an edit that
/// changes nothing, every such edit of the same file by the same tool (a small model
/// alternated `allow_multiple` between identical `replace X → X` calls).
fn failure_key(name: &str, args: &Value) -> u64 {
    if is_identity_edit(args) {
        let same = serde_json::json!({"file_path": args.get("file_path"), "identity_edit": true});
        return CallKey { name, args: &same }.fingerprint();
    }
    CallKey { name, args }.fingerprint()
}

/// Added to the error of an edit that changes nothing.
pub const IDENTITY_EDIT_NOTE: &str = "(Note from Troupe: old_string and new_string are the same text, so this edit changes nothing. Put in new_string the text as it must read after the change the user asked for; if nothing needs to change, say so instead of editing.)";

/// The note added to the output of a call that succeeded again, unchanged, right after
/// it succeeded before.
pub const REPEAT_NOTE: &str = "(Note from Troupe: this exact call (same tool, same arguments) already succeeded in this turn, with nothing changed since, so this result is the one you already have. Do not repeat it: go on with the next step, or answer the user if the task is done.)";

/// The note added to the error of a call that failed `failures` times.
pub fn failure_nudge(failures: u32) -> String {
    format!(
        "(Note from Troupe: this exact call (same tool, same arguments) has now failed {failures} times with this error; do not repeat it, try something else. Calling it again unchanged stops the turn.)"
    )
}

/// For each call of a model turn, the index of the first call before it with the same
/// tool and the same arguments (`None`: the first of its kind, or a tool that always
/// runs). Only the tools whose facts say so ([`ToolFacts::run_once`]) run once:
/// reading twice gives the same answer, and the same write, edit or command asked for
/// twice in one answer is a repetition, not a plan (a small model repeats its fenced
/// blocks). Tools whose effects Troupe does not know (MCP, discovered, test tools)
/// always run.
pub fn duplicates<C: std::borrow::Borrow<FunctionCall>>(
    calls: &[C],
    facts: &ToolFactsTable,
) -> Vec<Option<usize>> {
    if calls.len() < 2 {
        return vec![None; calls.len()];
    }
    let mut first: HashMap<CallKey<'_>, usize> = HashMap::with_capacity(calls.len());
    calls
        .iter()
        .enumerate()
        .map(|(i, c)| (i, c.borrow()))
        .map(|(i, c)| match facts.get(&c.name).run_once {
            false => None,
            true => match first.entry(CallKey::of(c)) {
                std::collections::hash_map::Entry::Occupied(e) => Some(*e.get()),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(i);
                    None
                }
            },
        })
        .collect()
}

/// A Markdown line whose repetition is expected: a table row, a list item, a heading,
/// a block quote or a rule.
fn is_structure(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with('|')
        || t.starts_with('#')
        || t.starts_with('>')
        || t.starts_with("- ")
        || t.starts_with("* ")
        || t.starts_with("---")
        || t.split_once(". ")
            .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn identity_edits_of_a_file_count_as_one_failing_call_whatever_allow_multiple_says() {
        let same = |multiple: bool| json!({"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 1", "allow_multiple": multiple});
        assert!(is_identity_edit(&same(true)));
        assert!(!is_identity_edit(
            &json!({"old_string": "x", "new_string": "y"})
        ));
        assert!(!is_identity_edit(
            &json!({"file_path": "a.py", "content": "x"})
        ));
        let mut failed = FailedCalls::default();
        assert_eq!(failed.record("replace", &same(true), true), 1);
        assert_eq!(failed.record("replace", &same(false), true), 2);
        assert_eq!(failed.record("replace", &same(true), true), 3);
        let again = FunctionCall {
            id: None,
            name: "replace".into(),
            args: same(false),
        };
        assert!(failed.check_round(&[again]).is_some());
        // Another file's identity edit is a call of its own.
        let other = json!({"file_path": "b.py", "old_string": "x", "new_string": "x"});
        assert_eq!(failed.record("replace", &other, true), 1);
    }

    /// The facts of the built-in tools these tests call, as their tools state them.
    fn facts() -> ToolFactsTable {
        let read = ToolFacts {
            run_once: true,
            answer_depends_on_files_only: true,
            ..ToolFacts::UNKNOWN
        };
        let edit = ToolFacts {
            run_once: true,
            edited_file_arg: Some("file_path"),
            ..ToolFacts::UNKNOWN
        };
        [
            ("read_file", read),
            ("grep_search", read),
            ("write_file", edit),
        ]
        .into_iter()
        .collect()
    }

    fn call(name: &str, args: Value) -> FunctionCall {
        FunctionCall {
            id: None,
            name: name.into(),
            args,
        }
    }

    #[test]
    fn the_fifth_identical_call_in_a_row_is_a_loop() {
        let mut d = LoopDetector::default();
        for _ in 1..TOOL_CALL_LOOP_THRESHOLD {
            assert_eq!(
                d.check_call(&call("ls", json!({"path": ".", "a": 1}))),
                None
            );
        }
        // Same arguments in another key order are the same call.
        assert_eq!(
            d.check_call(&call("ls", json!({"a": 1, "path": "."}))),
            Some(LoopKind::ToolCall {
                name: "ls".into(),
                count: TOOL_CALL_LOOP_THRESHOLD
            })
        );
    }

    #[test]
    fn duplicates_within_one_turn_count_once() {
        let mut d = LoopDetector::default();
        let same = vec![call("ls", json!({"path": "."})); 5];
        assert_eq!(d.check_round(&same), None);
        for _ in 2..TOOL_CALL_LOOP_THRESHOLD {
            assert_eq!(d.check_round(&same), None);
        }
        assert!(d.check_round(&same).is_some());
    }

    #[test]
    fn identical_calls_of_one_turn_point_at_the_first() {
        let calls = vec![
            call("read_file", json!({"file_path": "a", "limit": 1})),
            call("read_file", json!({"file_path": "b"})),
            call("read_file", json!({"limit": 1, "file_path": "a"})),
            call("write_file", json!({"file_path": "a", "limit": 1})),
            call("read_file", json!({"file_path": "b"})),
            call("mcp_fx_gather", json!({"n": 2})),
            call("mcp_fx_gather", json!({"n": 2})),
        ];
        assert_eq!(
            duplicates(&calls, &facts()),
            [None, None, Some(0), None, Some(1), None, None]
        );
    }

    #[test]
    fn a_read_again_with_nothing_changed_since_is_a_repeat() {
        let mut f = FailedCalls::default();
        let table = facts();
        let grep = json!({"pattern": "TAX_RATE"});
        let read = json!({"file_path": "a.py"});
        assert_eq!(
            f.record_success("grep_search", &grep, table.get("grep_search")),
            1
        );
        assert_eq!(
            f.record_success("read_file", &read, table.get("read_file")),
            1
        );
        // Not in a row, but nothing changed: the same answer again.
        assert_eq!(
            f.record_success("grep_search", &grep, table.get("grep_search")),
            2
        );
        // A write may change what a read answers: the next read is new.
        assert_eq!(
            f.record_success(
                "write_file",
                &json!({"file_path": "a.py"}),
                table.get("write_file")
            ),
            1
        );
        assert_eq!(
            f.record_success("read_file", &read, table.get("read_file")),
            1
        );
    }

    #[test]
    fn a_call_that_failed_three_times_is_a_loop_when_asked_again() {
        let mut f = FailedCalls::default();
        let c = call("read_file", json!({"file_path": "gone"}));
        assert_eq!(f.record(&c.name, &c.args, true), 1);
        assert_eq!(f.record(&c.name, &c.args, true), 2);
        assert_eq!(f.check_round(std::slice::from_ref(&c)), None);
        assert_eq!(f.record(&c.name, &c.args, true), FAILED_CALL_NUDGE);
        assert_eq!(
            f.check_round(&[call("ls", json!({})), c.clone()]),
            Some(LoopKind::FailingCall {
                name: "read_file".into(),
                failures: FAILED_CALL_NUDGE
            })
        );
        // A success of the same call forgets its failures.
        assert_eq!(f.record(&c.name, &c.args, false), 0);
        assert_eq!(f.check_round(&[c]), None);
    }

    #[test]
    fn a_different_call_starts_the_count_again() {
        let mut d = LoopDetector::default();
        for i in 0..20 {
            let path = if i % 2 == 0 { "a" } else { "b" };
            assert_eq!(d.check_call(&call("read", json!({ "path": path }))), None);
        }
        for _ in 1..TOOL_CALL_LOOP_THRESHOLD {
            assert_eq!(d.check_call(&call("read", json!({"path": "a"}))), None);
        }
        d.reset();
        assert_eq!(d.check_call(&call("read", json!({"path": "a"}))), None);
    }

    #[test]
    fn repeated_text_is_a_loop_and_varied_text_is_not() {
        let mut d = LoopDetector::default();
        let sentence = "I will now list the directory again to be sure of it. ";
        let found = (0..30).find_map(|_| d.check_text(sentence));
        assert!(matches!(found, Some(LoopKind::Content { .. })), "{found:?}");

        let mut d = LoopDetector::default();
        let prose: String = (0..400).map(|i| format!("word{i} ")).collect();
        for piece in prose.as_bytes().chunks(37) {
            assert_eq!(d.check_text(std::str::from_utf8(piece).unwrap()), None);
        }
    }

    #[test]
    fn code_blocks_and_tables_do_not_count() {
        let mut d = LoopDetector::default();
        assert_eq!(d.check_text("```rust\n"), None);
        for _ in 0..40 {
            assert_eq!(
                d.check_text("    assert_eq!(value, expected_value_here); // same\n"),
                None
            );
        }
        assert_eq!(d.check_text("```\n"), None);
        for _ in 0..40 {
            assert_eq!(
                d.check_text("| cell one | cell two | cell three | cell four |\n"),
                None
            );
        }
    }
}
