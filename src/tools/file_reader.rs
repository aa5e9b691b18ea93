//! Reading one file for the model (gemini-cli's `processSingleFileContent`): size limit,
//! kind detection, media as inline data, SVG as text, binary files skipped, text
//! decoded by BOM and cut to a window of lines with a notice on how to read on.
//! Shared by `read_file` and `read_many_files`; runs on the FileSystem pool.

use std::path::Path;

use base64::Engine as _;

use crate::engine::file_kind::{self, FileKind, SUPPORTED_AUDIO_FORMATS};
use crate::engine::text::{utf16_len, utf16_prefix};
use crate::platform::filesystem::{Confined, FsError, OpenMode};
use crate::protocol::content::Part;
use crate::protocol::{LlmContent, ToolErrorKind, ToolOutput};

pub const MAX_LINES: usize = 2000;
pub const MAX_LINE_LENGTH: usize = 2000;
/// Files above this many MiB are refused.
pub const MAX_FILE_SIZE_MB: f64 = 20.0;
/// SVG files above this size are not shown.
pub const MAX_SVG_BYTES: u64 = 1024 * 1024;

/// Which lines to show.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LineWindow {
    /// The first 2000 lines.
    #[default]
    Default,
    /// 1-based, inclusive bounds (gemini-cli 0.61 `start_line`/`end_line`).
    Lines {
        start: Option<usize>,
        end: Option<usize>,
    },
    /// 0-based first line and a count (the seed documents' `offset`/`limit`).
    OffsetLimit {
        offset: Option<usize>,
        limit: Option<usize>,
    },
}

/// A file read for the model.
#[derive(Debug, Clone)]
pub struct Processed {
    pub output: ToolOutput,
    /// Not every line (or not every character of a line) is shown.
    pub truncated: bool,
    pub kind: FileKind,
}

impl Processed {
    fn plain(output: ToolOutput, kind: FileKind) -> Self {
        Self {
            output,
            truncated: false,
            kind,
        }
    }
}

/// Opens `path` beneath its workspace root ([`Confined::open`]) and reads it; `rel`
/// names it in messages. A path the workspace refuses is reported with
/// [`crate::tools::read_file::path_error`].
pub fn process_file(confined: &Confined, path: &Path, rel: &str, window: LineWindow) -> Processed {
    match confined.open(path, OpenMode::Read) {
        Ok(opened) => process_open_file(&opened.real_path, rel, window, opened.file),
        Err(FsError::NotFound(p)) => not_found(&p),
        Err(FsError::Path(e)) => Processed::plain(super::read_file::path_error(e), FileKind::Text),
        Err(e) => read_failure(rel, &e.to_string()),
    }
}

/// The answer for a missing file.
pub fn not_found(real: &Path) -> Processed {
    Processed::plain(
        failure(
            ToolErrorKind::FileNotFound,
            "Could not read file because no file was found at the specified path.",
            "File not found.",
            format!("File not found: {}", real.display()),
        ),
        FileKind::Text,
    )
}

/// [`process_file`] on a file already open (its descriptor was checked, so what is
/// read is what was checked).
pub fn process_open_file(
    real: &Path,
    rel: &str,
    window: LineWindow,
    file: std::fs::File,
) -> Processed {
    match file.metadata() {
        Ok(meta) => process_open_file_with(real, rel, window, file, &meta),
        Err(e) => read_failure(rel, &e.to_string()),
    }
}

/// [`process_open_file`] for a caller that has the open file's metadata already.
pub fn process_open_file_with(
    real: &Path,
    rel: &str,
    window: LineWindow,
    mut file: std::fs::File,
    meta: &std::fs::Metadata,
) -> Processed {
    let shown = real.display();
    if meta.is_dir() {
        return Processed::plain(
            failure(
                ToolErrorKind::TargetIsDirectory,
                "Could not read file because the provided path is a directory, not a file.",
                "Path is a directory.",
                format!("Path is a directory, not a file: {shown}"),
            ),
            FileKind::Text,
        );
    }
    if !meta.is_file() {
        return read_failure(
            rel,
            "not a regular file (devices, FIFOs and sockets are never read)",
        );
    }
    let mb = meta.len() as f64 / (1024.0 * 1024.0);
    if mb > MAX_FILE_SIZE_MB {
        return Processed::plain(
            failure(
                ToolErrorKind::FileTooLarge,
                "File size exceeds the 20MB limit.",
                "File size exceeds the 20MB limit.",
                format!("File size exceeds the 20MB limit: {shown} ({mb:.2}MB)"),
            ),
            FileKind::Text,
        );
    }
    // At most the size limit, even if the file grows while it is read.
    let limit = (MAX_FILE_SIZE_MB * 1024.0 * 1024.0) as u64;
    let bytes = match crate::platform::filesystem::read_reported_size(&mut file, meta.len(), limit)
    {
        Ok(bytes) => bytes,
        Err(e) => return read_failure(rel, &e.to_string()),
    };
    let kind = file_kind::detect(real, &bytes[..bytes.len().min(4096)]);
    let output = match kind {
        FileKind::Binary => ToolOutput::text(
            format!("Cannot display content of binary file: {rel}"),
            format!("Skipped binary file: {rel}"),
        ),
        FileKind::Svg if meta.len() > MAX_SVG_BYTES => ToolOutput::text(
            format!("Cannot display content of SVG file larger than 1MB: {rel}"),
            format!("Skipped large SVG file (>1MB): {rel}"),
        ),
        FileKind::Svg => ToolOutput::text(
            file_kind::decode_text(&bytes),
            format!("Read SVG as text: {rel}"),
        ),
        FileKind::Audio => match file_kind::audio_mime_of(real) {
            Some(mime) => inline(&bytes, &mime, kind, rel),
            None => failure(
                ToolErrorKind::ReadContentFailure,
                &format!("Could not read audio file because its format is not supported. Supported audio formats are {SUPPORTED_AUDIO_FORMATS}."),
                &format!("Unsupported audio file format: {rel}"),
                format!("Unsupported audio file format for {shown}. Supported audio formats are {SUPPORTED_AUDIO_FORMATS}."),
            ),
        },
        FileKind::Image | FileKind::Pdf | FileKind::Video => {
            let mime = file_kind::mime_of(real)
                .unwrap_or_else(|| "application/octet-stream".to_string());
            inline(&bytes, &mime, kind, rel)
        }
        FileKind::Text => {
            let text = file_kind::decode_text(&bytes);
            return render_text(&text, window, rel);
        }
    };
    Processed::plain(output, kind)
}

fn inline(bytes: &[u8], mime: &str, kind: FileKind, rel: &str) -> ToolOutput {
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    ToolOutput {
        llm_content: LlmContent::Parts(vec![Part::inline(mime, data)]),
        display: format!("Read {} file: {rel}", kind.label()),
        error: None,
        data: None,
    }
}

/// A failed read: `llm` and `display` for the front end, `message` for the model.
fn failure(kind: ToolErrorKind, llm: &str, display: &str, message: String) -> ToolOutput {
    let mut out = ToolOutput::error(kind, message, display);
    out.llm_content = LlmContent::Text(llm.to_string());
    out
}

/// A file that was opened but could not be read.
pub fn read_failure(rel: &str, message: &str) -> Processed {
    let text = format!("Error reading file {rel}: {message}");
    Processed::plain(
        failure(
            ToolErrorKind::ReadContentFailure,
            &text,
            &text,
            text.clone(),
        ),
        FileKind::Text,
    )
}

/// Splits like JavaScript's `split(/\r?\n/)`.
pub fn split_lines(text: &str) -> Vec<&str> {
    text.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect()
}

/// The lines of `window`, long lines cut, with gemini-cli's truncation notice.
pub fn render_text(text: &str, window: LineWindow, rel: &str) -> Processed {
    if text.is_empty() {
        return Processed::plain(ToolOutput::text("", ""), FileKind::Text);
    }
    let lines = split_lines(text);
    let total = lines.len();
    let past_end = match window {
        LineWindow::Lines { start: Some(s), .. } if s > total => Some(("start_line", s)),
        LineWindow::OffsetLimit {
            offset: Some(o), ..
        } if o >= total => Some(("offset", o)),
        _ => None,
    };
    if let Some((name, value)) = past_end {
        // Not an empty window with a hint to read further: that sends a small model
        // reading past the end again and again.
        let message = format!(
            "{name} {value} is past the end of {rel}: the file has {total} lines, and all of them can be read with start_line 1 to {total}."
        );
        return Processed::plain(
            failure(
                ToolErrorKind::InvalidToolParams,
                &message,
                &message,
                message.clone(),
            ),
            FileKind::Text,
        );
    }
    let (start, end) = match window {
        LineWindow::Default => (0, MAX_LINES.min(total)),
        LineWindow::Lines { start, end } => {
            let start = start.map_or(0, |s| s.saturating_sub(1)).min(total);
            let end = end.map_or(start + MAX_LINES, |e| e).min(total);
            (start, end.max(start))
        }
        LineWindow::OffsetLimit { offset, limit } => {
            let start = offset.unwrap_or(0).min(total);
            let end = (start + limit.unwrap_or(MAX_LINES)).min(total);
            (start, end)
        }
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
        return Processed::plain(ToolOutput::text(content, display), FileKind::Text);
    }
    // The note names the parameters the schema declares, whichever generation of
    // names the call used (the older offset/limit are accepted, never advertised).
    let action = format!("use the 'start_line' and 'end_line' parameters in a subsequent 'read_file' call. For example, to read the next section of the file, use start_line: {}.", end + 1);
    let llm = format!(
        "\nIMPORTANT: The file content has been truncated.\nStatus: Showing lines {}-{end} of {total} total lines.\nAction: To read more of the file, you can {action}\n\n--- FILE CONTENT (truncated) ---\n{content}",
        start + 1
    );
    Processed {
        output: ToolOutput::text(llm, display),
        truncated: true,
        kind: FileKind::Text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llm(out: &ToolOutput) -> &str {
        match &out.llm_content {
            LlmContent::Text(t) => t,
            LlmContent::Parts(_) => panic!("parts"),
        }
    }

    fn lines(start: Option<usize>, end: Option<usize>) -> LineWindow {
        LineWindow::Lines { start, end }
    }

    #[test]
    fn whole_small_file_is_plain() {
        let p = render_text("a\r\nb\n", LineWindow::Default, "f");
        assert_eq!(llm(&p.output), "a\nb\n");
        assert_eq!(p.output.display, "");
        assert!(!p.truncated);
    }

    #[test]
    fn range_has_truncation_notice() {
        let text: String = (1..=10).map(|i| format!("l{i}\n")).collect();
        let p = render_text(&text, lines(Some(3), Some(4)), "f");
        let out = llm(&p.output);
        assert!(out.starts_with("\nIMPORTANT: The file content has been truncated.\n"));
        assert!(out.contains("Status: Showing lines 3-4 of 11 total lines."));
        let past = render_text(
            &text,
            LineWindow::Lines {
                start: Some(12),
                end: None,
            },
            "f.txt",
        );
        let err = past.output.error.expect("an error past the end");
        assert_eq!(
            err.message,
            "start_line 12 is past the end of f.txt: the file has 11 lines, and all of them can be read with start_line 1 to 11."
        );
        assert!(out.contains("use start_line: 5."));
        assert!(out.ends_with("--- FILE CONTENT (truncated) ---\nl3\nl4"));
        assert_eq!(p.output.display, "Read lines 3-4 of 11 from f");
    }

    #[test]
    fn offset_limit_generation() {
        let text: String = (1..=10).map(|i| format!("l{i}\n")).collect();
        let p = render_text(
            &text,
            LineWindow::OffsetLimit {
                offset: Some(2),
                limit: Some(3),
            },
            "f",
        );
        let out = llm(&p.output);
        assert!(out.contains("Status: Showing lines 3-5 of 11 total lines."));
        assert!(out.contains("use the 'start_line' and 'end_line' parameters"));
        assert!(out.contains("use start_line: 6."));
        assert!(out.ends_with("l3\nl4\nl5"));
    }

    #[test]
    fn default_window_is_2000_lines() {
        let text: String = (1..=5000).map(|i| format!("line {i}\n")).collect();
        let p = render_text(&text, LineWindow::Default, "big.txt");
        let out = llm(&p.output);
        assert!(out.contains("Status: Showing lines 1-2000 of 5001 total lines."));
        assert!(out.contains("use start_line: 2001."));
        assert!(out.ends_with("line 2000"));
        assert_eq!(p.output.display, "Read lines 1-2000 of 5001 from big.txt");
        let p = render_text(&text, lines(Some(4990), None), "big.txt");
        assert!(llm(&p.output).contains("Showing lines 4990-5001 of 5001"));
    }

    #[test]
    fn long_lines_are_cut_in_utf16_units() {
        let text = format!("{}\nshort", "😀".repeat(1500));
        let p = render_text(&text, LineWindow::Default, "f");
        let out = llm(&p.output);
        let first = out.lines().find(|l| l.contains('😀')).unwrap();
        assert_eq!(first, format!("{}... [truncated]", "😀".repeat(1000)));
        assert_eq!(
            p.output.display,
            "Read all 2 lines from f (some lines were shortened)"
        );
    }
}
