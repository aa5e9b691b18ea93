//! `DIR/results.jsonl`: a line per task as it ends, appended (never rewritten), and
//! read back when the same batch runs again: the ids whose last line says `ok` are
//! done and skipped.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::BatchError;

/// How a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Ok,
    Error,
    Timeout,
    Cancelled,
    MaxTurns,
    Loop,
    /// The task asks for a change and its turn changed no file (`model.check_outcome`).
    NoChange,
    /// The task asks to run the tests and its turn ran none.
    TestsNotRun,
    /// A tool call was required and the model answered twice without one.
    NoToolCall,
}

impl TaskStatus {
    /// The status of a turn that completed without doing what its task asked.
    pub fn unmet(unmet: crate::protocol::Unmet) -> Self {
        match unmet {
            crate::protocol::Unmet::NoChange => TaskStatus::NoChange,
            crate::protocol::Unmet::TestsNotRun => TaskStatus::TestsNotRun,
            crate::protocol::Unmet::NoToolCall => TaskStatus::NoToolCall,
        }
    }

    /// The name in the results.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Ok => "ok",
            TaskStatus::Error => "error",
            TaskStatus::Timeout => "timeout",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::MaxTurns => "max_turns",
            TaskStatus::Loop => "loop",
            TaskStatus::NoChange => "no_change",
            TaskStatus::TestsNotRun => "tests_not_run",
            TaskStatus::NoToolCall => "no_tool_call",
        }
    }
}

/// A task's tokens, as the server counted them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cached: u64,
    pub total: u64,
}

/// What the task changed in its copy of the workspace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DiffStats {
    pub files_changed: u64,
    pub insertions: u64,
    pub deletions: u64,
}

/// One line of the results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    pub id: String,
    pub status: TaskStatus,
    pub response: String,
    /// Model requests.
    pub turns: u64,
    pub tool_calls: u64,
    pub tokens: Tokens,
    pub wall_ms: u64,
    /// Where the task worked (its copy, or the workspace itself).
    pub workspace: PathBuf,
    /// `null` for a task run in place, or when the copy could not be compared.
    pub diff_stats: Option<DiffStats>,
    pub trajectory: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl TaskResult {
    /// A task that ended before its session started.
    pub fn failed(id: &str, workspace: PathBuf, error: String, wall_ms: u64) -> Self {
        Self {
            id: id.to_string(),
            status: TaskStatus::Error,
            response: String::new(),
            turns: 0,
            tool_calls: 0,
            tokens: Tokens::default(),
            wall_ms,
            workspace,
            diff_stats: None,
            trajectory: None,
            error: Some(error),
        }
    }
}

/// The ids already done (their last line says `ok`) in the results at `path`, and how
/// many lines could not be read (a line cut by a crash is retried, not fatal).
pub fn done_ids(path: &Path) -> Result<(HashMap<String, TaskStatus>, usize), BatchError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Default::default()),
        Err(e) => return Err(BatchError::io(path, e)),
    };
    let mut last = HashMap::new();
    let mut unreadable = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<TaskResult>(line) {
            Ok(result) => {
                last.insert(result.id, result.status);
            }
            Err(_) => unreadable += 1,
        }
    }
    Ok((last, unreadable))
}

/// The results file, open for appending.
pub struct ResultsFile {
    path: PathBuf,
    file: Mutex<std::fs::File>,
}

impl ResultsFile {
    /// Opens (or creates) `path` for appending.
    pub fn open(path: &Path) -> Result<Self, BatchError> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| BatchError::io(path, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            file: Mutex::new(file),
        })
    }

    /// Appends `result` as one line, written whole in one call and flushed to disk.
    pub fn append(&self, result: &TaskResult) -> Result<(), BatchError> {
        let mut line =
            serde_json::to_string(result).map_err(|e| BatchError::io(&self.path, e.into()))?;
        line.push('\n');
        let mut file = self
            .file
            .lock()
            .map_err(|_| BatchError::io(&self.path, std::io::Error::other("poisoned")))?;
        file.write_all(line.as_bytes())
            .and_then(|()| file.sync_data())
            .map_err(|e| BatchError::io(&self.path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_line_of_an_id_decides_and_a_cut_line_is_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.jsonl");
        let results = ResultsFile::open(&path).unwrap();
        let mut a = TaskResult::failed("a", dir.path().into(), "boom".into(), 1);
        results.append(&a).unwrap();
        a.status = TaskStatus::Ok;
        a.error = None;
        results.append(&a).unwrap();
        results
            .append(&TaskResult::failed("b", dir.path().into(), "x".into(), 1))
            .unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"id\":\"c\",\"sta")
            .unwrap();
        let (done, unreadable) = done_ids(&path).unwrap();
        assert_eq!(done.get("a"), Some(&TaskStatus::Ok));
        assert_eq!(done.get("b"), Some(&TaskStatus::Error));
        assert_eq!((done.len(), unreadable), (2, 1));
        let line = std::fs::read_to_string(&path).unwrap();
        let first: serde_json::Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
        assert_eq!(first["status"], "error");
        assert_eq!(first["diff_stats"], serde_json::Value::Null);
    }
}
