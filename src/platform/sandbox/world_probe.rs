//! Preparing a command's allow-listed world, whether it works here (probed once),
//! and what is checked after a command in it ends.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use super::child::{CapDrop, ChildPlan};

use super::{
    child, landlock_abi, seccomp, world, PreparedSandbox, Protection, SandboxError, SandboxMode,
    SandboxPolicy, PROTECTED_SUBDIRS,
};

/// Which file a path names (device, inode and birth time, not following a final
/// link). The birth time tells a directory made in the place of a removed one apart
/// even when the file system gives it the freed inode number again (ext4 does); on a
/// file system without birth times, device and inode alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileIdentity {
    dev: u64,
    ino: u64,
    born: Option<(i64, u32)>,
}

impl FileIdentity {
    fn of(path: &Path) -> Option<Self> {
        use rustix::fs::{statx, AtFlags, StatxFlags, CWD};
        match statx(
            CWD,
            path,
            AtFlags::SYMLINK_NOFOLLOW,
            StatxFlags::INO | StatxFlags::BTIME,
        ) {
            Ok(st) => Some(FileIdentity {
                dev: rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor),
                ino: st.stx_ino,
                born: (st.stx_mask & StatxFlags::BTIME.bits() != 0)
                    .then_some((st.stx_btime.tv_sec, st.stx_btime.tv_nsec)),
            }),
            // No statx (an old kernel or a filter): device and inode.
            Err(_) => {
                use std::os::unix::fs::MetadataExt;
                let meta = path.symlink_metadata().ok()?;
                Some(FileIdentity {
                    dev: meta.dev(),
                    ino: meta.ino(),
                    born: None,
                })
            }
        }
    }
}

impl SandboxPolicy {
    /// The allow-listed world: fresh namespaces holding only what the policy lists,
    /// with Landlock and seccomp inside as a second layer.
    pub(super) fn prepare_world(
        &self,
        abi: u8,
        user_ns: bool,
        block_net: bool,
        read_only: bool,
    ) -> Result<Option<PreparedSandbox>, SandboxError> {
        let private_tmp = world::private_tmp()?;
        let plan = world::WorldPlan::build(&world::WorldInputs {
            policy: self,
            home: &self.home,
            private_tmp,
            abi,
            user_ns,
        })?;
        let rule_count = plan.bind_count();
        let seccomp = if block_net || read_only {
            Some(seccomp::filter(block_net, read_only)?)
        } else {
            None
        };
        let protected_at_prepare = if read_only {
            Vec::new()
        } else {
            self.protected_at_prepare()
        };
        Ok(Some(PreparedSandbox {
            plan: Arc::new(ChildPlan {
                ruleset_fd: None,
                world: Some(plan),
                seccomp,
                ns: None,
                caps: CapDrop::for_current_process(),
            }),
            abi,
            protection: Protection::World,
            rule_count,
            protected_at_prepare,
        }))
    }

    /// The protected subdirectories that do not exist in a workspace root: a command
    /// that creates one has it moved aside when it ends
    /// ([`PreparedSandbox::refuse_created_protected`]).
    fn protected_at_prepare(&self) -> Vec<(PathBuf, Option<FileIdentity>)> {
        let roots = self
            .workspace_roots
            .iter()
            .filter_map(|r| r.canonicalize().ok());
        roots
            .flat_map(|root| PROTECTED_SUBDIRS.map(|sub| root.join(sub)))
            .map(|p| {
                let id = FileIdentity::of(&p);
                (p, id)
            })
            .collect()
    }
}

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
    /// After the command: a protected subdirectory (`.git`, `.troupe`, `.gemini`, `.agents`) that
    /// did not exist when the sandbox was prepared and exists now was made by the
    /// command; it is renamed to `<name>.made-by-command[-N]` so that nothing loads it,
    /// and the pairs (made, moved to) are returned for the command's result.
    pub fn refuse_created_protected(&self) -> Vec<(PathBuf, PathBuf)> {
        let mut moved = Vec::new();
        for (path, was) in &self.protected_at_prepare {
            // Absent then and present now, or another directory in its place: made
            // by a command.
            let now = FileIdentity::of(path);
            if now.is_none() || now == *was {
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
