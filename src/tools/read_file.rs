//! `read_file`: one file for the model — a window of a text file's lines with
//! gemini-cli's truncation notice, images/PDF/audio/video as inline data, SVG as
//! text, binary files reported rather than dumped. Ignored files are refused.

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

use super::file_reader::{not_found, process_open_file_with, read_failure, LineWindow};
use super::{Services, Tool, ToolContext, Touched};
use crate::engine::file_kind;
use crate::platform::filesystem::{Confined, FsError, FsWork, OpenMode};
use crate::platform::ignore_rules::{FilterOptions, IgnoreRules};
use crate::platform::workspace::PathError;
use crate::protocol::{ToolErrorKind, ToolKind, ToolOutput};

pub use super::file_reader::{split_lines, MAX_LINES, MAX_LINE_LENGTH};

/// The `read_file` tool.
pub struct ReadFile;

#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    pub file_path: String,
    #[serde(default)]
    pub start_line: Option<usize>,
    #[serde(default)]
    pub end_line: Option<usize>,
    /// Seed-document generation: 0-based first line.
    #[serde(default)]
    pub offset: Option<usize>,
    /// Seed-document generation: number of lines.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// The name the model calls.
pub const NAME: &str = "read_file";

impl Tool for ReadFile {
    type Params = Params;

    fn name(&self) -> &'static str {
        NAME
    }

    fn display_name(&self) -> &'static str {
        "ReadFile"
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
        "Returns the content of one file of the workspace. Text files longer than 2000 \
         lines (or with very long lines) come back shortened, with a note saying so and \
         telling you which 'start_line'/'end_line' values read the next part; use those \
         two parameters to read any window of lines. Images (PNG, JPG, GIF, WEBP, SVG, \
         BMP), PDF files and audio (MP3, WAV, AIFF, AAC, OGG, FLAC) are handed to you \
         as media; other binary files are reported, not shown."
            .to_string()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Path of the file to read: absolute, or relative to the workspace root."},
                "start_line": {"type": "integer", "minimum": 1, "description": "Optional: first line to return, counting from 1."},
                "end_line": {"type": "integer", "minimum": 1, "description": "Optional: last line to return (inclusive), counting from 1."}
            },
            "required": ["file_path"]
        })
    }

    fn aliases(&self) -> &'static [(&'static str, &'static str)] {
        &[("absolute_path", "file_path"), ("path", "file_path")]
    }

    fn validate(&self, p: &Params, _: &Services) -> Result<(), String> {
        if p.file_path.trim().is_empty() {
            return Err("The 'file_path' parameter must be non-empty.".into());
        }
        if let (Some(s), Some(e)) = (p.start_line, p.end_line) {
            if s > e {
                return Err("start_line cannot be greater than end_line".into());
            }
        }
        Ok(())
    }

    fn touched(&self, p: &Params, services: &Services) -> Touched {
        Touched {
            reads: vec![services.workspace.resolve(&p.file_path)],
            writes: vec![],
        }
    }

    fn execute(&self, p: Params, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let window = window_of(&p);
            let raw = p.file_path.clone();
            let result = ctx.services.fs.perform(ReadForModel { raw, window }).await;
            let result = match result {
                // A client editor's buffer wins over the disk (checks done above).
                // Boxed: only a session with an editor needs this state in flight.
                Ok(out) if ctx.services.fs.reading_editor().is_some() => Ok(Box::pin(
                    editor_text_for_model(&ctx.services, &p.file_path, window, out),
                )
                .await),
                other => other,
            };
            let ledger = &ctx.services.ledger;
            if ledger.is_active() && matches!(&result, Ok(out) if out.error.is_none()) {
                let key = ctx.services.workspace.resolve(&p.file_path);
                ledger.note_read(&ctx.services.author, &key);
            }
            result.unwrap_or_else(|e| {
                ToolOutput::error(
                    ToolErrorKind::ReadContentFailure,
                    format!("Error reading file {}: {e}", p.file_path),
                    format!("Error reading file {}: {e}", p.file_path),
                )
            })
        })
    }
}

/// The window the parameters ask for: 0.61's 1-based lines win over the seed
/// documents' offset/limit.
fn window_of(p: &Params) -> LineWindow {
    if p.start_line.is_some() || p.end_line.is_some() {
        LineWindow::Lines {
            start: p.start_line,
            end: p.end_line,
        }
    } else if p.offset.is_some() || p.limit.is_some() {
        LineWindow::OffsetLimit {
            offset: p.offset,
            limit: p.limit,
        }
    } else {
        LineWindow::Default
    }
}

/// One `read_file` call's read, on the FileSystem pool: [`read_for_model`].
struct ReadForModel {
    raw: String,
    window: LineWindow,
}

impl FsWork for ReadForModel {
    type Output = ToolOutput;
    fn perform(self, confined: &Confined) -> ToolOutput {
        read_for_model(confined, &self.raw, self.window)
    }
}

/// Resolves, checks (workspace, ignore files) and reads one file; runs on the pool.
/// The file is opened once, beneath its workspace root, and what is read is what
/// was checked: a failed open is an answer, never a reason to open again by name.
pub fn read_for_model(confined: &Confined, raw: &str, window: LineWindow) -> ToolOutput {
    let path = confined.resolve_defensive(raw);
    let opened = match confined.open(&path, OpenMode::Read) {
        Ok(opened) => opened,
        Err(FsError::Path(e)) => return path_error(e),
        Err(FsError::NotFound(p)) => return not_found(&p).output,
        Err(e) => {
            let msg = format!("Error reading file {}: {e}", path.display());
            return ToolOutput::error(ToolErrorKind::ReadContentFailure, msg.clone(), msg);
        }
    };
    let real = opened.real_path;
    // One `fstat` serves the ignore check and the read.
    let meta = match opened.file.metadata() {
        Ok(meta) => meta,
        Err(e) => return read_failure(&confined.display_relative(&real), &e.to_string()).output,
    };
    let is_dir = meta.is_dir();
    if let Some(root) = confined.root_of(&real) {
        if is_ignored_cached(&root, &real, is_dir) {
            let msg = format!(
                "File path '{}' is ignored by configured ignore patterns.",
                real.display()
            );
            return ToolOutput::error(ToolErrorKind::InvalidToolParams, msg.clone(), msg);
        }
    }
    let rel = confined.display_relative(&real);
    process_open_file_with(&real, &rel, window, opened.file, &meta).output
}

thread_local! {
    /// Parsed ignore files, per FileSystem pool thread, reused for a short while so a
    /// batch of reads parses each directory's ignore files once, not once per call.
    static READ_IGNORE_RULES: std::cell::RefCell<Option<(std::time::Instant, IgnoreRules)>> =
        const { std::cell::RefCell::new(None) };
}

/// How long parsed ignore files are reused before they are read again.
const IGNORE_RULES_TTL: std::time::Duration = std::time::Duration::from_secs(2);

fn is_ignored_cached(root: &std::path::Path, real: &std::path::Path, is_dir: bool) -> bool {
    READ_IGNORE_RULES.with(|cell| {
        let mut cache = cell.borrow_mut();
        if cache
            .as_ref()
            .is_none_or(|(at, _)| at.elapsed() > IGNORE_RULES_TTL)
        {
            *cache = Some((
                std::time::Instant::now(),
                IgnoreRules::new(FilterOptions::default()),
            ));
        }
        match cache.as_mut() {
            Some((_, rules)) => rules.is_ignored(root, real, is_dir),
            None => false,
        }
    })
}

/// The model-facing error of a path the workspace refused.
pub fn path_error(e: PathError) -> ToolOutput {
    match e {
        // gemini-cli refuses these while validating the parameters.
        PathError::OutsideWorkspace { .. } | PathError::Invalid(_) => ToolOutput::error(
            ToolErrorKind::InvalidToolParams,
            e.to_string(),
            "Path not in workspace.",
        ),
        PathError::SymlinkLoop(_) | PathError::Unresolvable(_) => {
            let msg = match &e {
                PathError::SymlinkLoop(_) => format!("Failed to resolve path: {e}"),
                _ => e.to_string(),
            };
            ToolOutput::error(ToolErrorKind::InvalidToolParams, msg.clone(), msg)
        }
    }
}

/// A content sniff for binary files (see [`file_kind::looks_binary`]).
pub fn looks_binary(bytes: &[u8]) -> bool {
    file_kind::looks_binary(bytes)
}

/// BOM-aware decoding (see [`file_kind::decode_text`]).
pub fn decode_text(bytes: &[u8]) -> String {
    file_kind::decode_text(bytes)
}

/// `read_file`'s output with the editor's text in place of the disk's: only for a
/// text file the disk read accepted (workspace, ignore rules and file kind checked).
async fn editor_text_for_model(
    services: &crate::tools::Services,
    raw: &str,
    window: crate::tools::file_reader::LineWindow,
    disk: crate::protocol::ToolOutput,
) -> crate::protocol::ToolOutput {
    let is_text =
        disk.error.is_none() && matches!(disk.llm_content, crate::protocol::LlmContent::Text(_));
    if !is_text {
        return disk;
    }
    let path = services.workspace.resolve_defensive(raw);
    match services.fs.read(path).await {
        Ok(read) => match String::from_utf8(read.bytes) {
            Ok(text) => {
                let rel = services.workspace.display_relative(&read.real_path);
                crate::tools::file_reader::render_text(&text, window, &rel).output
            }
            Err(_) => disk,
        },
        Err(_) => disk,
    }
}
