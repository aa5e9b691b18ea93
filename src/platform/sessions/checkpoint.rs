//! Checkpoints (`general.checkpointing`): before edit calls run, the workspace is
//! committed to a shadow git repository at `<troupe home>/history/<project slug>`
//! (`GIT_DIR` there, `GIT_WORK_TREE` the project root, its own config files: the
//! project's `.git` and the user's git config are never touched), and a checkpoint file
//! in `<troupe home>/tmp/<slug>/checkpoints/` keeps the conversation up to the call and
//! the commit. `/restore NAME` puts both back; the edit is not run again.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::text::iso8601;
use crate::protocol::content::{Content, FunctionResponse, Part, Role};
use crate::protocol::CheckpointEdit;

/// A checkpoint failure, for the user.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("Checkpointing is enabled, but Git is not installed. Please install Git or disable checkpointing to continue.")]
    NoGit,
    #[error("git {args} failed: {message}")]
    Git { args: String, message: String },
    #[error("File not found: {0}.json")]
    NotFound(String),
    #[error("Checkpoint file is invalid: {0}")]
    Invalid(String),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

fn io(path: &Path, source: std::io::Error) -> CheckpointError {
    CheckpointError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// A checkpoint file, in gemini-cli's shape.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointFile {
    #[serde(default)]
    pub history: Vec<Value>,
    pub client_history: Vec<Content>,
    pub tool_call: ToolCallRef,
    pub commit_hash: String,
    #[serde(default)]
    pub message_id: String,
}

/// The call a checkpoint was taken before.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolCallRef {
    pub name: String,
    pub args: Value,
}

/// The shadow repository and checkpoint directory of one project.
#[derive(Debug, Clone)]
pub struct Checkpoints {
    /// `<troupe home>/history/<slug>`.
    pub repo: PathBuf,
    /// The project root (the work tree).
    pub root: PathBuf,
    /// `<troupe home>/tmp/<slug>/checkpoints`.
    pub dir: PathBuf,
}

impl Checkpoints {
    pub fn new(home: &Path, slug: &str, root: &Path, project_dir: &Path) -> Self {
        Self {
            repo: home.join("history").join(slug),
            root: root.to_path_buf(),
            dir: project_dir.join("checkpoints"),
        }
    }

    fn git(&self, args: &[&str]) -> Result<String, CheckpointError> {
        let out = Command::new("git")
            .args(args)
            .current_dir(&self.root)
            .env("GIT_DIR", self.repo.join(".git"))
            .env("GIT_WORK_TREE", &self.root)
            .env("GIT_CONFIG_GLOBAL", self.repo.join(".gitconfig"))
            .env(
                "GIT_CONFIG_SYSTEM",
                self.repo.join(".gitconfig_system_empty"),
            )
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("GIT_OBJECT_DIRECTORY")
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    CheckpointError::NoGit
                } else {
                    io(Path::new("git"), e)
                }
            })?;
        if !out.status.success() {
            return Err(CheckpointError::Git {
                args: args.join(" "),
                message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// Creates the shadow repository once (branch `main`, an empty first commit).
    pub fn setup(&self) -> Result<(), CheckpointError> {
        if self.repo.join(".git").join("HEAD").exists() {
            return Ok(());
        }
        std::fs::create_dir_all(&self.repo).map_err(|e| io(&self.repo, e))?;
        let config = "[user]\n\tname = Troupe\n\temail = troupe@localhost\n[commit]\n\tgpgsign = false\n[core]\n\tautocrlf = false\n\thooksPath = /dev/null\n";
        std::fs::write(self.repo.join(".gitconfig"), config)
            .map_err(|e| io(&self.repo.join(".gitconfig"), e))?;
        std::fs::write(self.repo.join(".gitconfig_system_empty"), "")
            .map_err(|e| io(&self.repo, e))?;
        std::fs::write(
            self.repo.join(".project_root"),
            self.root.display().to_string(),
        )
        .map_err(|e| io(&self.repo, e))?;
        self.git(&["init", "-q", "-b", "main"])?;
        self.git(&[
            "commit",
            "-q",
            "--allow-empty",
            "--no-verify",
            "-m",
            "Initial commit",
        ])?;
        Ok(())
    }

    /// Commits the workspace as it is now; returns the commit.
    pub fn snapshot(&self, tool: &str) -> Result<String, CheckpointError> {
        self.setup()?;
        self.git(&["add", "-A", "."])?;
        let message = format!("Snapshot for {tool}");
        self.git(&[
            "commit",
            "-q",
            "--allow-empty",
            "--no-verify",
            "-m",
            &message,
        ])?;
        self.git(&["rev-parse", "HEAD"])
    }

    /// Takes a snapshot and writes one checkpoint file per edit call; returns their names.
    pub fn take(
        &self,
        history: &[Content],
        edits: &[CheckpointEdit],
    ) -> Result<Vec<String>, CheckpointError> {
        let Some(first) = edits.first() else {
            return Ok(Vec::new());
        };
        let hash = self.snapshot(&first.call.name)?;
        std::fs::create_dir_all(&self.dir).map_err(|e| io(&self.dir, e))?;
        let stamp = iso8601(std::time::SystemTime::now())
            .replace(':', "-")
            .replace('.', "_");
        let mut names = Vec::new();
        for (i, CheckpointEdit { call, path }) in edits.iter().enumerate() {
            let base = Path::new(path)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "file".into());
            let suffix = if i == 0 {
                String::new()
            } else {
                format!("-{i}")
            };
            let name = format!("{stamp}-{base}-{}{suffix}", call.name);
            let file = CheckpointFile {
                history: Vec::new(),
                client_history: history.to_vec(),
                tool_call: ToolCallRef {
                    name: call.name.clone(),
                    args: call.args.clone(),
                },
                commit_hash: hash.clone(),
                message_id: call.id.clone().unwrap_or_default(),
            };
            let text = serde_json::to_vec_pretty(&file)
                .map_err(|e| CheckpointError::Invalid(e.to_string()))?;
            super::write_atomic(&self.dir.join(format!("{name}.json")), &text)
                .map_err(|e| CheckpointError::Invalid(e.to_string()))?;
            names.push(name);
        }
        Ok(names)
    }

    /// The checkpoint names, oldest first.
    pub fn list(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.dir)
            .map(|d| {
                d.flatten()
                    .filter_map(|e| {
                        e.file_name()
                            .to_string_lossy()
                            .strip_suffix(".json")
                            .map(str::to_string)
                    })
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// Puts the files back as they were before the checkpoint's call and returns the
    /// conversation to continue from: the history up to the call, the call answered
    /// with "restored, not run".
    pub fn restore(&self, name: &str) -> Result<Vec<Content>, CheckpointError> {
        let name = name.strip_suffix(".json").unwrap_or(name);
        if name.contains('/') || name.contains("..") {
            return Err(CheckpointError::NotFound(name.to_string()));
        }
        let path = self.dir.join(format!("{name}.json"));
        let text = std::fs::read_to_string(&path)
            .map_err(|_| CheckpointError::NotFound(name.to_string()))?;
        let file: CheckpointFile =
            serde_json::from_str(&text).map_err(|e| CheckpointError::Invalid(e.to_string()))?;
        self.git(&[
            "cat-file",
            "-e",
            &format!("{}^{{commit}}", file.commit_hash),
        ])
        .map_err(|_| {
            CheckpointError::Invalid(format!(
                "the commit {} could not be found in your Git repository",
                file.commit_hash
            ))
        })?;
        self.git(&["restore", "--source", &file.commit_hash, "."])?;
        self.git(&["clean", "-f", "-d", "-q"])?;
        Ok(answer_pending(file.client_history))
    }
}

/// The restored history: the model turn holding the calls stays, and every call it
/// made is answered with a response saying the files were restored and it did not run.
fn answer_pending(mut history: Vec<Content>) -> Vec<Content> {
    let Some(last) = history.last() else {
        return history;
    };
    if last.role != Role::Model {
        return history;
    }
    let parts: Vec<Part> = last
        .function_calls()
        .map(|c| {
            Part::function_response(FunctionResponse {
                id: c.id.clone(),
                name: c.name.clone(),
                response: serde_json::json!({"error": "The user restored the workspace files to their state before this call (/restore); the call was not run."}),
                parts: None,
            })
        })
        .collect();
    if !parts.is_empty() {
        history.push(Content {
            role: Role::User,
            parts,
        });
    }
    history
}
