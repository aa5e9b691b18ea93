//! `glob`: files matching a glob pattern, recently modified first.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{Services, Tool, ToolContext};
use crate::engine::text::locale_cmp;
use crate::engine::workspace::Workspace;
use crate::protocol::{ToolErrorKind, ToolKind, ToolOutput};

/// The `glob` tool.
pub struct Glob;

#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    pub pattern: String,
    #[serde(default)]
    pub dir_path: Option<String>,
    #[serde(default)]
    pub case_sensitive: bool,
}

const RECENT: Duration = Duration::from_secs(24 * 3600);

impl Tool for Glob {
    type Params = Params;

    fn name(&self) -> &'static str {
        "glob"
    }

    fn display_name(&self) -> &'static str {
        "FindFiles"
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }

    fn description(&self) -> String {
        "Finds files whose paths match a glob pattern (e.g. 'src/**/*.rs'), returning \
         absolute paths: files changed in the last 24 hours first (newest first), then \
         the rest alphabetically."
            .to_string()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "The glob pattern, e.g. '**/*.py'."},
                "dir_path": {"type": "string", "description": "Optional: the directory to search in; defaults to the workspace."},
                "case_sensitive": {"type": "boolean", "description": "Optional: match case-sensitively (default false)."},
                "respect_git_ignore": {"type": "boolean", "description": "Optional: skip git-ignored files (default true)."},
                "respect_gemini_ignore": {"type": "boolean", "description": "Optional: skip files listed in .geminiignore (default true)."}
            },
            "required": ["pattern"]
        })
    }

    fn aliases(&self) -> &'static [(&'static str, &'static str)] {
        &[("path", "dir_path")]
    }

    fn validate(&self, p: &Params, _: &Services) -> Result<(), String> {
        if p.pattern.trim().is_empty() {
            return Err("The 'pattern' parameter cannot be empty.".into());
        }
        Ok(())
    }

    fn execute(&self, p: Params, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let ws = &ctx.services.workspace;
            let dir = ws.resolve(p.dir_path.as_deref().unwrap_or("."));
            let pattern = p.pattern.clone();
            let result = ctx
                .services
                .fs
                .run(move |ws| search(ws, &dir, &pattern, p.case_sensitive))
                .await;
            match result {
                Ok(out) => out,
                Err(e) => ToolOutput::error(
                    ToolErrorKind::GlobExecutionError,
                    format!("Error during glob search operation: {e}"),
                    "Error: An unexpected error occurred.",
                ),
            }
        })
    }
}

fn search(
    ws: &Workspace,
    dir: &std::path::Path,
    pattern: &str,
    case_sensitive: bool,
) -> ToolOutput {
    match search_inner(ws, dir, pattern, case_sensitive) {
        Ok(out) | Err(out) => *out,
    }
}

fn search_inner(
    ws: &Workspace,
    dir: &std::path::Path,
    pattern: &str,
    case_sensitive: bool,
) -> Result<Box<ToolOutput>, Box<ToolOutput>> {
    let real = ws.check(dir).map_err(|e| {
        Box::new(ToolOutput::error(
            ToolErrorKind::PathNotInWorkspace,
            e.to_string(),
            "Path not in workspace.",
        ))
    })?;
    if !real.exists() {
        let msg = format!("Search path does not exist {}", real.display());
        return Err(Box::new(ToolOutput::error(
            ToolErrorKind::SearchPathNotFound,
            msg.clone(),
            msg,
        )));
    }
    if !real.is_dir() {
        let msg = format!("Search path is not a directory: {}", real.display());
        return Err(Box::new(ToolOutput::error(
            ToolErrorKind::SearchPathNotADirectory,
            msg.clone(),
            msg,
        )));
    }
    let matcher = globset::GlobBuilder::new(pattern)
        .case_insensitive(!case_sensitive)
        .literal_separator(true)
        .build()
        .map_err(|e| {
            Box::new(ToolOutput::error(
                ToolErrorKind::GlobExecutionError,
                format!("Error during glob search operation: {e}"),
                "Error: An unexpected error occurred.",
            ))
        })?
        .compile_matcher();
    let mut found: Vec<(PathBuf, SystemTime)> = Vec::new();
    let walker = ignore::WalkBuilder::new(&real)
        .standard_filters(false)
        .follow_links(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    for entry in walker.flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(&real) else {
            continue;
        };
        if matcher.is_match(rel) {
            let mtime = entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            found.push((entry.path().to_path_buf(), mtime));
        }
    }
    let shown = real.display().to_string();
    if found.is_empty() {
        return Ok(Box::new(ToolOutput::text(
            format!("No files found matching pattern \"{pattern}\" within {shown}"),
            "No files found",
        )));
    }
    sort_entries(&mut found, SystemTime::now());
    let paths: Vec<String> = found.iter().map(|(p, _)| p.display().to_string()).collect();
    Ok(Box::new(ToolOutput::text(
        format!(
            "Found {} file(s) matching \"{pattern}\" within {shown}, sorted by modification time (newest first):\n{}",
            found.len(),
            paths.join("\n")
        ),
        format!("Found {} matching file(s)", found.len()),
    )))
}

/// Recently modified files first (newest first), then the rest by path.
pub fn sort_entries(entries: &mut [(PathBuf, SystemTime)], now: SystemTime) {
    let recent = |t: &SystemTime| now.duration_since(*t).map(|d| d < RECENT).unwrap_or(true);
    entries.sort_by(|(pa, ta), (pb, tb)| match (recent(ta), recent(tb)) {
        (true, true) => tb.cmp(ta),
        (true, false) => std::cmp::Ordering::Less,
        (false, true) => std::cmp::Ordering::Greater,
        (false, false) => locale_cmp(&pa.to_string_lossy(), &pb.to_string_lossy()),
    });
}
