//! What a child that Troupe starts outside the sandbox gets on top of the children's
//! policy: hooks and MCP stdio servers run with the user's rights, in the workspace, so
//! they must read nothing a sandboxed command could have written there that would run
//! code. Python does not put the current or the script's directory first on `sys.path`
//! (`PYTHONSAFEPATH=1`, Python 3.11+: `python3 -m server` no longer imports a module
//! planted in the workspace), and git runs none of the programs a repository's
//! configuration may name ([`git_hardening`]: a model-made `.git/config` with
//! `core.fsmonitor` runs nothing when a hook runs `git status`). The child's own
//! configured `env` is applied after these and wins (a server that needs the old
//! behaviour sets `PYTHONSAFEPATH = ""`, `GIT_ATTR_SOURCE = "HEAD"` for the
//! committed attributes, or `GIT_CONFIG_COUNT = "0"`).

/// The variable that keeps Python's working and script directory off `sys.path`.
pub const PYTHON_SAFE_PATH: &str = "PYTHONSAFEPATH";

/// What git must not run for an unsandboxed child, whatever a repository's
/// configuration says: the fsmonitor, hooks, a pager, the signature program. (A shell
/// command that runs without approval gets these and more: [`git_hardening`].)
const PROGRAMS_OFF: [(&str, &str); 5] = [
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("log.showSignature", "false"),
    // A repository's default format may hold `%G?`, which runs `gpg.program`.
    ("format.pretty", "medium"),
];

/// Sets the unsandboxed children's variables on `cmd` (after the children's policy,
/// before the child's own configured variables, which are set later and win): git's
/// [`PROGRAMS_OFF`] as `GIT_CONFIG_KEY_n` entries after any of Troupe's own
/// environment (they rank above every configuration file), no `.gitattributes`
/// (`GIT_ATTR_SOURCE`: no filter, textconv or diff driver), and `PYTHONSAFEPATH=1`
/// unless `configured` (the child's own `env`) names it. The user's other git
/// variables (`GIT_SSH_COMMAND`, …) are left as they are: they are not the
/// workspace's to write.
pub fn apply(cmd: &mut std::process::Command, configured: &[(String, String)]) {
    for (name, value) in variables(&|name| std::env::var(name).ok()) {
        cmd.env(name, value);
    }
    if !configured.iter().any(|(k, _)| k == PYTHON_SAFE_PATH) {
        cmd.env(PYTHON_SAFE_PATH, "1");
    }
}

/// The git variables of [`apply`], the user's own `GIT_CONFIG_KEY_n` entries (read
/// through `env`) kept before Troupe's.
fn variables(env: &dyn Fn(&str) -> Option<String>) -> Vec<(String, String)> {
    let theirs = env("GIT_CONFIG_COUNT")
        .and_then(|n| n.trim().parse::<usize>().ok())
        .unwrap_or(0)
        .min(1000);
    let mut out = vec![
        ("GIT_ATTR_SOURCE".to_string(), EMPTY_TREE.to_string()),
        ("GIT_PAGER".to_string(), "cat".to_string()),
        (
            "GIT_CONFIG_COUNT".to_string(),
            (theirs + PROGRAMS_OFF.len()).to_string(),
        ),
    ];
    for (i, (key, value)) in PROGRAMS_OFF.iter().enumerate() {
        out.push((format!("GIT_CONFIG_KEY_{}", theirs + i), key.to_string()));
        out.push((
            format!("GIT_CONFIG_VALUE_{}", theirs + i),
            value.to_string(),
        ));
    }
    out
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
        PROGRAMS_OFF[0],
        PROGRAMS_OFF[1],
        PROGRAMS_OFF[2],
        ("core.untrackedCache", "false"),
        PROGRAMS_OFF[3],
        PROGRAMS_OFF[4],
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_git_entries_come_first_and_python_stays_off_the_cwd() {
        let env = |name: &str| match name {
            "GIT_CONFIG_COUNT" => Some("2".to_string()),
            _ => None,
        };
        let vars = variables(&env);
        let get = |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("GIT_CONFIG_COUNT"), Some("7"));
        assert_eq!(get("GIT_CONFIG_KEY_2"), Some("core.fsmonitor"));
        assert_eq!(get("GIT_CONFIG_VALUE_3"), Some("/dev/null"));
        assert_eq!(get("GIT_CONFIG_KEY_0"), None);
        let mut cmd = std::process::Command::new("true");
        apply(&mut cmd, &[]);
        let set: Vec<_> = cmd.get_envs().collect();
        assert!(set.contains(&(
            std::ffi::OsStr::new(PYTHON_SAFE_PATH),
            Some(std::ffi::OsStr::new("1"))
        )));
        let mut cmd = std::process::Command::new("true");
        apply(&mut cmd, &[(PYTHON_SAFE_PATH.to_string(), String::new())]);
        assert!(!cmd
            .get_envs()
            .any(|(k, _)| k == std::ffi::OsStr::new(PYTHON_SAFE_PATH)));
    }
}
