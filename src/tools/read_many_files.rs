//! `read_many_files`: the contents of every workspace file matching some paths or glob
//! patterns, concatenated with `--- path ---` separators, with gemini-cli's default
//! excludes, the project's ignore files, and a report of what was skipped and why.

mod gather;
mod render;

use std::path::PathBuf;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::{FileFilteringOptions, Services, Tool, ToolContext, Touched};
use crate::platform::filesystem::{Confined, FsWork};
use crate::protocol::content::Part;
use crate::protocol::{ToolErrorKind, ToolKind, ToolOutput};

/// Excluded unless `useDefaultExcludes` is false (gemini-cli's `DEFAULT_FILE_EXCLUDES`).
pub const DEFAULT_EXCLUDES: &[&str] = &[
    "**/node_modules/**",
    "**/.git/**",
    "**/bower_components/**",
    "**/.svn/**",
    "**/.hg/**",
    "**/.vscode/**",
    "**/.idea/**",
    "**/dist/**",
    "**/build/**",
    "**/coverage/**",
    "**/__pycache__/**",
    "**/*.bin",
    "**/*.exe",
    "**/*.dll",
    "**/*.so",
    "**/*.dylib",
    "**/*.class",
    "**/*.jar",
    "**/*.war",
    "**/*.zip",
    "**/*.tar",
    "**/*.gz",
    "**/*.bz2",
    "**/*.rar",
    "**/*.7z",
    "**/*.pak",
    "**/*.rpa",
    "**/*.doc",
    "**/*.docx",
    "**/*.xls",
    "**/*.xlsx",
    "**/*.ppt",
    "**/*.pptx",
    "**/*.odt",
    "**/*.ods",
    "**/*.odp",
    "**/*.pyc",
    "**/*.pyo",
    "**/.DS_Store",
    "**/.env",
    "**/GEMINI.md",
];

/// The most text (in bytes) one call returns; files beyond it are skipped.
pub const MAX_TOTAL_BYTES: usize = 10 * 1024 * 1024;

/// The `read_many_files` tool.
pub struct ReadManyFiles;

fn default_true() -> bool {
    true
}

#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    pub include: Vec<String>,
    #[serde(default)]
    pub exclude: Vec<String>,
    #[serde(default = "default_true")]
    pub recursive: bool,
    #[serde(default = "default_true", rename = "useDefaultExcludes")]
    pub use_default_excludes: bool,
    #[serde(default)]
    pub file_filtering_options: Option<FileFilteringOptions>,
}

/// The name the model calls.
pub const NAME: &str = "read_many_files";

impl Tool for ReadManyFiles {
    type Params = Params;

    fn name(&self) -> &'static str {
        NAME
    }

    fn display_name(&self) -> &'static str {
        "ReadManyFiles"
    }

    /// gemini-cli 0.61 writes this core tool's declaration out per model family, without
    /// `wait_for_previous` (a call may still set it).
    fn declares_wait_for_previous(&self) -> bool {
        false
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn answer_depends_on_files_only(&self) -> bool {
        true
    }

    fn description(&self) -> String {
        "Returns the contents of several workspace files at once, chosen by paths or glob \
         patterns relative to the workspace (e.g. ['src/**/*.rs', 'README.md', 'docs/']). \
         Text files are joined, each introduced by a '--- <path> ---' line, and the whole \
         ends with '--- End of content ---'. Images, audio and PDF files are included only \
         when their name or extension is asked for explicitly; other binary files, \
         dependency and build directories and files hidden by the project's ignore files \
         are skipped, and the result lists what was skipped and why. Prefer read_file for \
         a single file."
            .to_string()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "include": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}, "description": "Paths or glob patterns of the files to read, relative to the workspace, e.g. [\"src/**/*.rs\"] or [\"README.md\", \"docs/\"]."},
                "exclude": {"type": "array", "items": {"type": "string", "minLength": 1}, "default": [], "description": "Optional: glob patterns of files or directories to leave out, on top of the default excludes, e.g. \"**/*.log\"."},
                "recursive": {"type": "boolean", "default": true, "description": "Optional: search subdirectories ('**' in a pattern does this explicitly). Defaults to true."},
                "useDefaultExcludes": {"type": "boolean", "default": true, "description": "Optional: leave out dependency/build directories and binary file types by default. Defaults to true."},
                "file_filtering_options": {
                    "type": "object",
                    "description": "Whether the project's ignore files hide files.",
                    "properties": {
                        "respect_git_ignore": {"type": "boolean", "description": "Optional: leave out files matched by .gitignore (inside git repositories). Defaults to true."},
                        "respect_gemini_ignore": {"type": "boolean", "description": "Optional: leave out files matched by .geminiignore / .troupeignore. Defaults to true."}
                    }
                }
            },
            "required": ["include"]
        })
    }

    fn aliases(&self) -> &'static [(&'static str, &'static str)] {
        &[
            ("paths", "include"),
            ("use_default_excludes", "useDefaultExcludes"),
        ]
    }

    fn touched(&self, _: &Params, services: &Services) -> Touched {
        Touched {
            reads: services.workspace.roots().to_vec(),
            writes: vec![],
        }
    }

    fn execute(&self, p: Params, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let cancel = ctx.cancel.clone();
            let result = ctx
                .services
                .fs
                .perform(ReadMany { params: p, cancel })
                .await;
            result.unwrap_or_else(|e| search_error(&e.to_string()))
        })
    }
}

/// One `read_many_files` call, on the FileSystem pool beneath the workspace roots.
struct ReadMany {
    params: Params,
    cancel: CancellationToken,
}

impl FsWork for ReadMany {
    type Output = ToolOutput;
    fn perform(self, ws: &Confined) -> ToolOutput {
        read_many(ws, &self.params, &self.cancel)
    }
}

fn search_error(message: &str) -> ToolOutput {
    ToolOutput::error(
        ToolErrorKind::ReadManyFilesSearchError,
        format!("Error during file search: {message}"),
        format!("Error: {message}"),
    )
}

/// Something left out, and why.
struct Skipped {
    path: String,
    reason: String,
}

/// What a `read_many_files` search gathered, before it is rendered.
pub struct Gathered {
    text: String,
    /// Each text file read: its absolute path and content (as the model gets it).
    pub files: Vec<(PathBuf, String)>,
    /// Images, PDFs and audio asked for by name, as inline data.
    pub media: Vec<Part>,
    read: Vec<String>,
    skipped: Vec<Skipped>,
}

impl Gathered {
    /// `path (reason)` for each item left out.
    pub fn skipped(&self) -> Vec<String> {
        self.skipped
            .iter()
            .map(|s| format!("{} ({})", s.path, s.reason))
            .collect()
    }
}

/// Finds, filters and reads the files (on the pool).
fn read_many(ws: &Confined, p: &Params, cancel: &CancellationToken) -> ToolOutput {
    match gather::gather(ws, p, cancel) {
        Ok(g) => render::render(ws, g.text, g.media, &g.read, &g.skipped),
        Err(e) => search_error(&e),
    }
}

/// Reads `include` (paths or globs relative to a root) with the default excludes and
/// the project's ignore files, as `read_many_files` does; for `@path` references.
pub fn gather_for_references(
    ws: &Confined,
    include: Vec<String>,
    cancel: &CancellationToken,
) -> Result<Gathered, String> {
    let params = Params {
        include,
        exclude: Vec::new(),
        recursive: true,
        use_default_excludes: true,
        file_filtering_options: None,
    };
    gather::gather(ws, &params, cancel)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::workspace::Workspace;
    use crate::protocol::LlmContent;

    fn params(include: &[&str]) -> Params {
        Params {
            include: include.iter().map(|s| s.to_string()).collect(),
            exclude: Vec::new(),
            recursive: true,
            use_default_excludes: true,
            file_filtering_options: None,
        }
    }

    fn text(out: &ToolOutput) -> &str {
        match &out.llm_content {
            LlmContent::Text(t) => t,
            LlmContent::Parts(_) => panic!("parts"),
        }
    }

    #[test]
    fn total_size_cap_skips_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let line = format!("{}\n", "y".repeat(1999));
        let body = line.repeat(1500); // ~3 MB shown per file
        for name in ["a.txt", "b.txt", "c.txt", "d.txt"] {
            std::fs::write(dir.path().join(name), &body).unwrap();
        }
        let ws = Confined::new(std::sync::Arc::new(
            Workspace::new(dir.path(), &[]).unwrap(),
        ))
        .unwrap();
        let out = read_many(&ws, &params(&["*.txt"]), &CancellationToken::new());
        let t = text(&out);
        let separator = format!("--- {}/", ws.primary().display());
        assert_eq!(t.matches(&separator).count(), 3);
        assert!(t.contains("\n--- End of content ---"));
        assert!(t.contains(
            "Skipped 1 item(s):\n- d.txt (Reason: total size limit of 10 MB for one call reached)"
        ));
        assert!(out.display.contains("**Skipped 1 item(s):**"));
        assert!(out
            .display
            .contains("Successfully read and concatenated content from **3 file(s)**."));
    }

    #[test]
    fn truncated_files_carry_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let body: String = (0..2500).map(|i| format!("{i}\n")).collect();
        std::fs::write(dir.path().join("long.txt"), body).unwrap();
        let ws = Confined::new(std::sync::Arc::new(
            Workspace::new(dir.path(), &[]).unwrap(),
        ))
        .unwrap();
        let out = read_many(&ws, &params(&["long.txt"]), &CancellationToken::new());
        assert!(text(&out).contains("[WARNING: This file was truncated. To view the full content, use the 'read_file' tool on this specific file.]"));
    }
}
