//! `list_directory`: the entries of one directory, directories first, with sizes.

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

use std::path::Path;

use super::{FileFilteringOptions, Services, Tool, ToolContext, Touched};
use crate::engine::text::locale_cmp;
use crate::platform::filesystem::{list_confined, stat_confined, Confined, FsError, FsWork};
use crate::platform::ignore_rules::{FilterOptions, IgnoreRules};
use crate::protocol::{ToolErrorKind, ToolKind, ToolOutput};

/// The `list_directory` tool.
pub struct ListDirectory;

#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    pub dir_path: String,
    #[serde(default)]
    pub ignore: Vec<String>,
    #[serde(default)]
    pub file_filtering_options: Option<FileFilteringOptions>,
}

/// The name the model calls.
pub const NAME: &str = "list_directory";

impl Tool for ListDirectory {
    type Params = Params;

    fn name(&self) -> &'static str {
        NAME
    }

    fn display_name(&self) -> &'static str {
        "ReadFolder"
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
        "Shows what a directory directly contains: subdirectories first, then files with \
         their sizes in bytes. Entries hidden by the project's ignore files are counted, \
         and further entries can be dropped with 'ignore' glob patterns."
            .to_string()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "dir_path": {"type": "string", "description": "Directory whose entries to list: absolute, or relative to the workspace root."},
                "ignore": {"type": "array", "items": {"type": "string"}, "description": "Glob patterns (matched against entry names) of entries to leave out."},
                "file_filtering_options": {
                    "type": "object",
                    "description": "Optional: whether the project's ignore files hide entries.",
                    "properties": {
                        "respect_git_ignore": {"type": "boolean", "description": "Optional: hide entries matched by .gitignore (inside git repositories). Defaults to true."},
                        "respect_gemini_ignore": {"type": "boolean", "description": "Optional: hide entries matched by .geminiignore / .troupeignore. Defaults to true."}
                    }
                }
            },
            "required": ["dir_path"]
        })
    }

    fn aliases(&self) -> &'static [(&'static str, &'static str)] {
        &[("path", "dir_path")]
    }

    fn touched(&self, p: &Params, services: &Services) -> Touched {
        Touched {
            reads: vec![services.workspace.resolve(&p.dir_path)],
            writes: vec![],
        }
    }

    fn execute(&self, p: Params, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let dir = ctx.services.workspace.resolve(&p.dir_path);
            let options = p.file_filtering_options.unwrap_or_default().resolve();
            let ignore = p.ignore.clone();
            let listing = Listing {
                dir,
                ignore,
                options,
            };
            let result = ctx.services.fs.perform(listing).await;
            result.unwrap_or_else(|e| {
                ToolOutput::error(
                    ToolErrorKind::LsExecutionError,
                    format!("Error listing directory: {e}"),
                    "Error: Failed to list directory.",
                )
            })
        })
    }
}

/// One `list_directory` call, on the FileSystem pool beneath the workspace roots.
struct Listing {
    dir: std::path::PathBuf,
    ignore: Vec<String>,
    options: FilterOptions,
}

impl FsWork for Listing {
    type Output = ToolOutput;
    fn perform(self, ws: &Confined) -> ToolOutput {
        list(ws, &self.dir, &self.ignore, self.options)
    }
}

/// One entry kept for the listing.
struct Entry {
    name: String,
    is_dir: bool,
    size: u64,
}

/// Lists `dir` (on the pool): ignore files first (counted), then `ignore` globs.
fn list(ws: &Confined, dir: &Path, ignore: &[String], options: FilterOptions) -> ToolOutput {
    let shown = dir.display().to_string();
    let failed = |e: FsError, call: &str| {
        let detail = match e {
            FsError::NotFound(_) => format!("ENOENT: no such file or directory, {call} '{shown}'"),
            FsError::PermissionDenied(_) => format!("EACCES: permission denied, {call} '{shown}'"),
            other => format!("{other}, {call} '{shown}'"),
        };
        ToolOutput::error(
            ToolErrorKind::LsExecutionError,
            format!("Error listing directory: {detail}"),
            "Error: Failed to list directory.",
        )
    };
    // Opened beneath its root: a path outside is refused before anything is opened.
    let meta = match stat_confined(ws, dir) {
        Ok(meta) if meta.exists => meta,
        Ok(meta) => return failed(FsError::NotFound(meta.real_path), "stat"),
        Err(FsError::Path(e)) => {
            return ToolOutput::error(
                ToolErrorKind::PathNotInWorkspace,
                e.to_string(),
                "Path not in workspace.",
            )
        }
        Err(e) => return failed(e, "stat"),
    };
    let real = meta.real_path;
    if !meta.is_dir {
        return ToolOutput::error(
            ToolErrorKind::PathIsNotADirectory,
            format!("Error: Path is not a directory: {shown}"),
            "Error: Path is not a directory.",
        );
    }
    let entries = match list_confined(ws, &real) {
        Ok(entries) => entries,
        Err(e) => return failed(e, "scandir"),
    };
    if entries.is_empty() {
        return ToolOutput::text(
            format!("Directory {shown} is empty."),
            "Directory is empty.",
        );
    }
    let patterns: Vec<regex::Regex> = ignore.iter().filter_map(|g| glob_to_regex(g)).collect();
    let root = ws.root_of(&real);
    let mut rules = IgnoreRules::new(options);
    let mut ignored = 0usize;
    let mut kept = Vec::new();
    // Entries whose stat fails (dangling links, links leading out, races) are already
    // left out, as gemini-cli does.
    for entry in entries {
        let (name, path) = (entry.name, entry.path);
        let is_ignored = match &root {
            Some(root) => rules.is_ignored(root, &path, entry.is_dir),
            None => name == ".git",
        };
        if is_ignored {
            ignored += 1;
            continue;
        }
        // Entries the workspace refuses (.git, .env, node_modules, links leading out)
        // are dropped without being counted, as gemini-cli does.
        if ws.check_real(&path, path.clone()).is_err()
            || patterns.iter().any(|re| re.is_match(&name))
        {
            continue;
        }
        kept.push(Entry {
            name,
            is_dir: entry.is_dir,
            size: entry.size,
        });
    }
    kept.sort_by(|a, b| {
        b.is_dir
            .cmp(&a.is_dir)
            .then_with(|| locale_cmp(&a.name, &b.name))
    });
    let lines: Vec<String> = kept
        .iter()
        .map(|e| {
            if e.is_dir {
                format!("[DIR] {}", e.name)
            } else {
                format!("{} ({} bytes)", e.name, e.size)
            }
        })
        .collect();
    let mut llm = format!("Directory listing for {shown}:\n{}", lines.join("\n"));
    let mut summary = format!("Found {} item(s).", kept.len());
    if ignored > 0 {
        llm.push_str(&format!("\n\n({ignored} ignored)"));
        summary.push_str(&format!(" ({ignored} ignored)"));
    }
    ToolOutput::text(llm, summary)
}

/// Node's wording of a failed system call, which gemini-cli passes on.
/// gemini-cli's basename glob: `*` and `?` only, anchored.
fn glob_to_regex(glob: &str) -> Option<regex::Regex> {
    let mut re = String::from("^");
    for c in glob.chars() {
        match c {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            c => re.push_str(&regex::escape(&c.to_string())),
        }
    }
    re.push('$');
    regex::Regex::new(&re).ok()
}
