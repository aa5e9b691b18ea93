//! The one gate for workspace extension points (project custom commands, ...): what a
//! repository ships may only extend Troupe when the folder is trusted.

use std::path::Path;

/// Whether extensions found in `workspace` (e.g. `.troupe/commands/`) may be loaded:
/// only in a trusted folder. The decision is read where project hooks read it
/// ([`crate::settings::hook_trust::workspace_trusted`]: default-deny until folder trust says
/// otherwise), so that one change there covers every workspace extension point.
pub fn project_extensions_allowed(workspace: &Path) -> bool {
    crate::settings::hook_trust::workspace_trusted(workspace)
}
