//! Plan mode as the tools see it (gemini-cli 0.61's `plan.toml` and `planUtils`): the
//! plans directory, how a plan file's name is resolved in it, and which writes plan
//! mode lets through (`write_file` and `replace` of a plan file, nothing else); and
//! the session's approval mode as the tools see it ([`SessionMode`]).

use std::path::{Path, PathBuf};

use super::{Decider, Services};
use crate::engine::paths::normalize_lexically;
use crate::engine::policy::PolicyDecision;
use crate::protocol::ApprovalMode;

/// gemini-cli's `denyMessage` for a write in plan mode that is not a plan file.
pub const WRITE_DENIED: &str = "You are in Plan Mode and cannot modify source code. You may ONLY use write_file or replace to save plans to the designated plans directory as .md files.";

/// `PATH_ACCESS_DENIED`: a plan path outside the plans directory.
pub fn access_denied(raw: &str, plans_dir: &Path) -> String {
    format!(
        "Access denied: plan path ({raw}) must be within the designated plans directory ({}).",
        plans_dir.display()
    )
}

/// Whether `path` lies inside `dir`, compared lexically (the FileSystem service's
/// confined opens catch a link that leads elsewhere).
fn inside(dir: &Path, path: &Path) -> bool {
    normalize_lexically(path.to_path_buf()).starts_with(dir)
}

/// gemini-cli's `resolveAndValidatePlanPath`: an absolute path inside the plans
/// directory as it is; else a path relative to the project root that lands inside it;
/// else the path relative to the plans directory, which must stay inside it.
pub fn resolve_plan_path(raw: &str, plans_dir: &Path, root: &Path) -> Result<PathBuf, String> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Err("Plan file path must be non-empty.".into());
    }
    let path = Path::new(trimmed);
    if path.is_absolute() && inside(plans_dir, path) {
        return Ok(path.to_path_buf());
    }
    let from_root = normalize_lexically(root.join(trimmed));
    if inside(plans_dir, &from_root) {
        return Ok(from_root);
    }
    let from_plans = normalize_lexically(plans_dir.join(trimmed));
    match inside(plans_dir, &from_plans) {
        true => Ok(from_plans),
        false => Err(access_denied(trimmed, plans_dir)),
    }
}

/// A plan file's name: letters, digits, `_` and `-`, then `.md` (the `[\w-]+\.md` of
/// gemini-cli's rules).
fn plan_name(name: &str) -> bool {
    name.strip_suffix(".md").is_some_and(|stem| {
        !stem.is_empty()
            && stem
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    })
}

/// Whether plan mode lets a write of `raw` through, as gemini-cli's plan-file rules
/// do: a clean name (`plan.md`, `./plan.md`, `plans/plan.md`, `./plans/plan.md`), or
/// an absolute path naming a `.md` file right in the plans directory.
pub fn write_allowed(raw: &str, plans_dir: &Path) -> bool {
    let raw = raw.replace('\0', "");
    let parts: Vec<&str> = raw.split('/').filter(|p| !p.is_empty()).collect();
    if raw.starts_with('/') {
        let path = normalize_lexically(PathBuf::from(&raw));
        return path.parent() == Some(plans_dir)
            && path
                .file_name()
                .is_some_and(|n| plan_name(&n.to_string_lossy()));
    }
    let parts = match parts.first() {
        Some(&".") => &parts[1..],
        _ => &parts[..],
    };
    match parts {
        [name] => plan_name(name),
        ["plans", name] => plan_name(name),
        _ => false,
    }
}

/// The session's approval mode as the tools see it; the actors layer implements it
/// over the Scheduler's policy state.
pub trait SessionMode: Send + Sync {
    /// The mode now.
    fn approval_mode(&self) -> crate::protocol::ApprovalMode;
    /// Whether a person answers the session's confirmations.
    fn interactive(&self) -> bool;
    /// Switches the mode, as `Op::SetApprovalMode` does.
    fn set_approval_mode(&self, mode: crate::protocol::ApprovalMode);
    /// The mode the session was in when it last entered plan mode (`None`: it started
    /// in plan mode or never entered it).
    fn mode_before_plan(&self) -> Option<crate::protocol::ApprovalMode>;
}

/// A fixed mode, for services that are not a session's (tests).
#[derive(Debug, Clone, Copy)]
pub struct FixedMode(pub crate::protocol::ApprovalMode, pub bool);

impl SessionMode for FixedMode {
    fn approval_mode(&self) -> crate::protocol::ApprovalMode {
        self.0
    }
    fn interactive(&self) -> bool {
        self.1
    }
    fn set_approval_mode(&self, _mode: crate::protocol::ApprovalMode) {}
    fn mode_before_plan(&self) -> Option<crate::protocol::ApprovalMode> {
        None
    }
}

impl Services {
    /// gemini-cli's plans directory: `<project temp dir>/<session id>/plans`, where
    /// `write_file` and `replace` may write plans in plan mode and `exit_plan_mode`
    /// reads them.
    pub fn plans_dir(&self) -> PathBuf {
        let temp = match self.workspace.temp_dir() {
            Some(dir) => dir.to_path_buf(),
            None => crate::platform::workspace::project_temp_dir(
                &crate::settings::troupe_home(),
                self.workspace.primary(),
            ),
        };
        temp.join(&self.session_id).join("plans")
    }

    /// Where an edit of `raw` lands: in plan mode a plan file's name is resolved in
    /// the plans directory ([`resolve_plan_path`]), as gemini-cli's `write_file` and
    /// `replace` resolve it; otherwise (and for a path that cannot be a plan) beneath
    /// the workspace root.
    pub fn resolve_edit_path(&self, raw: &str) -> PathBuf {
        if self.mode.approval_mode() == ApprovalMode::Plan {
            let cleaned = raw.replace('\0', "");
            if let Ok(path) =
                resolve_plan_path(&cleaned, &self.plans_dir(), self.workspace.primary())
            {
                return path;
            }
        }
        self.workspace.resolve(raw)
    }
}

/// The refusal of an edit of `raw` that plan mode does not let through, checked again
/// as the edit runs: a call approved before an earlier call of its answer switched
/// into plan mode (`enter_plan_mode`, then an edit) still writes nothing.
pub fn refused_now(raw: &str, services: &Services) -> Option<crate::protocol::ToolOutput> {
    let planning = services.mode.approval_mode() == ApprovalMode::Plan;
    (planning && !write_allowed(raw, &services.plans_dir())).then(|| {
        crate::protocol::ToolOutput::error(
            crate::protocol::ToolErrorKind::PolicyViolation,
            format!("Tool execution denied by policy. {WRITE_DENIED}"),
            "Denied in plan mode",
        )
    })
}

/// The policy of an edit of `raw` ([`super::Tool::decider`] of `write_file` and
/// `replace`): in plan mode a plan file is written without asking and anything else
/// is refused with gemini-cli's message; other modes decide as usual.
pub fn edit_decider(raw: &str, services: &Services) -> Option<Decider> {
    let allowed = write_allowed(raw, &services.plans_dir());
    Some(Box::new(move |mode, _| {
        (mode == ApprovalMode::Plan).then(|| match allowed {
            true => PolicyDecision::Allow,
            false => PolicyDecision::Deny(WRITE_DENIED.to_string()),
        })
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_writes_are_the_clean_names_and_files_right_in_the_plans_dir() {
        let plans = Path::new("/nonexistent-troupe/tmp/p/s/plans");
        for ok in [
            "plan.md",
            "./plan.md",
            "plans/my-plan_2.md",
            "./plans/x.md",
            "/nonexistent-troupe/tmp/p/s/plans/feature-x.md",
        ] {
            assert!(write_allowed(ok, plans), "{ok}");
        }
        for no in [
            "src/main.rs",
            "plan.txt",
            "../plan.md",
            "a/b.md",
            "/nonexistent-troupe/tmp/p/s/plans/sub/x.md",
            "/nonexistent-troupe/tmp/p/s/plans/../x.md",
            "/etc/x.md",
            "my plan.md",
            ".md",
        ] {
            assert!(!write_allowed(no, plans), "{no}");
        }
    }

    #[test]
    fn plan_paths_resolve_in_the_plans_dir_and_never_outside_it() {
        let plans = Path::new("/nonexistent-troupe/tmp/p/s/plans");
        let root = Path::new("/nonexistent-troupe/work");
        assert_eq!(
            resolve_plan_path("x.md", plans, root),
            Ok(plans.join("x.md"))
        );
        assert_eq!(
            resolve_plan_path(" /nonexistent-troupe/tmp/p/s/plans/y.md ", plans, root),
            Ok(plans.join("y.md"))
        );
        assert_eq!(
            resolve_plan_path("../../z.md", plans, root),
            Err("Access denied: plan path (../../z.md) must be within the designated plans directory (/nonexistent-troupe/tmp/p/s/plans).".into())
        );
        assert_eq!(
            resolve_plan_path("  ", plans, root),
            Err("Plan file path must be non-empty.".into())
        );
    }
}
