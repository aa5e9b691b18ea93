//! The tasks file of `troupe batch`: one JSON object per line.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::BatchError;

/// One task: a prompt run as a session of its own, on its own copy of a workspace.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// Names the task in the results and its folder under the output directory.
    pub id: String,
    pub prompt: String,
    /// The workspace the task works on (a copy of it, unless `in_place`); relative to
    /// the tasks file's folder; the current directory when left out.
    #[serde(default)]
    pub workspace: Option<PathBuf>,
    #[serde(default)]
    pub approval_mode: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub max_turns: Option<u32>,
    /// Seconds the task may run before it is cancelled (`timeout`).
    #[serde(default)]
    pub timeout_s: Option<f64>,
    #[serde(default)]
    pub profile: Option<String>,
    #[serde(default)]
    pub sandbox: Option<String>,
    /// Work in the workspace itself rather than on a copy.
    #[serde(default)]
    pub in_place: bool,
}

impl Task {
    /// The workspace the task names, resolved against `base` (the tasks file's
    /// folder), or `cwd` when it names none.
    pub fn source(&self, base: &Path, cwd: &Path) -> PathBuf {
        match &self.workspace {
            Some(dir) if dir.is_absolute() => dir.clone(),
            Some(dir) => base.join(dir),
            None => cwd.to_path_buf(),
        }
    }
}

/// Reads the tasks of `text` (the file at `path`): every line a task, blank lines
/// skipped. A line that is not a task, a repeated id, or an id that cannot name a
/// folder is an error naming the line.
pub fn parse(path: &Path, text: &str) -> Result<Vec<Task>, BatchError> {
    let mut tasks = Vec::new();
    let mut seen = HashSet::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        let bad = |message: String| BatchError::Tasks {
            path: path.to_path_buf(),
            line: number,
            message,
        };
        let task: Task = serde_json::from_str(line).map_err(|e| bad(e.to_string()))?;
        if !valid_id(&task.id) {
            return Err(bad(format!(
                "the id `{}` must be 1 to 128 letters, digits, `-`, `_` or `.` (it names the task's folder)",
                task.id
            )));
        }
        if task.timeout_s.is_some_and(|t| !(t.is_finite() && t > 0.0)) {
            return Err(bad("timeout_s must be a positive number of seconds".into()));
        }
        if !seen.insert(task.id.clone()) {
            return Err(bad(format!(
                "the id `{}` is used by an earlier line",
                task.id
            )));
        }
        tasks.push(task);
    }
    if tasks.is_empty() {
        return Err(BatchError::Tasks {
            path: path.to_path_buf(),
            line: 0,
            message: "the file holds no task".into(),
        });
    }
    Ok(tasks)
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id != "."
        && id != ".."
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Vec<Task>, String> {
        parse(Path::new("t.jsonl"), text).map_err(|e| e.to_string())
    }

    #[test]
    fn a_task_takes_its_optional_fields() {
        let tasks = parsed(
            "{\"id\":\"a\",\"prompt\":\"p\",\"workspace\":\"w\"}\n\n{\"id\":\"b\",\"prompt\":\"q\",\"max_turns\":3,\"timeout_s\":1.5,\"in_place\":true}\n",
        )
        .unwrap();
        assert_eq!(tasks.len(), 2);
        assert_eq!(
            tasks[0].source(Path::new("/base"), Path::new("/cwd")),
            PathBuf::from("/base/w")
        );
        assert_eq!(
            tasks[1].source(Path::new("/base"), Path::new("/cwd")),
            PathBuf::from("/cwd")
        );
        assert_eq!((tasks[1].max_turns, tasks[1].in_place), (Some(3), true));
    }

    #[test]
    fn bad_lines_are_named() {
        let err = parsed("{\"id\":\"a\",\"prompt\":\"p\"}\n{\"id\":\"a\",\"prompt\":\"p\"}\n")
            .unwrap_err();
        assert!(
            err.contains("line 2") && err.contains("earlier line"),
            "{err}"
        );
        let err = parsed("{\"id\":\"../x\",\"prompt\":\"p\"}").unwrap_err();
        assert!(
            err.contains("line 1") && err.contains("names the task's folder"),
            "{err}"
        );
        let err = parsed("{\"id\":\"a\",\"prompt\":\"p\",\"colour\":1}").unwrap_err();
        assert!(err.contains("unknown field `colour`"), "{err}");
        let err = parsed("{\"id\":\"a\",\"prompt\":\"p\",\"timeout_s\":0}").unwrap_err();
        assert!(err.contains("timeout_s"), "{err}");
        assert!(parsed("\n\n").unwrap_err().contains("no task"));
    }
}
