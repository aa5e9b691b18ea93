//! `glob`: files matching a glob pattern, recently modified first.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

use tokio_util::sync::CancellationToken;

use super::file_walk::{glob_matcher, literal_or_glob, walk_files};
use super::{Services, Tool, ToolContext};
use crate::engine::text::locale_cmp;
use crate::platform::filesystem::{stat_confined, Confined, FsError, FsWork, OpenMode};
use crate::platform::ignore_rules::{FilterOptions, IgnoreRules};
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
    #[serde(default)]
    pub respect_git_ignore: Option<bool>,
    #[serde(default)]
    pub respect_gemini_ignore: Option<bool>,
}

const RECENT: Duration = Duration::from_secs(24 * 3600);

/// Most paths one `glob` result lists; the rest are counted in a closing note (an
/// uncapped listing of 200,000 files was 7 MB sent to the model).
pub const MAX_LISTED: usize = 2000;

/// The name the model calls.
pub const NAME: &str = "glob";

impl Tool for Glob {
    type Params = Params;

    fn name(&self) -> &'static str {
        NAME
    }

    fn display_name(&self) -> &'static str {
        "FindFiles"
    }

    /// gemini-cli 0.61 writes this core tool's declaration out per model family, without
    /// `wait_for_previous` (a call may still set it).
    fn declares_wait_for_previous(&self) -> bool {
        false
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }

    fn answer_depends_on_files_only(&self) -> bool {
        true
    }

    fn description(&self) -> String {
        "Lists the files whose paths match a glob pattern such as 'src/**/*.rs' or \
         '*.md', as absolute paths. Files changed during the last day come first, newest \
         first, followed by the others in alphabetical order. A quick way to locate files \
         by name or directory layout in a big tree."
            .to_string()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob to match against paths, e.g. '**/*.py' or 'docs/*.md'."},
                "dir_path": {"type": "string", "description": "Optional: directory to search under; when left out, every workspace directory is searched."},
                "case_sensitive": {"type": "boolean", "description": "Optional: whether letter case must match. Defaults to false."},
                "respect_git_ignore": {"type": "boolean", "description": "Optional: leave out files matched by .gitignore (inside git repositories). Defaults to true."},
                "respect_gemini_ignore": {"type": "boolean", "description": "Optional: leave out files matched by .geminiignore / .troupeignore. Defaults to true."}
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
            let cancel = ctx.cancel.clone();
            let result = ctx
                .services
                .fs
                .perform(GlobSearch { params: p, cancel })
                .await;
            result.unwrap_or_else(|e| unexpected(&e.to_string()))
        })
    }
}

/// One `glob` call's search, on the FileSystem pool beneath the workspace roots.
struct GlobSearch {
    params: Params,
    cancel: CancellationToken,
}

impl FsWork for GlobSearch {
    type Output = ToolOutput;
    fn perform(self, ws: &Confined) -> ToolOutput {
        search(ws, &self.params, &self.cancel)
    }
}

fn unexpected(message: &str) -> ToolOutput {
    ToolOutput::error(
        ToolErrorKind::GlobExecutionError,
        format!("Error during glob search operation: {message}"),
        "Error: An unexpected error occurred.",
    )
}

/// Validates the directory, then matches every workspace file under it (on the pool).
fn search(ws: &Confined, p: &Params, cancel: &CancellationToken) -> ToolOutput {
    let dirs: Vec<PathBuf> = match &p.dir_path {
        Some(dir) => match checked_dir(ws, dir) {
            Ok(real) => vec![real],
            Err(out) => return *out,
        },
        None => ws.roots().to_vec(),
    };
    let options = FilterOptions {
        respect_git_ignore: p.respect_git_ignore.unwrap_or(true),
        respect_gemini_ignore: p.respect_gemini_ignore.unwrap_or(true),
    };
    let mut rules = IgnoreRules::new(options);
    let mut found: Vec<(PathBuf, SystemTime)> = Vec::new();
    let mut seen: HashSet<PathBuf> = HashSet::new();
    let mut ignored = 0usize;
    for dir in &dirs {
        let pattern = literal_or_glob(dir, &p.pattern);
        let matcher = match glob_matcher(&pattern, p.case_sensitive) {
            Ok(m) => m,
            Err(e) => return unexpected(&e),
        };
        let Some(files) = walk_files(dir, Some(cancel)) else {
            return unexpected("the search was cancelled");
        };
        let root = ws.root_of(dir).unwrap_or_else(|| dir.clone());
        for file in files {
            if !matcher.is_match(&file.rel) {
                continue;
            }
            if rules.is_ignored(&root, &file.path, false) {
                ignored += 1;
                continue;
            }
            // Each match is opened (a handle only) beneath its root: a directory
            // swapped for a link leading out during the walk makes this fail.
            let inside = ws
                .locate_lexically(&file.path)
                .is_some_and(|at| ws.open_located(&at, OpenMode::Handle).is_ok());
            if inside && seen.insert(file.path.clone()) {
                found.push((file.path, file.modified));
            }
        }
    }
    let place = match dirs.as_slice() {
        [one] => format!("within {}", one.display()),
        many => format!("across {} workspace directories", many.len()),
    };
    let pattern = &p.pattern;
    if found.is_empty() {
        let place = match dirs.as_slice() {
            [one] => format!("within {}", one.display()),
            many => format!("within {} workspace directories", many.len()),
        };
        let note = if ignored > 0 {
            format!(" ({ignored} files were ignored)")
        } else {
            String::new()
        };
        return ToolOutput::text(
            format!("No files found matching pattern \"{pattern}\" {place}{note}"),
            "No files found",
        );
    }
    sort_entries(&mut found, SystemTime::now());
    let paths: Vec<String> = found
        .iter()
        .take(MAX_LISTED)
        .map(|(p, _)| p.display().to_string())
        .collect();
    let note = if ignored > 0 {
        format!(" ({ignored} additional files were ignored)")
    } else {
        String::new()
    };
    let left_out = found.len().saturating_sub(MAX_LISTED);
    let tail = if left_out > 0 {
        format!("\n... and {left_out} more file(s) not listed (the first {MAX_LISTED} are shown): use a narrower pattern or dir_path to see them.")
    } else {
        String::new()
    };
    ToolOutput::text(
        format!(
            "Found {} file(s) matching \"{pattern}\" {place}{note}, sorted by modification time (newest first):\n{}{tail}",
            found.len(),
            paths.join("\n")
        ),
        format!("Found {} matching file(s)", found.len()),
    )
}

/// The real path of `dir_path` if it is a workspace directory, else the error result.
fn checked_dir(ws: &Confined, dir: &str) -> Result<PathBuf, Box<ToolOutput>> {
    let outside = |e: &dyn std::fmt::Display| {
        Box::new(ToolOutput::error(
            ToolErrorKind::PathNotInWorkspace,
            e.to_string(),
            "Path not in workspace.",
        ))
    };
    let meta = match stat_confined(ws, &ws.resolve(dir)) {
        Ok(meta) => meta,
        Err(FsError::Path(e)) => return Err(outside(&e)),
        Err(e) => return Err(Box::new(unexpected(&e.to_string()))),
    };
    let real = meta.real_path;
    if !meta.exists {
        let msg = format!("Search path does not exist {}", real.display());
        return Err(Box::new(ToolOutput::error(
            ToolErrorKind::SearchPathNotFound,
            msg.clone(),
            msg,
        )));
    }
    if !meta.is_dir {
        let msg = format!("Search path is not a directory: {}", real.display());
        return Err(Box::new(ToolOutput::error(
            ToolErrorKind::SearchPathNotADirectory,
            msg.clone(),
            msg,
        )));
    }
    Ok(real)
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
