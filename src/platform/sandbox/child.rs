//! Everything that runs in the child between `fork` and `exec`.
//!
//! The parent may be multi-threaded, so the code reachable from [`ChildPlan::apply`]
//! and [`NsPlan::enter`] must be async-signal-safe: raw syscalls on memory that was
//! allocated and filled in by the parent, no allocation, no locks, no logging.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::OnceLock;

use super::world::WorldPlan;

/// What the pre-exec hook does, fully prepared by the parent.
pub(super) struct ChildPlan {
    /// Populated Landlock ruleset (CLOEXEC, number >= 3), when the command runs in the
    /// host's world; inside an allow-listed world the ruleset is built there.
    pub(super) ruleset_fd: Option<OwnedFd>,
    /// The allow-listed world, when namespaces are available.
    pub(super) world: Option<WorldPlan>,
    /// Compiled seccomp program, if the network must be blocked.
    pub(super) seccomp: Option<Vec<libc::sock_filter>>,
    /// Mount namespace with read-only bind mounts, if used.
    pub(super) ns: Option<NsPlan>,
    /// Capabilities to shed, when the parent is privileged.
    pub(super) caps: Option<CapDrop>,
}

impl ChildPlan {
    /// Restricts the calling (child) process. Async-signal-safe.
    pub(super) fn apply(&self) -> io::Result<()> {
        if let Some(world) = &self.world {
            world.enter()?;
        } else if let Some(ns) = &self.ns {
            ns.enter()?;
        }
        if let Some(caps) = &self.caps {
            caps.apply()?;
        }
        // SAFETY: plain prctl with integer arguments.
        check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) })?;
        if let Some(world) = &self.world {
            world.landlock.restrict()?;
        } else if let Some(fd) = &self.ruleset_fd {
            // SAFETY: the fd is owned by the plan, which outlives this call.
            let rc =
                unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0u32) };
            check_long(rc)?;
        }
        if let Some(filter) = &self.seccomp {
            let prog = libc::sock_fprog {
                // The length was checked against BPF_MAXINSNS in the parent.
                len: filter.len() as libc::c_ushort,
                filter: filter.as_ptr().cast_mut(),
            };
            // SAFETY: `prog` points into a Vec owned by the plan; the kernel copies it.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    0u32,
                    &prog as *const libc::sock_fprog,
                )
            };
            check_long(rc)?;
        }
        Ok(())
    }
}

/// Capabilities a privileged (root) child keeps: Docker's default set minus
/// `CAP_MKNOD`, `CAP_NET_RAW` and `CAP_SETFCAP`. Dropping `CAP_PERFMON` and
/// `CAP_SYS_ADMIN` matters most: with either, `PTRACE_MODE_READ` access to another
/// process's memory descriptor (`/proc/<pid>/environ`, `maps`, `auxv`) bypasses
/// Landlock's ptrace scoping.
const KEEP_CAPS: [u32; 11] = [
    0,  // CAP_CHOWN
    1,  // CAP_DAC_OVERRIDE
    3,  // CAP_FOWNER
    4,  // CAP_FSETID
    5,  // CAP_KILL
    6,  // CAP_SETGID
    7,  // CAP_SETUID
    8,  // CAP_SETPCAP
    10, // CAP_NET_BIND_SERVICE
    18, // CAP_SYS_CHROOT
    29, // CAP_AUDIT_WRITE
];
const CAP_SETPCAP: u32 = 8;
const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Shrinks the bounding, inheritable and ambient capability sets of a privileged
/// child so that the program it executes only gets [`KEEP_CAPS`].
pub(super) struct CapDrop {
    header: CapHeader,
    data: [CapData; 2],
}

impl CapDrop {
    /// `Some` when the current process may shrink its bounding set (has `CAP_SETPCAP`).
    pub(super) fn for_current_process() -> Option<Self> {
        let mut header = CapHeader {
            version: LINUX_CAPABILITY_VERSION_3,
            pid: 0,
        };
        let mut data = [CapData::default(); 2];
        // SAFETY: capget fills the two data words we own.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_capget,
                &mut header as *mut CapHeader,
                data.as_mut_ptr(),
            )
        };
        if rc != 0 || data[0].effective & (1 << CAP_SETPCAP) == 0 {
            return None;
        }
        let mut keep = [0u32; 2];
        for cap in KEEP_CAPS {
            keep[(cap / 32) as usize] |= 1 << (cap % 32);
        }
        for (word, mask) in data.iter_mut().zip(keep) {
            word.effective &= mask;
            word.permitted &= mask;
            word.inheritable &= mask;
        }
        Some(CapDrop { header, data })
    }

    /// Async-signal-safe.
    fn apply(&self) -> io::Result<()> {
        for cap in (0..64u32).filter(|c| !KEEP_CAPS.contains(c)) {
            // SAFETY: plain prctl; EINVAL means the kernel does not know this cap.
            let rc = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) };
            if rc != 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
                return Err(io::Error::last_os_error());
            }
        }
        // SAFETY: plain prctl.
        let clear = libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong;
        check(unsafe { libc::prctl(libc::PR_CAP_AMBIENT, clear, 0, 0, 0) })?;
        // SAFETY: header and data are owned by the plan and correctly laid out.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_capset,
                &self.header as *const CapHeader,
                self.data.as_ptr(),
            )
        };
        check_long(rc)
    }
}

/// The id maps of a user namespace that maps only the caller's uid and gid to
/// themselves (prepared by the parent).
pub(super) struct IdMaps {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl IdMaps {
    /// The maps for the calling process's effective uid and gid.
    pub(super) fn current() -> Self {
        // SAFETY: trivial getters.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        IdMaps {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        }
    }

    /// Writes them for the calling process, just after it entered its new user
    /// namespace. Async-signal-safe.
    pub(super) fn write(&self) -> io::Result<()> {
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", &self.uid_map)?;
        write_file(c"/proc/self/gid_map", &self.gid_map)
    }
}

/// A private mount namespace in which some paths are bind-mounted read-only.
pub(super) struct NsPlan {
    /// Also create a user namespace (unprivileged callers), with these maps.
    user_ns: Option<IdMaps>,
    /// Path and the mount flags that must be kept when remounting it read-only.
    ro_binds: Vec<(CString, libc::c_ulong)>,
}

impl NsPlan {
    /// Prepares (in the parent) a namespace plan making `paths` read-only.
    pub(super) fn new(user_ns: bool, paths: &[PathBuf]) -> io::Result<Self> {
        let mut ro_binds = Vec::with_capacity(paths.len());
        for path in paths {
            ro_binds.push((c_path(path)?, locked_flags(path)?));
        }
        Ok(NsPlan {
            user_ns: user_ns.then(IdMaps::current),
            ro_binds,
        })
    }

    /// Enters a new mount namespace and applies the bind mounts. Async-signal-safe.
    pub(super) fn enter(&self) -> io::Result<()> {
        let flags = if self.user_ns.is_some() {
            libc::CLONE_NEWUSER | libc::CLONE_NEWNS
        } else {
            libc::CLONE_NEWNS
        };
        // SAFETY: plain syscall.
        check(unsafe { libc::unshare(flags) })?;
        if let Some(maps) = &self.user_ns {
            maps.write()?;
        }
        // Never propagate our mounts back to the parent's namespace.
        mount(None, c"/", libc::MS_REC | libc::MS_SLAVE)?;
        for (path, keep) in &self.ro_binds {
            mount(Some(path), path, libc::MS_BIND | libc::MS_REC)?;
            let remount = libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | keep;
            mount(None, path, remount)?;
        }
        Ok(())
    }
}

/// Whether per-child mount namespaces work here, probed once in a forked child.
/// `Some(false)`: plain mount namespace (CAP_SYS_ADMIN); `Some(true)`: needs a user
/// namespace too; `None`: neither.
pub(super) fn namespace_support() -> Option<bool> {
    static SUPPORT: OnceLock<Option<bool>> = OnceLock::new();
    *SUPPORT.get_or_init(|| {
        let probe_dir = std::env::temp_dir().canonicalize().ok()?;
        [false, true].into_iter().find(|&user_ns| {
            NsPlan::new(user_ns, std::slice::from_ref(&probe_dir)).is_ok_and(|p| probe(&p))
        })
    })
}

fn probe(plan: &NsPlan) -> bool {
    // SAFETY: the child only runs async-signal-safe code (`NsPlan::enter`), then `_exit`.
    match unsafe { libc::fork() } {
        -1 => false,
        0 => {
            let code = i32::from(plan.enter().is_err());
            // SAFETY: terminate the forked child without running any destructor.
            unsafe { libc::_exit(code) }
        }
        pid => loop {
            let mut status = 0;
            // SAFETY: waits for the child we just forked.
            let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
            if rc == pid {
                break libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
            }
            if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                break false;
            }
        },
    }
}

/// Converts a path to a C string (parent side).
pub(super) fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
}

/// Mount flags of the mount holding `path` that a read-only remount must preserve
/// (they may be locked when the mount was inherited into a user namespace).
fn locked_flags(path: &Path) -> io::Result<libc::c_ulong> {
    let c = c_path(path)?;
    // SAFETY: statvfs writes into the zeroed struct we own.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    check(unsafe { libc::statvfs(c.as_ptr(), &mut st) })?;
    let map = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    Ok(map
        .iter()
        .filter(|(st_flag, _)| st.f_flag & st_flag != 0)
        .fold(0, |acc, (_, ms_flag)| acc | ms_flag))
}

pub(super) fn mount(
    source: Option<&CString>,
    target: &std::ffi::CStr,
    flags: libc::c_ulong,
) -> io::Result<()> {
    let src = source.map_or(ptr::null(), |s| s.as_ptr());
    // SAFETY: all pointers are NUL-terminated strings owned by the plan, or null.
    check(unsafe { libc::mount(src, target.as_ptr(), ptr::null(), flags, ptr::null()) })
}

pub(super) fn write_file(path: &std::ffi::CStr, data: &[u8]) -> io::Result<()> {
    // SAFETY: raw open/write/close on a static path and a caller-owned buffer.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    check(fd)?;
    let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
    let err = io::Error::last_os_error();
    unsafe { libc::close(fd) };
    if n < 0 {
        Err(err)
    } else if n.unsigned_abs() != data.len() {
        Err(io::Error::from_raw_os_error(libc::EIO))
    } else {
        Ok(())
    }
}

pub(super) fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

pub(super) fn check_long(rc: libc::c_long) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}
