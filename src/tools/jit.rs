//! The just-in-time tier of context files: when a file tool succeeds on a path, the
//! context files above that path the model has not seen yet are appended to its output
//! (once per file per session), as gemini-cli's `jit-context` does.

use std::path::PathBuf;

use super::Services;
use crate::actors::tool_host::HostOutcome;
use crate::engine::content::Part;
use crate::engine::context_files::format_blocks;
use crate::protocol::LlmContent;

/// The tools whose touched paths trigger the JIT tier.
pub const JIT_TOOLS: [&str; 4] = ["read_file", "write_file", "replace", "list_directory"];

/// Appends newly discovered context files near `paths` to a successful output.
pub async fn with_jit_context(
    outcome: HostOutcome,
    services: &Services,
    paths: Vec<PathBuf>,
) -> HostOutcome {
    let HostOutcome::Finished(mut output) = outcome else {
        return outcome;
    };
    if output.is_error() || paths.is_empty() || !services.settings.context.jit {
        return HostOutcome::Finished(output);
    }
    let context = services.context.clone();
    let found = tokio::task::spawn_blocking(move || {
        let mut files = Vec::new();
        for path in paths {
            files.extend(context.discover_near(&path));
        }
        files
    })
    .await
    .unwrap_or_default();
    if found.is_empty() {
        return HostOutcome::Finished(output);
    }
    let block = format_blocks(&found);
    match &mut output.llm_content {
        LlmContent::Text(text) => {
            text.push_str("\n\n--- Newly Discovered Project Context ---\n");
            text.push_str(&block);
            text.push_str("\n--- End Project Context ---");
        }
        LlmContent::Parts(parts) => parts.push(Part::text(format!(
            "--- Newly Discovered Project Context ---\n{block}\n--- End Project Context ---"
        ))),
    }
    HostOutcome::Finished(output)
}
