//! `list_directory`: the entries of one directory, directories first, with sizes.

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{Services, Tool, ToolContext, Touched};
use crate::actors::filesystem::FsError;
use crate::engine::text::locale_cmp;
use crate::protocol::{ToolErrorKind, ToolKind, ToolOutput};

/// The `list_directory` tool.
pub struct ListDirectory;

#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    pub dir_path: String,
    #[serde(default)]
    pub ignore: Vec<String>,
}

impl Tool for ListDirectory {
    type Params = Params;

    fn name(&self) -> &'static str {
        "list_directory"
    }

    fn display_name(&self) -> &'static str {
        "ReadFolder"
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }

    fn description(&self) -> String {
        "Lists the files and subdirectories directly inside a directory of the workspace, \
         directories first, with file sizes. Entries can be left out with 'ignore' glob \
         patterns."
            .to_string()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "dir_path": {"type": "string", "description": "The directory to list, absolute or relative to the workspace root."},
                "ignore": {"type": "array", "items": {"type": "string"}, "description": "Optional glob patterns; matching entry names are left out."}
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
            let ws = &ctx.services.workspace;
            let dir = ws.resolve(&p.dir_path);
            let shown = dir.display().to_string();
            let entries = match ctx.services.fs.list_dir(dir.clone()).await {
                Ok(entries) => entries,
                Err(FsError::Path(e)) => {
                    return ToolOutput::error(
                        ToolErrorKind::PathNotInWorkspace,
                        e.to_string(),
                        "Path not in workspace.",
                    )
                }
                Err(FsError::NotDirectory(_)) => {
                    return ToolOutput::error(
                        ToolErrorKind::PathIsNotADirectory,
                        format!("Error: Path is not a directory: {shown}"),
                        "Error: Path is not a directory.",
                    )
                }
                Err(FsError::NotFound(_)) => {
                    return ToolOutput::error(
                        ToolErrorKind::LsExecutionError,
                        format!("Error listing directory: ENOENT: no such file or directory, stat '{shown}'"),
                        "Error: Failed to list directory.",
                    )
                }
                Err(e) => {
                    return ToolOutput::error(
                        ToolErrorKind::LsExecutionError,
                        format!("Error listing directory: {e}"),
                        "Error: Failed to list directory.",
                    )
                }
            };
            if entries.is_empty() {
                return ToolOutput::text(
                    format!("Directory {shown} is empty."),
                    "Directory is empty.",
                );
            }
            let patterns: Vec<regex::Regex> =
                p.ignore.iter().filter_map(|g| glob_to_regex(g)).collect();
            let mut ignored = 0usize;
            let mut kept: Vec<_> = entries
                .into_iter()
                .filter(|e| {
                    if e.name == ".git" {
                        ignored += 1;
                        return false;
                    }
                    !patterns.iter().any(|re| re.is_match(&e.name))
                })
                .collect();
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
        })
    }
}

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
