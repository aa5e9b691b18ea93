//! The Landlock layer inside the allow-listed world, as raw system calls.
//!
//! Inside the world the paths a rule names exist only after the mounts, so the
//! ruleset is built in the child (between `fork` and `exec`, where nothing may
//! allocate): the parent prepares the paths and access masks, the child opens each
//! path, adds the rule and restricts itself.

use std::ffi::CString;
use std::io;
use std::path::{Path, PathBuf};

use super::child::{c_path, check_long};
use super::world::SYSTEM_ROOTS;
use super::{SandboxError, SandboxMode, SandboxPolicy};

const EXECUTE: u64 = 1 << 0;
const WRITE_FILE: u64 = 1 << 1;
const READ_FILE: u64 = 1 << 2;
const READ_DIR: u64 = 1 << 3;
const MAKE_CHAR: u64 = 1 << 6;
const MAKE_BLOCK: u64 = 1 << 11;
const TRUNCATE: u64 = 1 << 14;
const IOCTL_DEV: u64 = 1 << 15;
const FILE_RIGHTS: u64 = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV;
const NET_BIND_TCP: u64 = 1;
const NET_CONNECT_TCP: u64 = 2;
const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1;
const SCOPE_SIGNAL: u64 = 2;
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

/// Filesystem rights the kernel of `abi` handles.
fn handled_fs(abi: u8) -> u64 {
    match abi {
        0 | 1 => (1 << 13) - 1,
        2 => (1 << 14) - 1,
        3 | 4 => (1 << 15) - 1,
        _ => (1 << 16) - 1,
    }
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
    let fs_all = handled_fs(abi);
    let read = READ_FILE | READ_DIR;
    let write = fs_all & !(EXECUTE | READ_FILE | READ_DIR | MAKE_CHAR | MAKE_BLOCK);
    let device = (READ_FILE | READ_DIR | WRITE_FILE | TRUNCATE | IOCTL_DEV) & fs_all;
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
                add(path, read | EXECUTE)?;
            }
        }
    } else {
        add(Path::new("/"), read | EXECUTE)?;
        let extra = policy
            .writable_roots
            .iter()
            .filter_map(|p| p.canonicalize().ok());
        for root in workspaces.iter().cloned().chain(extra) {
            add(&root, read | EXECUTE | write)?;
        }
        add(Path::new("/tmp"), read | EXECUTE | write)?;
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
            NET_BIND_TCP | NET_CONNECT_TCP
        } else {
            0
        },
        scoped: if abi >= 6 {
            SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
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
                rule.access & FILE_RIGHTS
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
