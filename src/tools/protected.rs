//! Troupe's and gemini-cli's own configuration directories inside a workspace
//! (`.troupe/`, `.gemini/`): a write there could change what the next session may do
//! (its approval mode, allow rules, model endpoint), so it asks in every mode but yolo,
//! whatever the allow rules say.

use std::path::Path;

use super::{PolicyHint, Services};
use crate::platform::workspace::real_path;

/// Directory names whose contents configure an agent.
pub const PROTECTED_DIRS: [&str; 2] = [".troupe", ".gemini"];

/// Whether `path` (or what it resolves to through symlinks) lies in a protected
/// directory.
pub fn is_protected(path: &Path) -> bool {
    let in_protected = |p: &Path| {
        p.components()
            .any(|c| PROTECTED_DIRS.iter().any(|d| c.as_os_str() == *d))
    };
    in_protected(path) || real_path(path).is_ok_and(|real| in_protected(&real))
}

/// The policy hint of an edit of `file_path`: [`PolicyHint::Protected`] inside a
/// protected directory, else none.
pub fn edit_hint(services: &Services, file_path: &str) -> Option<PolicyHint> {
    is_protected(&services.workspace.resolve(file_path)).then_some(PolicyHint::Protected)
}
