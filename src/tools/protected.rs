//! The directories that configure an agent (`.troupe/`, `.gemini/`, and `.agents/`,
//! where skills shared by several agents live): a write there could change what the
//! next session may do (its approval mode, allow rules, model endpoint, the
//! instructions of a skill), so it asks in every mode but yolo, whatever the allow
//! rules say. This holds for such a directory anywhere, also one a skill's activation
//! added to the workspace (`~/.agents/skills/<name>`).

use std::path::Path;

use super::{PolicyHint, Services};
use crate::platform::workspace::real_path;

/// Directory names whose contents configure an agent: the ones folder trust pins.
pub const PROTECTED_DIRS: [&str; 3] = crate::settings::trust::pin::CONFIG_DIRS;

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
