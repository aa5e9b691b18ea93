//! The one gate for workspace extension points (project custom commands, ...): what a
//! repository ships may only extend Troupe when the folder is trusted.

use std::path::Path;

/// Whether extensions found in `workspace` (e.g. `.troupe/commands/`) may be loaded.
///
/// Troupe has no folder-trust store on this branch yet, so this allows; once folder
/// trust lands, this must return the trust check's verdict and deny for an untrusted
/// or unknown folder. Every workspace extension point calls this one function.
pub fn project_extensions_allowed(workspace: &Path) -> bool {
    let _ = workspace;
    true
}
