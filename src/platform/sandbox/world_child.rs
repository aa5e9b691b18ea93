//! Entering the allow-listed world (child side, between `fork` and `exec`).
//!
//! Three processes carry a command: the one `Command` forked (the *monitor*, which
//! Troupe waits for and signals as the command's process group leader), the first
//! process of the new PID namespace (its *init*: it builds the root, then reaps), and
//! the command itself, which returns from [`WorldPlan::enter`] to be executed. The
//! monitor exits with the command's status as soon as the command ends; jobs the
//! command left running keep the init (and so the process group) alive, as they
//! would without a sandbox.
//!
//! Everything here is async-signal-safe: raw system calls (processes are forked with
//! the raw `clone` call, not glibc's `fork`, which runs handlers that take locks) on
//! memory the parent prepared.

use std::io;
use std::ptr;
use std::sync::atomic::Ordering;

use super::child::{check, check_long, mount};
use super::world::{MountOp, Mountpoint, WorldPlan};

const OPEN_TREE_CLONE: libc::c_uint = 1;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;

/// `struct mount_attr` (version 0).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

impl WorldPlan {
    /// Enters fresh namespaces and the world. Returns only in the process that goes
    /// on to execute the command, with its root, `/proc` and working directory those
    /// of the world; the monitor and the init never return.
    pub(super) fn enter(&self) -> io::Result<()> {
        let mut flags = libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC;
        flags |= libc::CLONE_NEWUTS;
        if self.user_ns.is_some() {
            flags |= libc::CLONE_NEWUSER;
        }
        if self.net_ns {
            flags |= libc::CLONE_NEWNET;
        }
        // SAFETY: plain syscall.
        check(unsafe { libc::unshare(flags) })?;
        if let Some(maps) = &self.user_ns {
            maps.write()?;
        }
        let mut status_pipe = [0 as libc::c_int; 2];
        // SAFETY: pipe2 fills the two ints we own.
        check(unsafe { libc::pipe2(status_pipe.as_mut_ptr(), libc::O_CLOEXEC) })?;
        let [read_end, write_end] = status_pipe;
        let init = raw_fork()?;
        if init != 0 {
            self.rename(c"troupe-sbx-mon", b"troupe: sandbox monitor");
            monitor(init, read_end, write_end);
        }
        self.rename(c"troupe-sbx-init", b"troupe: sandbox init");
        // The init: PID 1 of the new namespace. It dies with the monitor until the
        // command has ended (then jobs the command left may outlive the monitor).
        // SAFETY: plain syscalls.
        unsafe {
            libc::close(read_end);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        }
        self.build_root()?;
        if self.net_ns {
            loopback_up()?;
        }
        let command = raw_fork()?;
        if command != 0 {
            reap(command, write_end);
        }
        // SAFETY: the command keeps no descriptor but its stdio: everything else is
        // closed when it executes.
        unsafe {
            libc::close(write_end);
            libc::syscall(
                libc::SYS_close_range,
                3u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            );
        }
        Ok(())
    }

    /// Names this helper process (its `comm` and its command line, which is Troupe's
    /// own until now) so that neither `ps` nor Troupe's job listing takes it for
    /// Troupe or for a job.
    fn rename(&self, comm: &std::ffi::CStr, title: &[u8]) {
        // SAFETY: PR_SET_NAME copies at most 16 bytes of a NUL-terminated string.
        unsafe { libc::prctl(libc::PR_SET_NAME, comm.as_ptr(), 0, 0, 0) };
        if let Some((start, end)) = self.argv_area {
            let len = end.saturating_sub(start);
            // SAFETY: [start, end) is this process's own copy of the argument strings
            // (read from /proc/self/stat by the parent), which nothing reads any more.
            unsafe {
                let area = std::slice::from_raw_parts_mut(start as *mut u8, len);
                area.fill(0);
                let n = title.len().min(len.saturating_sub(1));
                area[..n].copy_from_slice(&title[..n]);
            }
        }
    }

    /// Assembles the new root on the staging tmpfs and pivots into it.
    fn build_root(&self) -> io::Result<()> {
        let mut cwd = [0u8; libc::PATH_MAX as usize];
        // SAFETY: getcwd writes at most the buffer's length.
        if unsafe { libc::getcwd(cwd.as_mut_ptr().cast(), cwd.len()) }.is_null() {
            return Err(io::Error::last_os_error());
        }
        mount(None, c"/", libc::MS_REC | libc::MS_PRIVATE)?;
        self.open_trees()?;
        let stage = c"/tmp";
        let tmpfs_flags = libc::MS_NOSUID | libc::MS_NODEV;
        mount_fs(
            c"tmpfs",
            stage,
            c"tmpfs",
            tmpfs_flags,
            Some(c"mode=0755,size=1m"),
        )?;
        for op in &self.ops {
            self.apply_op(op)?;
        }
        let ro = libc::MS_REMOUNT | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV;
        for scaffold in &self.read_only_after {
            mount(None, scaffold, ro)?;
        }
        mount(None, c"/tmp/dev", ro)?;
        mount(None, stage, ro)?;
        // SAFETY: plain syscalls on static or stack-owned NUL-terminated strings.
        unsafe {
            check(libc::chdir(stage.as_ptr()))?;
            check_long(libc::syscall(
                libc::SYS_pivot_root,
                c".".as_ptr(),
                c".".as_ptr(),
            ))?;
            check(libc::umount2(c".".as_ptr(), libc::MNT_DETACH))?;
            check(libc::chdir(c"/".as_ptr()))?;
            check(libc::chdir(cwd.as_ptr().cast()))?;
        }
        Ok(())
    }

    /// Copies every host tree to bind while the host's paths are still visible.
    fn open_trees(&self) -> io::Result<()> {
        for op in &self.ops {
            let MountOp::Bind {
                src,
                read_only,
                devices,
                slot,
                required,
                ..
            } = op
            else {
                continue;
            };
            let flags = OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | AT_RECURSIVE;
            // SAFETY: open_tree on a NUL-terminated path owned by the plan.
            let fd =
                unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, src.as_ptr(), flags) };
            if fd < 0 && !*required && last_errno() == Some(libc::ENOENT) {
                // Gone since it was planned: left out (its slot stays -1).
                continue;
            }
            check_long(fd)?;
            let fd = fd as libc::c_int;
            let mut set = MOUNT_ATTR_NOSUID;
            if !*devices {
                set |= MOUNT_ATTR_NODEV;
            }
            if *read_only {
                set |= MOUNT_ATTR_RDONLY;
            }
            let attr = MountAttr {
                attr_set: set,
                attr_clr: 0,
                propagation: 0,
                userns_fd: 0,
            };
            // SAFETY: mount_setattr on the detached tree we own, attr on our stack.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_mount_setattr,
                    fd,
                    c"".as_ptr(),
                    (libc::AT_EMPTY_PATH as libc::c_uint) | AT_RECURSIVE,
                    &attr as *const MountAttr,
                    std::mem::size_of::<MountAttr>(),
                )
            };
            check_long(rc)?;
            self.trees[*slot].store(fd, Ordering::Relaxed);
        }
        Ok(())
    }

    fn apply_op(&self, op: &MountOp) -> io::Result<()> {
        // SAFETY (all arms): raw syscalls on NUL-terminated strings owned by the plan.
        match op {
            MountOp::Dir(path) => {
                let rc = unsafe { libc::mkdir(path.as_ptr(), 0o755) };
                exists_ok(rc)
            }
            MountOp::File(path) => {
                let flags = libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC;
                let fd = unsafe { libc::open(path.as_ptr(), flags, 0o644) };
                if fd < 0 {
                    return exists_ok(fd);
                }
                unsafe { libc::close(fd) };
                Ok(())
            }
            MountOp::Symlink { target, link } => {
                exists_ok(unsafe { libc::symlink(target.as_ptr(), link.as_ptr()) })
            }
            MountOp::Bind {
                dst,
                slot,
                mountpoint,
                required,
                ..
            } => {
                let fd = self.trees[*slot].load(Ordering::Relaxed);
                if fd < 0 {
                    return Ok(());
                }
                let made = match mountpoint {
                    Mountpoint::Make { dir: true } => self.apply_op(&MountOp::Dir(dst.clone())),
                    Mountpoint::Make { dir: false } => self.apply_op(&MountOp::File(dst.clone())),
                    Mountpoint::Existing => Ok(()),
                };
                let rc = made.and_then(|()| {
                    check_long(unsafe {
                        libc::syscall(
                            libc::SYS_move_mount,
                            fd,
                            c"".as_ptr(),
                            libc::AT_FDCWD,
                            dst.as_ptr(),
                            MOVE_MOUNT_F_EMPTY_PATH,
                        )
                    })
                });
                unsafe { libc::close(fd) };
                match rc {
                    // Its mount point in a host tree vanished since it was planned.
                    Err(e) if !*required && e.raw_os_error() == Some(libc::ENOENT) => Ok(()),
                    other => other,
                }
            }
            MountOp::Tmpfs { dst, options } => mount_fs(
                c"tmpfs",
                dst,
                c"tmpfs",
                libc::MS_NOSUID | libc::MS_NODEV,
                Some(options),
            ),
            MountOp::EmptyDir(dst) => mount_fs(
                c"tmpfs",
                dst,
                c"tmpfs",
                libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                Some(c"mode=0000,size=4k"),
            ),
            MountOp::Proc(dst) => {
                let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
                mount_fs(c"proc", dst, c"proc", flags, None)
            }
            MountOp::Devpts(dst) => mount_fs(
                c"devpts",
                dst,
                c"devpts",
                libc::MS_NOSUID | libc::MS_NOEXEC,
                Some(c"newinstance,ptmxmode=0666,mode=0620"),
            ),
        }
    }
}

/// The monitor: waits for the init's report of the command's status and exits with
/// it (dying of the same signal when the command did).
fn monitor(init: libc::pid_t, read_end: libc::c_int, write_end: libc::c_int) -> ! {
    // SAFETY: plain syscalls; the monitor keeps only the pipe's read end.
    unsafe {
        libc::close(write_end);
        close_all_but(read_end);
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
    }
    let mut report = [0i32; 2];
    let mut got = 0usize;
    let size = std::mem::size_of_val(&report);
    while got < size {
        // SAFETY: reading into the part of `report` not yet filled.
        let n = unsafe {
            libc::read(
                read_end,
                report.as_mut_ptr().cast::<u8>().add(got).cast(),
                size - got,
            )
        };
        if n > 0 {
            got += n.unsigned_abs();
        } else if n == 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            break;
        }
    }
    let [status, detached] = report;
    if got == size && detached != 0 {
        mirror(status);
    }
    // The init ends now (or already did, without a report): reap it.
    let init_status = wait_for(init);
    mirror(if got == size { status } else { init_status })
}

/// The init: reaps every process of the namespace; reports the command's status to
/// the monitor when the command ends, with whether other processes remain.
fn reap(command: libc::pid_t, write_end: libc::c_int) -> ! {
    // SAFETY: plain syscalls; the init keeps only the pipe's write end.
    unsafe { close_all_but(write_end) };
    loop {
        let mut status = 0;
        // SAFETY: waiting for any child of ours.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid == command {
            let detached = i32::from(others_remain());
            let report = [status, detached];
            // SAFETY: from now on the init outlives the monitor (jobs may remain).
            unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, 0, 0, 0, 0);
                libc::write(
                    write_end,
                    report.as_ptr().cast(),
                    std::mem::size_of_val(&report),
                );
                libc::close(write_end);
            }
            if detached == 0 {
                // SAFETY: nothing is left to reap.
                unsafe { libc::_exit(0) };
            }
        } else if pid < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            // SAFETY: no child is left.
            unsafe { libc::_exit(0) };
        }
    }
}

/// Whether children other than those already reaped are still running.
fn others_remain() -> bool {
    loop {
        let mut status = 0;
        // SAFETY: non-blocking wait for any child.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        match pid {
            0 => return true,
            p if p > 0 => continue,
            _ => return false,
        }
    }
}

fn wait_for(pid: libc::pid_t) -> libc::c_int {
    loop {
        let mut status = 0;
        // SAFETY: waiting for our own child.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc == pid {
            return status;
        }
        if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return 1 << 8;
        }
    }
}

/// Exits as a process whose wait status was `status`.
fn mirror(status: libc::c_int) -> ! {
    // SAFETY: plain syscalls, then the process ends.
    unsafe {
        if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            libc::signal(sig, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, ptr::null_mut());
            libc::kill(libc::getpid(), sig);
            libc::_exit(128 + sig);
        }
        libc::_exit(libc::WEXITSTATUS(status))
    }
}

/// Closes every descriptor but `keep`.
///
/// # Safety
/// Only for a process that owns no descriptor it still needs.
unsafe fn close_all_but(keep: libc::c_int) {
    let keep = keep as u32;
    // SAFETY: the caller owns no descriptor it still needs.
    unsafe {
        if keep > 0 {
            libc::syscall(libc::SYS_close_range, 0u32, keep - 1, 0u32);
        }
        libc::syscall(libc::SYS_close_range, keep + 1, u32::MAX, 0u32);
    }
}

/// `fork` as the raw system call (no `atfork` handlers, no locks).
fn raw_fork() -> io::Result<libc::pid_t> {
    // SAFETY: clone with only SIGCHLD behaves as fork; the child continues on a copy
    // of this stack and only makes raw system calls.
    let rc = unsafe { libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_ulong, 0, 0, 0, 0) };
    check_long(rc)?;
    Ok(rc as libc::pid_t)
}

/// Brings the network namespace's loopback interface up (commands that talk to
/// themselves on 127.0.0.1 keep working without network).
fn loopback_up() -> io::Result<()> {
    // SAFETY: a datagram socket, two ioctls on a zeroed ifreq we own, close.
    unsafe {
        let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        check(sock)?;
        let mut req: libc::ifreq = std::mem::zeroed();
        for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
            *dst = *src as libc::c_char;
        }
        let mut rc = libc::ioctl(sock, libc::SIOCGIFFLAGS, &mut req);
        if rc == 0 {
            req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            rc = libc::ioctl(sock, libc::SIOCSIFFLAGS, &req);
        }
        let err = io::Error::last_os_error();
        libc::close(sock);
        if rc < 0 {
            return Err(err);
        }
    }
    Ok(())
}

fn mount_fs(
    source: &std::ffi::CStr,
    target: &std::ffi::CStr,
    fstype: &std::ffi::CStr,
    flags: libc::c_ulong,
    data: Option<&std::ffi::CStr>,
) -> io::Result<()> {
    let data = data.map_or(ptr::null(), |d| d.as_ptr().cast::<libc::c_void>());
    // SAFETY: NUL-terminated strings owned by the caller.
    check(unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            flags,
            data,
        )
    })
}

fn last_errno() -> Option<i32> {
    io::Error::last_os_error().raw_os_error()
}

fn exists_ok(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST) {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
