//! The Landlock layer inside the allow-listed world, as raw system calls.
//!
//! Inside the world the paths a rule names exist only after the mounts, so the
//! ruleset is built in the child (between `fork` and `exec`, where nothing may
//! allocate): the parent prepares the paths and access masks, the child opens each
//! path, adds the rule and restricts itself.

use std::ffi::CString;
use std::io;
use std::path::{Path, PathBuf};

use landlock::{Access, AccessFs, AccessNet, BitFlags, Scope, ABI};

use super::child::{c_path, check_long};
use super::rules::{write_rights, DEVICE_RW, FILE_RIGHTS, READ, TARGET_ABI};
use super::world::SYSTEM_ROOTS;
use super::{SandboxError, SandboxMode, SandboxPolicy};

const RULE_PATH_BENEATH: libc::c_int = 1;

/// Devices writable in every mode (besides the command's own pseudo-terminals).
const DEVICE_FILES: [&str; 4] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// `struct landlock_ruleset_attr` (ABI 6 layout; older kernels get zeros past what
/// they know, which they accept).
#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

/// `struct landlock_path_beneath_attr` (packed in the kernel's header).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// One rule: what is allowed beneath a path of the world.
pub(super) struct InsideRule {
    path: CString,
    access: u64,
    dir: bool,
}

/// The whole Landlock layer of a world, ready for [`InsideRules::restrict`].
pub(super) struct InsideRules {
    handled_fs: u64,
    handled_net: u64,
    scoped: u64,
    rules: Vec<InsideRule>,
}

/// Plans the layer: in `read-only`, reading everywhere in the world and executing
/// only the system directories; in `workspace-write`, reading and executing
/// everywhere and writing in the workspace roots, the writable roots, `/tmp` and
/// `/dev/shm`. A few devices are writable in both. Signals and abstract UNIX sockets
/// never reach outside the sandbox (ABI ≥ 6); without network, TCP is refused too.
pub(super) fn inside_rules(
    abi: u8,
    policy: &SandboxPolicy,
    workspaces: &[PathBuf],
) -> Result<InsideRules, SandboxError> {
    // The rights of the kernel's ABI (capped at the one the host-world rules target),
    // as the landlock crate names them; the raw calls below take their bits.
    let abi_rights = ABI::from(i32::from(abi)).min(TARGET_ABI);
    let handled = AccessFs::from_all(abi_rights);
    let fs_all = handled.bits();
    let read = READ.bits();
    let execute = BitFlags::from(AccessFs::Execute).bits();
    let write = (write_rights() & handled).bits();
    let device = (DEVICE_RW & handled).bits();
    let read_only = policy.mode == SandboxMode::ReadOnly;
    let mut rules = Vec::new();
    let mut add = |path: &Path, access: u64| -> Result<(), SandboxError> {
        let dir = !DEVICE_FILES.iter().any(|d| path == Path::new(d));
        rules.push(InsideRule {
            path: c_path(path).map_err(SandboxError::Io)?,
            access: access & fs_all,
            dir,
        });
        Ok(())
    };
    if read_only {
        add(Path::new("/"), read)?;
        for dir in SYSTEM_ROOTS {
            let path = Path::new(dir);
            if path.symlink_metadata().is_ok_and(|m| m.is_dir()) {
                add(path, read | execute)?;
            }
        }
    } else {
        add(Path::new("/"), read | execute)?;
        let extra = policy
            .writable_roots
            .iter()
            .filter_map(|p| p.canonicalize().ok());
        for root in workspaces.iter().cloned().chain(extra) {
            add(&root, read | execute | write)?;
        }
        add(Path::new("/tmp"), read | execute | write)?;
        add(Path::new("/dev/shm"), read | write)?;
    }
    for dev in DEVICE_FILES {
        add(Path::new(dev), device)?;
    }
    add(Path::new("/dev/pts"), device)?;
    let block_net = read_only || !policy.network;
    Ok(InsideRules {
        handled_fs: fs_all,
        handled_net: if block_net && abi >= 4 {
            (AccessNet::BindTcp | AccessNet::ConnectTcp).bits()
        } else {
            0
        },
        scoped: if abi >= 6 {
            (Scope::AbstractUnixSocket | Scope::Signal).bits()
        } else {
            0
        },
        rules,
    })
}

impl InsideRules {
    /// Builds the ruleset and restricts the calling process. Async-signal-safe: raw
    /// system calls on memory the parent prepared. `PR_SET_NO_NEW_PRIVS` must be set.
    pub(super) fn restrict(&self) -> io::Result<()> {
        let attr = RulesetAttr {
            handled_access_fs: self.handled_fs,
            handled_access_net: self.handled_net,
            scoped: self.scoped,
        };
        // SAFETY: the attribute struct lives on our stack for the call.
        let ruleset = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                &attr as *const RulesetAttr,
                std::mem::size_of::<RulesetAttr>(),
                0u32,
            )
        };
        check_long(ruleset)?;
        let ruleset = ruleset as libc::c_int;
        let result = self.add_rules(ruleset).and_then(|()| {
            // SAFETY: restricting ourselves with a ruleset we own.
            check_long(unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) })
        });
        // SAFETY: closing the descriptor we created.
        unsafe { libc::close(ruleset) };
        result
    }

    fn add_rules(&self, ruleset: libc::c_int) -> io::Result<()> {
        for rule in &self.rules {
            // SAFETY: O_PATH open of a NUL-terminated path owned by the plan.
            let fd = unsafe { libc::open(rule.path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
            if fd < 0 {
                if io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT) {
                    continue;
                }
                return Err(io::Error::last_os_error());
            }
            let access = if rule.dir {
                rule.access
            } else {
                rule.access & FILE_RIGHTS.bits()
            };
            let attr = PathBeneathAttr {
                allowed_access: access,
                parent_fd: fd,
            };
            // SAFETY: the attribute struct lives on our stack for the call.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_landlock_add_rule,
                    ruleset,
                    RULE_PATH_BENEATH,
                    &attr as *const PathBeneathAttr,
                    0u32,
                )
            };
            let err = io::Error::last_os_error();
            // SAFETY: closing the descriptor we opened.
            unsafe { libc::close(fd) };
            if rc < 0 {
                return Err(err);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The masks are the kernel's uapi bits: for ABI 7, every filesystem right is
    /// handled (bits 0–15), writes are all of them but execute, read file, read dir
    /// and the two device-node rights, and scoping covers both scopes.
    #[test]
    fn masks_are_the_uapi_bits() {
        let policy = SandboxPolicy {
            mode: SandboxMode::WorkspaceWrite,
            workspace_roots: vec![PathBuf::from("/w")],
            writable_roots: Vec::new(),
            network: false,
            deny_read: Vec::new(),
            readable_roots: Vec::new(),
            home: PathBuf::from("/h"),
        };
        let rules = inside_rules(7, &policy, &[PathBuf::from("/w")]).expect("rules");
        assert_eq!(rules.handled_fs, 0xFFFF);
        assert_eq!(rules.handled_net, 0b11);
        assert_eq!(rules.scoped, 0b11);
        let ws = rules
            .rules
            .iter()
            .find(|r| r.path.as_bytes() == b"/w")
            .expect("ws rule");
        assert_eq!(ws.access, 0xFFFF & !(0x40 | 0x800));
        let null = rules
            .rules
            .iter()
            .find(|r| r.path.as_bytes() == b"/dev/null")
            .expect("null");
        assert_eq!(null.access, 0x2 | 0x4 | 0x8 | 0x4000 | 0x8000);
        assert!(!null.dir);
        let old = inside_rules(3, &policy, &[]).expect("abi 3");
        assert_eq!(
            (old.handled_fs, old.handled_net, old.scoped),
            ((1 << 15) - 1, 0, 0)
        );
    }
}
