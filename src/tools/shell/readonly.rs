//! The shell tool's side of read-only classification: the workspace the paths of a
//! command line are checked against, and how an auto-approved command runs (git with
//! every repository-configured program switched off).

use std::path::Path;

use crate::engine::shell_readonly::{classify, PathScope, Verdict};
use crate::tools::Services;

/// Whether `command`, run in `cwd`, is read-only and reads only inside the workspace.
pub fn verdict(command: &str, cwd: &Path, services: &Services) -> Verdict {
    let inside = |path: &Path| services.workspace.check(path).is_ok();
    let scope = PathScope {
        cwd: cwd.to_path_buf(),
        home: crate::settings::home_dir(),
        inside: &inside,
    };
    classify(command, &scope)
}

/// The empty tree's id: with `GIT_ATTR_SOURCE` pointing at it, no `.gitattributes`
/// applies, so no filter, textconv or diff driver program is run.
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// Environment for a command that runs without the user's approval: git reads no
/// configuration from the environment and runs none of the programs a repository's
/// configuration may name (fsmonitor, hooks, pager, signature check, attribute
/// filter/textconv/diff drivers). Not covered: a `diff.external` set in the
/// repository's own `.git/config` (git has no way to unset it from outside). `GIT_CONFIG_COUNT` entries rank as `git -c` options, above
/// every configuration file.
pub fn git_hardening() -> (Vec<(String, String)>, Vec<String>) {
    let overrides = [
        ("core.fsmonitor", "false"),
        ("core.hooksPath", "/dev/null"),
        ("core.pager", "cat"),
        ("core.untrackedCache", "false"),
        ("log.showSignature", "false"),
        ("status.showUntrackedFiles", "normal"),
        ("pager.status", "false"),
        ("pager.log", "false"),
        ("pager.diff", "false"),
        ("pager.show", "false"),
        ("pager.branch", "false"),
    ];
    let mut set = vec![
        ("GIT_CONFIG_NOSYSTEM".to_string(), "1".to_string()),
        ("GIT_ATTR_SOURCE".to_string(), EMPTY_TREE.to_string()),
        ("GIT_PAGER".to_string(), "cat".to_string()),
        ("GIT_CONFIG_COUNT".to_string(), overrides.len().to_string()),
    ];
    for (i, (key, value)) in overrides.iter().enumerate() {
        set.push((format!("GIT_CONFIG_KEY_{i}"), key.to_string()));
        set.push((format!("GIT_CONFIG_VALUE_{i}"), value.to_string()));
    }
    let remove = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| {
            k.starts_with("GIT_CONFIG")
                || matches!(
                    k.as_str(),
                    "GIT_DIR"
                        | "GIT_WORK_TREE"
                        | "GIT_EXTERNAL_DIFF"
                        | "GIT_EXEC_PATH"
                        | "GIT_SSH"
                        | "GIT_SSH_COMMAND"
                        | "GIT_ASKPASS"
                        | "GIT_EDITOR"
                )
        })
        .collect();
    (set, remove)
}

/// A stand-in for a repository-configured external diff program (`diff.external`): git
/// runs `GIT_EXTERNAL_DIFF` through the shell with the path, the old file and the new
/// file among its arguments; this prints a plain unified diff of the two files.
const SAFE_EXTERNAL_DIFF: &str =
    "f() { diff -u --label \"a/$1\" --label \"b/$1\" \"$2\" \"$5\"; true; }; f";

/// For an auto-approved command that runs git in `cwd`: when the repository's
/// configuration names an external diff program, `GIT_EXTERNAL_DIFF` set to a plain
/// `diff -u` so that program never runs (`git config` itself runs no program).
pub async fn external_diff_guard(
    command: &str,
    cwd: &Path,
    env: &[(String, String)],
) -> Option<(String, String)> {
    if !command.contains("git") {
        return None;
    }
    let out = tokio::process::Command::new("git")
        .args(["config", "--get", "diff.external"])
        .current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .ok()?;
    let configured = !String::from_utf8_lossy(&out.stdout).trim().is_empty();
    configured.then(|| {
        (
            "GIT_EXTERNAL_DIFF".to_string(),
            SAFE_EXTERNAL_DIFF.to_string(),
        )
    })
}
