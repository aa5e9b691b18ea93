//! `read_many_files`: the contents of every workspace file matching some paths or glob
//! patterns, concatenated with `--- path ---` separators, with gemini-cli's default
//! excludes, the project's ignore files, and a report of what was skipped and why.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use futures::future::BoxFuture;
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::file_reader::{process_open_file, LineWindow};
use super::file_walk::{glob_matcher, walk_files};
use super::{FileFilteringOptions, Services, Tool, ToolContext, Touched};
use crate::engine::file_kind;
use crate::platform::filesystem::{Confined, FsError, OpenMode};
use crate::platform::ignore_rules::IgnoreRules;
use crate::platform::workspace::Workspace;
use crate::protocol::content::Part;
use crate::protocol::{LlmContent, ToolErrorKind, ToolKind, ToolOutput};

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

const TERMINATOR: &str = "\n--- End of content ---";
const NOTHING_FOUND: &str = "No files matching the criteria were found or all were skipped.";

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

impl Tool for ReadManyFiles {
    type Params = Params;

    fn name(&self) -> &'static str {
        "read_many_files"
    }

    fn display_name(&self) -> &'static str {
        "ReadManyFiles"
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
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
                .run(move |ws| read_many(ws, &p, &cancel))
                .await;
            result.unwrap_or_else(|e| search_error(&e.to_string()))
        })
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

fn glob_set(patterns: &[String]) -> Result<GlobSet, String> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let pattern = pattern.trim_end_matches('/');
        let glob = GlobBuilder::new(pattern)
            .case_insensitive(true)
            .literal_separator(true)
            .build()
            .map_err(|e| e.to_string())?;
        builder.add(glob);
        // A directory pattern (`temp/`, `**/dist`) also covers what is inside.
        if !pattern.ends_with("**") {
            let inner = GlobBuilder::new(&format!("{pattern}/**"))
                .case_insensitive(true)
                .literal_separator(true)
                .build()
                .map_err(|e| e.to_string())?;
            builder.add(inner);
        }
    }
    builder.build().map_err(|e| e.to_string())
}

/// The include patterns for one root: existing files literally, existing directories
/// as everything below them, anything else as a glob.
fn include_matchers(root: &Path, include: &[String]) -> Result<Vec<globset::GlobMatcher>, String> {
    let mut out = Vec::new();
    for raw in include {
        let normalized = raw.replace('\\', "/");
        let normalized = normalized.strip_prefix("./").unwrap_or(&normalized);
        let full = root.join(normalized);
        let pattern = if full.is_file() {
            globset::escape(normalized)
        } else if full.is_dir() {
            format!("{}/**", globset::escape(normalized.trim_end_matches('/')))
        } else {
            normalized.to_string()
        };
        out.push(glob_matcher(&pattern, false)?);
    }
    Ok(out)
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
    match gather(ws, p, cancel) {
        Ok(g) => render(ws, g.text, g.media, &g.read, &g.skipped),
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
    gather(ws, &params, cancel)
}

fn gather(ws: &Confined, p: &Params, cancel: &CancellationToken) -> Result<Gathered, String> {
    let mut excludes: Vec<String> = Vec::new();
    if p.use_default_excludes {
        excludes.extend(DEFAULT_EXCLUDES.iter().map(|s| s.to_string()));
    }
    excludes.extend(p.exclude.iter().cloned());
    let exclude_set = glob_set(&excludes)?;
    let options = p.file_filtering_options.unwrap_or_default().resolve();
    let mut rules = IgnoreRules::new(options);
    let mut skipped: Vec<Skipped> = Vec::new();
    let mut files: BTreeSet<PathBuf> = BTreeSet::new();
    let mut ignored = 0usize;
    for root in &ws.roots() {
        let matchers = include_matchers(root, &p.include)?;
        let Some(walked) = walk_files(root, Some(cancel)) else {
            return Err("the search was cancelled".into());
        };
        for file in walked {
            if !matchers.iter().any(|m| m.is_match(&file.rel)) || exclude_set.is_match(&file.rel) {
                continue;
            }
            if rules.is_ignored(root, &file.path, false) {
                ignored += 1;
                continue;
            }
            files.insert(file.path);
        }
    }
    if ignored > 0 {
        skipped.push(Skipped {
            path: format!("{ignored} file(s)"),
            reason: "ignored by project ignore files".into(),
        });
    }
    let mut text = String::new();
    let mut texts: Vec<(PathBuf, String)> = Vec::new();
    let mut media: Vec<Part> = Vec::new();
    let mut read: Vec<String> = Vec::new();
    for path in &files {
        let rel = ws.display_relative(path);
        // Opened once, beneath its root: what is checked is what is read.
        let opened = match ws.open(path, OpenMode::Read) {
            Ok(opened) => opened,
            Err(FsError::Path(_)) => {
                skipped.push(Skipped {
                    path: path.display().to_string(),
                    reason: "Security: Path not in workspace".into(),
                });
                continue;
            }
            Err(e) => {
                skipped.push(Skipped {
                    path: rel,
                    reason: format!("Read error: {e}"),
                });
                continue;
            }
        };
        let head = read_head(&opened.file);
        let kind = file_kind::detect(path, &head);
        if kind.is_media() && !explicitly_requested(path, &p.include) {
            skipped.push(Skipped {
                path: rel,
                reason:
                    "asset file (image/pdf/audio) was not explicitly requested by name or extension"
                        .into(),
            });
            continue;
        }
        let processed =
            process_open_file(&opened.real_path, &rel, LineWindow::Default, opened.file);
        if let Some(error) = &processed.output.error {
            skipped.push(Skipped {
                path: rel,
                reason: format!("Read error: {}", error.message),
            });
            continue;
        }
        match processed.output.llm_content {
            LlmContent::Text(content) => {
                let mut block = format!("--- {} ---\n\n", path.display());
                if processed.truncated {
                    block.push_str("[WARNING: This file was truncated. To view the full content, use the 'read_file' tool on this specific file.]\n\n");
                }
                block.push_str(&content);
                block.push_str("\n\n");
                let file_text = content;
                if text.len() + block.len() > MAX_TOTAL_BYTES {
                    skipped.push(Skipped {
                        path: rel,
                        reason: format!(
                            "total size limit of {} MB for one call reached",
                            MAX_TOTAL_BYTES / (1024 * 1024)
                        ),
                    });
                    continue;
                }
                text.push_str(&block);
                texts.push((path.clone(), file_text));
            }
            LlmContent::Parts(parts) => media.extend(parts),
        }
        read.push(rel);
    }
    Ok(Gathered {
        text,
        files: texts,
        media,
        read,
        skipped,
    })
}

/// The first 4 KiB, read at offset 0 without moving the file's position.
fn read_head(file: &std::fs::File) -> Vec<u8> {
    use std::os::unix::fs::FileExt;
    let mut head = vec![0u8; 4096];
    let n = file.read_at(&mut head, 0).unwrap_or(0);
    head.truncate(n);
    head
}

/// A media file is read only when a pattern names its extension or its name.
fn explicitly_requested(path: &Path, include: &[String]) -> bool {
    let ext = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy().to_lowercase()))
        .unwrap_or_default();
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    include.iter().any(|pattern| {
        (!ext.is_empty() && pattern.to_lowercase().contains(&ext))
            || (!stem.is_empty() && pattern.contains(&stem))
    })
}

fn render(
    ws: &Workspace,
    mut text: String,
    media: Vec<Part>,
    read: &[String],
    skipped: &[Skipped],
) -> ToolOutput {
    if read.is_empty() {
        text = NOTHING_FOUND.to_string();
    } else {
        text.push_str(TERMINATOR);
    }
    if !skipped.is_empty() {
        text.push_str(&format!("\n\nSkipped {} item(s):\n", skipped.len()));
        let lines: Vec<String> = skipped
            .iter()
            .map(|s| format!("- {} (Reason: {})", s.path, s.reason))
            .collect();
        text.push_str(&lines.join("\n"));
    }
    let mut display = format!(
        "### ReadManyFiles Result (Target Dir: `{}`)\n\n",
        ws.primary().display()
    );
    if !read.is_empty() {
        display.push_str(&format!(
            "Successfully read and concatenated content from **{} file(s)**.\n",
            read.len()
        ));
        let shown = read.len().min(10);
        if read.len() <= 10 {
            display.push_str("\n**Processed Files:**\n");
        } else {
            display.push_str("\n**Processed Files (first 10 shown):**\n");
        }
        for rel in &read[..shown] {
            display.push_str(&format!("- `{rel}`\n"));
        }
        if read.len() > 10 {
            display.push_str(&format!("- ...and {} more.\n", read.len() - 10));
        }
    }
    if read.is_empty() {
        display.push_str("No files were read and concatenated based on the criteria.\n");
    }
    if !skipped.is_empty() {
        if skipped.len() <= 5 {
            display.push_str(&format!("\n**Skipped {} item(s):**\n", skipped.len()));
        } else {
            display.push_str(&format!(
                "\n**Skipped {} item(s) (first 5 shown):**\n",
                skipped.len()
            ));
        }
        for s in skipped.iter().take(5) {
            display.push_str(&format!("- `{}` (Reason: {})\n", s.path, s.reason));
        }
        if skipped.len() > 5 {
            display.push_str(&format!("- ...and {} more.\n", skipped.len() - 5));
        }
    }
    let llm_content = if media.is_empty() {
        LlmContent::Text(text)
    } else {
        let mut parts = vec![Part::text(text)];
        parts.extend(media);
        LlmContent::Parts(parts)
    };
    ToolOutput {
        llm_content,
        display: display.trim().to_string(),
        error: None,
        data: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
