//! The shell tool's side of read-only classification: the workspace the paths of a
//! command line are checked against, and how an auto-approved command runs (git with
//! every repository-configured program switched off).

use std::path::Path;

use crate::engine::shell_readonly::{classify, PathScope, Verdict};
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
    };
    classify(command, &scope)
}

/// Directory entries a glob check looks at before it gives up and asks.
const MAX_GLOB_ENTRIES: usize = 20_000;

/// Whether every existing path the absolute glob `pattern` may expand to is `inside`
/// (which follows symlinks). Expanded level by level as bash does with `dotglob` off
/// (its default in `bash -c`): a glob component matches the names of its directory,
/// dot-names excepted, with `globset`'s `*`, `?` and `[…]` (`*` never crosses `/`);
/// more than [`MAX_GLOB_ENTRIES`] entries, or a pattern that does not compile, is
/// not known to stay inside.
pub fn glob_matches_inside(pattern: &Path, inside: &dyn Fn(&Path) -> bool) -> bool {
    let mut level = vec![std::path::PathBuf::new()];
    let mut seen = 0;
    for component in pattern.components() {
        let text = component.as_os_str().to_string_lossy();
        let matcher = if text.contains(['*', '?', '[']) {
            match globset::GlobBuilder::new(&text)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
            {
                Ok(glob) => Some(glob.compile_matcher()),
                Err(_) => return false,
            }
        } else {
            None
        };
        let mut next = Vec::new();
        for dir in &level {
            let Some(matcher) = &matcher else {
                next.push(dir.join(component));
                continue;
            };
            // Not a directory (or gone): bash finds no match there.
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                seen += 1;
                if seen > MAX_GLOB_ENTRIES {
                    return false;
                }
                let name = entry.file_name();
                if !name.to_string_lossy().starts_with('.') && matcher.is_match(&name) {
                    let found = dir.join(&name);
                    if !inside(&found) {
                        return false;
                    }
                    next.push(found);
                }
            }
        }
        level = next;
    }
    true
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
