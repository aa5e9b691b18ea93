//! Folder trust for project hooks, and the one-time announcement of new ones.
//!
//! The trust decision is `Settings::trusted` (see `crate::settings::trust`: the user's
//! trust file, `--skip-trust`, or `TROUPE_TRUST_WORKSPACE=1` in Troupe's environment —
//! nothing a repository can set); [`project_hooks_allowed`] is the one gate every
//! project hook passes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::settings::hooks::{HookDef, HookOrigin};

/// The variable that marks the workspace trusted until folder trust exists.
pub const TRUST_ENV: &str = "TROUPE_TRUST_WORKSPACE";

/// Whether `TROUPE_TRUST_WORKSPACE` trusts the workspace for this run (read by the
/// settings loader, like `--skip-trust`).
pub fn workspace_trusted(_workspace: &Path) -> bool {
    std::env::var(TRUST_ENV).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

/// Whether hooks that came from `origin` may run: user hooks always, project hooks only
/// in a trusted folder.
pub fn project_hooks_allowed(origin: HookOrigin, workspace_trusted: bool) -> bool {
    match origin {
        HookOrigin::User => true,
        HookOrigin::Project => workspace_trusted,
    }
}

/// The file remembering which project hooks the user has been told about.
pub fn seen_file() -> PathBuf {
    crate::settings::troupe_home().join("trusted_hooks.json")
}

/// Project hooks of `workspace` not announced before; they are remembered as announced.
/// A file that cannot be read or written only means hooks are announced again.
pub fn newly_seen(defs: &[HookDef], workspace: &Path, file: &Path) -> Vec<String> {
    let mut seen: BTreeMap<String, Vec<String>> = std::fs::read_to_string(file)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let key = workspace.display().to_string();
    let known = seen.entry(key).or_default();
    let mut fresh = Vec::new();
    for def in defs.iter().filter(|d| d.origin == HookOrigin::Project) {
        let id = def.key();
        if !known.contains(&id) {
            known.push(id);
            fresh.push(def.name.clone());
        }
    }
    if !fresh.is_empty() {
        if let Some(dir) = file.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if let Ok(text) = serde_json::to_string_pretty(&seen) {
            let _ = std::fs::write(file, text);
        }
    }
    fresh
}

/// The names of `workspace`'s project hooks that will not run because the folder is
/// not trusted (empty when it is, or when hooks are off).
pub fn skipped_project_hooks(
    workspace: &Path,
    settings: &crate::settings::Settings,
) -> Vec<String> {
    if settings.trusted || !settings.hooks.enabled {
        return Vec::new();
    }
    let loaded =
        crate::settings::hooks::load(&crate::settings::hooks::HookSources::standard(workspace));
    if loaded.globally_disabled {
        return Vec::new();
    }
    loaded
        .defs
        .into_iter()
        .filter(|d| !project_hooks_allowed(d.origin, false))
        .map(|d| d.name)
        .collect()
}

/// The warning for project hooks left out in an untrusted folder: which, what that
/// means in approval mode `mode`, how to run them, and the project settings file that
/// is not applied either (`skipped_file`).
pub fn skipped_hooks_warning(names: &[String], mode: &str, skipped_file: Option<&Path>) -> String {
    let consequence = consequence(mode);
    let file = skipped_file
        .map(|f| format!(" Its settings file {} is not applied either.", f.display()))
        .unwrap_or_default();
    format!(
        "WARNING: this folder is not trusted, so its project hooks were NOT run: {}.{consequence} Trust the folder with `troupe trust` (or for one run, --skip-trust) to run them.{file}",
        names.join(", ")
    )
}

/// What running without the project hooks means in approval mode `mode`.
fn consequence(mode: &str) -> &'static str {
    match mode {
        "yolo" => " This run is in yolo mode: every tool call runs without the checks these hooks would make.",
        "auto_edit" | "autoEdit" | "auto-edit" => {
            " This run is in auto_edit mode: edits run without the checks these hooks would make."
        }
        _ => "",
    }
}

/// The warning for project hooks left out because the trusted folder's configuration
/// changed since it was trusted: which hooks, what that means in approval mode `mode`,
/// then `notice` ([`crate::settings::trust::changed_notice`]: which files, how to trust
/// again).
pub fn changed_hooks_warning(names: &[String], mode: &str, notice: &str) -> String {
    let consequence = consequence(mode);
    let notice = notice.strip_prefix("troupe: ").unwrap_or(notice);
    format!(
        "WARNING: this folder's project hooks were NOT run: {}.{consequence} Why: {notice}",
        names.join(", ")
    )
}

#[cfg(test)]
mod skipped_tests {
    use super::*;

    #[test]
    fn the_warning_names_the_hooks_the_mode_and_the_way_out() {
        let names = vec!["guard".to_string(), "audit".to_string()];
        let yolo = skipped_hooks_warning(&names, "yolo", None);
        assert!(yolo.starts_with("WARNING: this folder is not trusted, so its project hooks were NOT run: guard, audit."), "{yolo}");
        assert!(
            yolo.contains("yolo mode: every tool call runs without"),
            "{yolo}"
        );
        assert!(yolo.contains("--skip-trust"), "{yolo}");
        let plain =
            skipped_hooks_warning(&names, "default", Some(Path::new(".troupe/config.toml")));
        assert!(!plain.contains("mode:"), "{plain}");
        assert!(
            plain.ends_with("Its settings file .troupe/config.toml is not applied either."),
            "{plain}"
        );
    }
}
