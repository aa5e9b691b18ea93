//! How `read_many_files` presents what it gathered: the concatenated text with its
//! terminator and skip report for the model, and the markdown summary for the user.

use super::Skipped;
use crate::platform::workspace::Workspace;
use crate::protocol::content::Part;
use crate::protocol::{LlmContent, ToolOutput};

const TERMINATOR: &str = "\n--- End of content ---";
const NOTHING_FOUND: &str = "No files matching the criteria were found or all were skipped.";

pub(super) fn render(
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
