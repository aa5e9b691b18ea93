//! The shell tool's side of read-only classification: the workspace the paths of a
//! command line are checked against, and how an auto-approved command runs (git with
//! every repository-configured program switched off).

use std::path::Path;

use crate::engine::shell_readonly::{classify, PathScope, Verdict};
use crate::platform::filesystem::glob_check::GlobSpec;
pub use crate::platform::filesystem::glob_check::{glob_matches_inside, tree_clean};
use crate::platform::filesystem::FsClient;
use crate::tools::Services;

/// Whether `command`, run in `cwd`, is read-only and reads only inside the workspace.
pub fn verdict(command: &str, cwd: &Path, services: &Services) -> Verdict {
    let inside = |path: &Path| services.workspace.check(path).is_ok();
    let glob_inside = |pattern: &Path| glob_matches_inside(pattern, &inside);
    let scope = PathScope {
        cwd: cwd.to_path_buf(),
        home: crate::settings::home_dir(),
        inside: &inside,
        glob_inside: &glob_inside,
        tree_clean: &tree_clean,
    };
    classify(command, &scope)
}

/// [`verdict`] with the glob and tree checks left for the FileSystem pool: the verdict
/// if every glob pattern's matches stay inside and every tree a recursive search walks
/// is clean, and those patterns and trees (they only ever make the verdict `Ask`, so a
/// `ReadOnly` here still needs them checked, [`settle_globs`]).
pub fn verdict_deferring_globs(
    command: &str,
    cwd: &Path,
    services: &Services,
) -> (Verdict, GlobSpec) {
    let inside = |path: &Path| services.workspace.check(path).is_ok();
    let deferred = std::sync::Mutex::new(GlobSpec::default());
    let glob_inside = |pattern: &Path| {
        if let Ok(mut deferred) = deferred.lock() {
            deferred.patterns.push(pattern.to_path_buf());
        }
        true
    };
    let tree_clean = |root: &Path| {
        if let Ok(mut deferred) = deferred.lock() {
            deferred.trees.push(root.to_path_buf());
        }
        true
    };
    let scope = PathScope {
        cwd: cwd.to_path_buf(),
        home: crate::settings::home_dir(),
        inside: &inside,
        glob_inside: &glob_inside,
        tree_clean: &tree_clean,
    };
    let verdict = classify(command, &scope);
    (
        verdict,
        deferred.into_inner().unwrap_or_else(|e| e.into_inner()),
    )
}

/// Whether every match of the patterns stays inside the workspace and every tree is
/// clean, checked on the FileSystem pool (a pool that cannot answer: not known to).
pub async fn settle_globs(checks: GlobSpec, fs: &FsClient) -> bool {
    fs.glob(checks).await.unwrap_or(false)
}

/// [`verdict`] with its glob checks on the FileSystem pool.
pub async fn verdict_settled(command: &str, cwd: &Path, services: &Services) -> Verdict {
    match verdict_deferring_globs(command, cwd, services) {
        (Verdict::ReadOnly, globs) if !globs.is_empty() => {
            if settle_globs(globs, &services.fs).await {
                Verdict::ReadOnly
            } else {
                Verdict::Ask(
                    "a glob pattern may match a path outside the workspace or a secret file, or a recursive search may reach a secret file"
                        .into(),
                )
            }
        }
        (verdict, _) => verdict,
    }
}

/// Environment for a command that runs without the user's approval: git reads no
/// configuration from the environment and runs none of the programs a repository's
/// configuration may name (the one set of [`crate::platform::child_env::unsandboxed`],
/// which hooks and MCP servers get too).
pub use crate::platform::child_env::unsandboxed::git_hardening;

/// A stand-in for a repository-configured external diff program (`diff.external`): git
/// runs `GIT_EXTERNAL_DIFF` through the shell with the path, the old file and the new
/// file among its arguments; this prints a plain unified diff of the two files.
const SAFE_EXTERNAL_DIFF: &str =
    "f() { diff -u --label \"a/$1\" --label \"b/$1\" \"$2\" \"$5\"; true; }; f";

/// For an auto-approved command that runs git in `cwd`: when the repository's
/// configuration names an external diff program, `GIT_EXTERNAL_DIFF` set to a plain
/// `diff -u` so that program never runs (`git config` itself runs no program). That
/// `git config` runs under the read-only sandbox (when there is one) with the
/// session's child environment.
pub async fn external_diff_guard(
    command: &str,
    cwd: &Path,
    env: &[(String, String)],
    services: &Services,
) -> Option<(String, String)> {
    if !command.contains("git") {
        return None;
    }
    let settings = services.settings.clone();
    let roots = services.workspace.roots();
    let sandbox = tokio::task::spawn_blocking(move || {
        crate::platform::sandbox::session::read_only_for_own_use(&settings, &roots)
    })
    .await
    .ok()
    .flatten();
    let mut git = tokio::process::Command::new("git");
    crate::platform::child_env::ChildEnvPolicy::from_settings(&services.settings)
        .apply_std(git.as_std_mut());
    git.args(["config", "--get", "diff.external"])
        .current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null());
    if let Some(sandbox) = &sandbox {
        sandbox.apply_to(git.as_std_mut());
    }
    let out = git.output().await.ok()?;
    let configured = !String::from_utf8_lossy(&out.stdout).trim().is_empty();
    configured.then(|| {
        (
            "GIT_EXTERNAL_DIFF".to_string(),
            SAFE_EXTERNAL_DIFF.to_string(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hardening_sets_the_default_format_so_no_signature_placeholder_runs() {
        let (set, _) = git_hardening();
        let key = set
            .iter()
            .find(|(_, v)| v == "format.pretty")
            .map(|(k, _)| k.replace("KEY", "VALUE"))
            .expect("format.pretty overridden");
        assert!(set.contains(&(key, "medium".to_string())), "{set:?}");
    }

    #[test]
    fn a_tree_holding_a_secret_file_is_not_clean() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path();
        std::fs::create_dir_all(ws.join("src/deep")).expect("mkdir");
        std::fs::create_dir_all(ws.join("conf")).expect("mkdir");
        std::fs::write(ws.join("src/deep/a.rs"), "").expect("write");
        std::fs::write(ws.join("conf/.env.local"), "K=v").expect("write");
        std::os::unix::fs::symlink(ws.join("conf"), ws.join("src/link")).expect("link");
        assert!(
            tree_clean(&ws.join("src")),
            "a link met on the way is not followed"
        );
        assert!(!tree_clean(&ws.join("conf")));
        assert!(!tree_clean(ws));
        assert!(
            !tree_clean(&ws.join("src/link")),
            "a link given is followed"
        );
        assert!(tree_clean(&ws.join("src/deep/a.rs")));
        std::fs::write(ws.join("src/id_rsa"), "").expect("write");
        let inside = |p: &Path| p.starts_with(ws);
        assert!(!glob_matches_inside(&ws.join("src/id_*"), &inside));
        assert!(glob_matches_inside(&ws.join("src/deep/*"), &inside));
    }

    #[test]
    fn a_glob_reaching_a_link_out_of_the_workspace_is_not_inside() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().join("ws");
        let out = dir.path().join("out");
        std::fs::create_dir_all(ws.join("src/sub")).expect("mkdir");
        std::fs::create_dir_all(&out).expect("mkdir");
        std::fs::write(ws.join("src/a.rs"), "").expect("write");
        std::fs::write(ws.join("src/sub/b.rs"), "").expect("write");
        std::os::unix::fs::symlink(&out, ws.join("src/.hidden")).expect("link");
        std::os::unix::fs::symlink(&out, ws.join("linkdir")).expect("link");
        std::fs::write(out.join("id_rsa"), "").expect("write");
        let inside = |p: &Path| {
            std::fs::canonicalize(p)
                .map(|r| r.starts_with(dir.path().join("ws")))
                .unwrap_or_else(|_| p.starts_with(&ws))
        };
        assert!(glob_matches_inside(&ws.join("src/*.rs"), &inside));
        assert!(glob_matches_inside(&ws.join("src/*/b.rs"), &inside));
        // bash's `*` skips dot-names such as the link `src/.hidden`.
        assert!(glob_matches_inside(&ws.join("src/*"), &inside));
        assert!(!glob_matches_inside(&ws.join("l*/id_rsa"), &inside));
        assert!(!glob_matches_inside(&ws.join("*"), &inside));
        assert!(!glob_matches_inside(&ws.join("link?ir"), &inside));
    }
}
