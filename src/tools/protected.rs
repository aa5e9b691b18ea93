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
/// directory. A git worktree of gemini-cli's (`.gemini/worktrees/NAME/…`, where `-w`
/// makes them) is a checkout, not configuration: what lies inside it is protected
/// only by the directories below NAME.
pub fn is_protected(path: &Path) -> bool {
    in_protected(path) || real_path(path).is_ok_and(|real| in_protected(&real))
}

fn in_protected(path: &Path) -> bool {
    let parts: Vec<&std::ffi::OsStr> = path.components().map(|c| c.as_os_str()).collect();
    let mut i = 0;
    while i < parts.len() {
        let in_worktree = parts[i] == ".gemini"
            && parts.get(i + 1).is_some_and(|p| *p == "worktrees")
            && parts.len() > i + 3;
        if in_worktree {
            i += 3;
            continue;
        }
        if PROTECTED_DIRS.iter().any(|d| parts[i] == *d) {
            return true;
        }
        i += 1;
    }
    false
}

/// The policy hint of an edit of `file_path`: [`PolicyHint::Protected`] inside a
/// protected directory, else none.
pub fn edit_hint(services: &Services, file_path: &str) -> Option<PolicyHint> {
    is_protected(&services.workspace.resolve(file_path)).then_some(PolicyHint::Protected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worktree_under_gemini_is_a_checkout_but_its_own_config_is_protected() {
        let p = |s: &str| is_protected(Path::new(s));
        assert!(!p("/r/.gemini/worktrees/feat/src/a.rs"));
        assert!(p("/r/.gemini/worktrees/feat/.gemini/settings.json"));
        assert!(p("/r/.gemini/worktrees/feat/.troupe/config.toml"));
        // The worktrees folder itself, and what is not inside a worktree, stay protected.
        assert!(p("/r/.gemini/worktrees/feat"));
        assert!(p("/r/.gemini/worktrees"));
        assert!(p("/r/.gemini/settings.json"));
        assert!(p("/r/.agents/skills/x/SKILL.md"));
        assert!(!p("/r/src/gemini/worktrees/x/y"));
    }
}
