//! Whether the allow-listed world works here (probed once), and what is checked
//! after a command in it ends.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use super::{
    child, landlock_abi, world, PreparedSandbox, SandboxError, SandboxMode, SandboxPolicy,
};

/// Whether commands can run in the allow-listed world here (probed once, by running
/// `true` in one): `Some(user_ns)` when they can, `None` when namespaces, `/proc` or
/// the new mount API are unavailable (commands then fall back to Landlock over the
/// host's world, and every command asks).
pub fn world_support() -> Option<bool> {
    static SUPPORT: OnceLock<Option<bool>> = OnceLock::new();
    if super::session::pretend_missing("TROUPE_TEST_NO_WORLD") {
        return None;
    }
    *SUPPORT.get_or_init(|| {
        let abi = landlock_abi()?;
        let user_ns = child::namespace_support()?;
        let probe = world_probe(abi, user_ns);
        if let Err(e) = &probe {
            tracing::warn!(error = %e, "the allow-listed sandbox world is unavailable");
        }
        probe.ok().filter(|ok| *ok).map(|_| user_ns)
    })
}

fn world_probe(abi: u8, user_ns: bool) -> Result<bool, SandboxError> {
    let tmp = world::private_tmp()?;
    let policy = SandboxPolicy {
        mode: SandboxMode::ReadOnly,
        workspace_roots: vec![tmp.to_path_buf()],
        writable_roots: Vec::new(),
        network: false,
        deny_read: Vec::new(),
        readable_roots: Vec::new(),
        home: PathBuf::from("/nonexistent-home"),
    };
    let prepared = policy.prepare_world(abi, user_ns, true, true)?;
    let Some(prepared) = prepared else {
        return Ok(false);
    };
    let shell = ["/bin/sh", "/usr/bin/sh"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    let mut cmd = Command::new(shell.unwrap_or("/bin/sh"));
    cmd.args(["-c", "test -d /proc/self && test ! -e /run"])
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    prepared.apply_to(&mut cmd);
    Ok(cmd.status()?.success())
}

impl PreparedSandbox {
    /// After the command: a protected subdirectory (`.git`, `.troupe`, `.gemini`) that
    /// did not exist when the sandbox was prepared and exists now was made by the
    /// command; it is renamed to `<name>.made-by-command[-N]` so that nothing loads it,
    /// and the pairs (made, moved to) are returned for the command's result.
    pub fn refuse_created_protected(&self) -> Vec<(PathBuf, PathBuf)> {
        let mut moved = Vec::new();
        for path in &self.absent_protected {
            if path.symlink_metadata().is_err() {
                continue;
            }
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            let name = name.unwrap_or_default();
            let target = (0..100)
                .map(|n| match n {
                    0 => path.with_file_name(format!("{name}.made-by-command")),
                    n => path.with_file_name(format!("{name}.made-by-command-{n}")),
                })
                .find(|t| t.symlink_metadata().is_err());
            let Some(target) = target else {
                continue;
            };
            match std::fs::rename(path, &target) {
                Ok(()) => moved.push((path.clone(), target)),
                Err(e) => tracing::warn!(path = %path.display(), error = %e, "cannot move aside"),
            }
        }
        moved
    }
}
