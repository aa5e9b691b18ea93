//! The just-in-time tier of context files: when a file tool succeeds on a path, the
//! context files above that path the model has not seen yet are appended to its output
//! (once per file per session), as gemini-cli's `jit-context` does.

use std::path::PathBuf;

use super::Services;
use crate::platform::context_files::format_blocks;
use crate::protocol::content::Part;
use crate::protocol::LlmContent;
use crate::tools::invoke::HostOutcome;

/// The tools whose touched paths trigger the JIT tier.
pub const JIT_TOOLS: [&str; 4] = ["read_file", "write_file", "replace", "list_directory"];

/// The directories whose ancestors a call's touched paths lead to: the directory
/// itself for `list_directory`, the file's directory for the others (no file system
/// access).
pub fn start_dirs(tool: &str, paths: Vec<PathBuf>) -> Vec<PathBuf> {
    if !JIT_TOOLS.contains(&tool) {
        return Vec::new();
    }
    paths
        .into_iter()
        .filter_map(|p| {
            if tool == "list_directory" {
                Some(p)
            } else {
                p.parent().map(PathBuf::from)
            }
        })
        .collect()
}

/// The directories of `dirs` this successful call is the first to reach, claimed for
/// it: their context files are searched once per session, so a batch of calls in one
/// directory costs one search and the rest cost nothing. Empty for a failed call.
pub fn claim_dirs(outcome: &HostOutcome, services: &Services, dirs: Vec<PathBuf>) -> Vec<PathBuf> {
    let HostOutcome::Finished(output) = outcome else {
        return Vec::new();
    };
    if output.is_error() || dirs.is_empty() || !services.settings.context.jit {
        return Vec::new();
    }
    dirs.into_iter()
        .filter(|d| services.context.claim_dir(d))
        .collect()
}

/// Appends the context files above the `claimed` directories ([`claim_dirs`]) that the
/// model has not seen to a successful output; searched on the FileSystem pool.
pub async fn with_jit_context(
    outcome: HostOutcome,
    services: &Services,
    claimed: Vec<PathBuf>,
) -> HostOutcome {
    let HostOutcome::Finished(mut output) = outcome else {
        return outcome;
    };
    if claimed.is_empty() {
        return HostOutcome::Finished(output);
    }
    // On the FileSystem pool: each context file is opened beneath its root.
    let found = services
        .context
        .clone()
        .discover_confined(&services.fs, claimed)
        .await;
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
