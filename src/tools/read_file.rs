//! `read_file`: a text file's lines (a range of them on request), with gemini-cli's
//! truncation notice; binary files are reported, not dumped.

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{Services, Tool, ToolContext, Touched};
use crate::actors::filesystem::FsError;
use crate::engine::text::{utf16_len, utf16_prefix};
use crate::protocol::{ToolErrorKind, ToolKind, ToolOutput};

pub const MAX_LINES: usize = 2000;
pub const MAX_LINE_LENGTH: usize = 2000;

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

impl Tool for ReadFile {
    type Params = Params;

    fn name(&self) -> &'static str {
        "read_file"
    }

    fn display_name(&self) -> &'static str {
        "ReadFile"
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn description(&self) -> String {
        "Reads a file from the workspace and returns its text. For large files, read a \
         window with 'start_line' and 'end_line' (1-based, inclusive); by default the first \
         2000 lines are returned and the output says how to read on. Binary files are \
         reported rather than shown."
            .to_string()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "The path of the file to read, absolute or relative to the workspace root."},
                "start_line": {"type": "integer", "minimum": 1, "description": "Optional: the 1-based line to start reading from."},
                "end_line": {"type": "integer", "minimum": 1, "description": "Optional: the 1-based line to stop at (inclusive)."}
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
            let services = &ctx.services;
            let path = services.workspace.resolve(&p.file_path);
            let read = match services.fs.read(path.clone()).await {
                Ok(read) => read,
                Err(e) => return read_error(e),
            };
            let rel = services.workspace.display_relative(&read.real_path);
            if looks_binary(&read.bytes) {
                return ToolOutput::text(
                    format!("Cannot display content of binary file: {rel}"),
                    format!("Skipped binary file: {rel}"),
                );
            }
            let text = decode_text(&read.bytes);
            render_text(&text, &p, &rel)
        })
    }
}

/// The model-facing error of a failed read.
pub fn read_error(e: FsError) -> ToolOutput {
    match e {
        FsError::Path(p) => ToolOutput::error(
            ToolErrorKind::PathNotInWorkspace,
            p.to_string(),
            "Path not in workspace.",
        ),
        FsError::NotFound(p) => ToolOutput::error(
            ToolErrorKind::FileNotFound,
            format!("File not found: {}", p.display()),
            "File not found.",
        ),
        FsError::IsDirectory(p) => ToolOutput::error(
            ToolErrorKind::TargetIsDirectory,
            format!("Path is a directory, not a file: {}", p.display()),
            "Path is a directory.",
        ),
        other => ToolOutput::error(
            ToolErrorKind::ReadContentFailure,
            format!("Error reading file: {other}"),
            format!("Error reading file: {other}"),
        ),
    }
}

/// A NUL byte in the first 8 KiB (the usual heuristic; UTF-16 files carry a BOM and
/// are decoded before this matters).
pub fn looks_binary(bytes: &[u8]) -> bool {
    if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
        return false;
    }
    bytes.iter().take(8192).any(|&b| b == 0)
}

/// UTF-8 with the BOM stripped; invalid sequences replaced.
pub fn decode_text(bytes: &[u8]) -> String {
    let bytes = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]).unwrap_or(bytes);
    String::from_utf8_lossy(bytes).into_owned()
}

/// Splits like JavaScript's `split(/\r?\n/)`.
pub fn split_lines(text: &str) -> Vec<&str> {
    text.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect()
}

fn render_text(text: &str, p: &Params, rel: &str) -> ToolOutput {
    if text.is_empty() {
        return ToolOutput::text("", "");
    }
    let lines = split_lines(text);
    let total = lines.len();
    let legacy =
        p.start_line.is_none() && p.end_line.is_none() && (p.offset.is_some() || p.limit.is_some());
    let (start, end) = if legacy {
        let start = p.offset.unwrap_or(0).min(total);
        let end = p.limit.map_or(start + MAX_LINES, |l| start + l).min(total);
        (start, end)
    } else {
        let start = p.start_line.map_or(0, |s| s - 1).min(total);
        let end = match p.end_line {
            Some(e) => e.min(total),
            None => (start + MAX_LINES).min(total),
        };
        (start, end.max(start))
    };
    let mut cut = false;
    let selected: Vec<String> = lines[start..end]
        .iter()
        .map(|line| {
            if line.len() > MAX_LINE_LENGTH && utf16_len(line) > MAX_LINE_LENGTH {
                cut = true;
                format!("{}... [truncated]", utf16_prefix(line, MAX_LINE_LENGTH))
            } else {
                (*line).to_string()
            }
        })
        .collect();
    let content = selected.join("\n");
    let partial = start > 0 || end < total;
    let shortened = if cut {
        " (some lines were shortened)"
    } else {
        ""
    };
    let display = if partial {
        format!(
            "Read lines {}-{end} of {total} from {rel}{shortened}",
            start + 1
        )
    } else if cut {
        format!("Read all {total} lines from {rel}{shortened}")
    } else {
        String::new()
    };
    if !(partial || cut) {
        return ToolOutput::text(content, display);
    }
    let action = if legacy {
        format!("use the 'offset' and 'limit' parameters in a subsequent 'read_file' call. For example, to read the next section of the file, use offset: {end}.")
    } else {
        format!("use the 'start_line' and 'end_line' parameters in a subsequent 'read_file' call. For example, to read the next section of the file, use start_line: {}.", end + 1)
    };
    let llm = format!(
        "\nIMPORTANT: The file content has been truncated.\nStatus: Showing lines {}-{end} of {total} total lines.\nAction: To read more of the file, you can {action}\n\n--- FILE CONTENT (truncated) ---\n{content}",
        start + 1
    );
    ToolOutput::text(llm, display)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::LlmContent;

    fn params(start: Option<usize>, end: Option<usize>) -> Params {
        Params {
            file_path: "f".into(),
            start_line: start,
            end_line: end,
            offset: None,
            limit: None,
        }
    }

    fn llm(out: &ToolOutput) -> &str {
        match &out.llm_content {
            LlmContent::Text(t) => t,
            LlmContent::Parts(_) => panic!("parts"),
        }
    }

    #[test]
    fn whole_small_file_is_plain() {
        let out = render_text("a\r\nb\n", &params(None, None), "f");
        assert_eq!(llm(&out), "a\nb\n");
        assert_eq!(out.display, "");
    }

    #[test]
    fn range_has_truncation_notice() {
        let text: String = (1..=10).map(|i| format!("l{i}\n")).collect();
        let out = render_text(&text, &params(Some(3), Some(4)), "f");
        assert!(llm(&out).contains("Status: Showing lines 3-4 of 11 total lines."));
        assert!(llm(&out).contains("use start_line: 5."));
        assert!(llm(&out).ends_with("l3\nl4"));
        assert_eq!(out.display, "Read lines 3-4 of 11 from f");
    }

    #[test]
    fn long_lines_are_cut() {
        let text = "x".repeat(2100);
        let out = render_text(&text, &params(None, None), "f");
        assert!(llm(&out).ends_with("... [truncated]"));
        assert_eq!(
            out.display,
            "Read all 1 lines from f (some lines were shortened)"
        );
    }
}
