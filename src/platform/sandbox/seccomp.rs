//! The seccomp program that cuts network access and, in `read-only`, changes of file
//! metadata (built in the parent).

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::SandboxError;

/// Largest program the kernel accepts (`BPF_MAXINSNS`).
const BPF_MAXINSNS: usize = 4096;

/// Syscalls that change a file's metadata, which Landlock does not cover: refused in
/// `read-only` (mode, owner, times, extended attributes).
const METADATA_SYSCALLS: &[i64] = &[
    #[cfg(target_arch = "x86_64")]
    libc::SYS_chmod,
    libc::SYS_fchmod,
    libc::SYS_fchmodat,
    452, // fchmodat2
    #[cfg(target_arch = "x86_64")]
    libc::SYS_chown,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_lchown,
    libc::SYS_fchown,
    libc::SYS_fchownat,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_utime,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_utimes,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_futimesat,
    libc::SYS_utimensat,
    libc::SYS_setxattr,
    libc::SYS_lsetxattr,
    libc::SYS_fsetxattr,
    libc::SYS_removexattr,
    libc::SYS_lremovexattr,
    libc::SYS_fremovexattr,
    463, // setxattrat
    466, // removexattrat
];

/// `ioctl` requests that change inode flags (`chattr`): refused in `read-only`.
const SETFLAGS_IOCTLS: [u64; 2] = [
    0x4008_6602, // FS_IOC_SETFLAGS
    0x401c_5820, // FS_IOC_FSSETXATTR
];

/// Builds the filter: when `block_net`, `socket()` with a domain other than `AF_UNIX`
/// and `io_uring_setup()` (io_uring can open sockets without the `socket` syscall)
/// fail with `EPERM`; when `block_metadata`, so do the syscalls that change a file's
/// mode, owner, times or extended attributes, and the `chattr` ioctls. Everything else
/// is allowed. A syscall made under a foreign architecture (e.g. 32-bit x86 binaries)
/// kills the process, and x32-ABI syscalls fail with `EPERM`.
pub(super) fn filter(
    block_net: bool,
    block_metadata: bool,
) -> Result<Vec<libc::sock_filter>, SandboxError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    if block_net {
        let not_unix = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )?;
        rules.insert(libc::SYS_socket, vec![SeccompRule::new(vec![not_unix])?]);
        // An empty rule list matches unconditionally.
        rules.insert(libc::SYS_io_uring_setup, vec![]);
    }
    if block_metadata {
        for &nr in METADATA_SYSCALLS {
            rules.insert(nr, vec![]);
        }
        let mut ioctls = Vec::new();
        for request in SETFLAGS_IOCTLS {
            let cond =
                SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, request)?;
            ioctls.push(SeccompRule::new(vec![cond])?);
        }
        rules.insert(libc::SYS_ioctl, ioctls);
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    let program: BpfProgram = filter.try_into()?;
    let mut out = x32_guard();
    out.extend(program.iter().map(|i| libc::sock_filter {
        code: i.code,
        jt: i.jt,
        jf: i.jf,
        k: i.k,
    }));
    if out.len() > BPF_MAXINSNS {
        return Err(SandboxError::Seccomp(
            seccompiler::BackendError::FilterTooLarge(out.len()),
        ));
    }
    Ok(out)
}

/// x32 syscalls share `AUDIT_ARCH_X86_64` but carry bit 30 in the number, so they
/// would not match the rules above: refuse them all.
#[cfg(target_arch = "x86_64")]
fn x32_guard() -> Vec<libc::sock_filter> {
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    let stmt = |code: u32, k: u32| libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    };
    vec![
        // A = seccomp_data.nr
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0),
        // if A >= X32_SYSCALL_BIT fall through to the RET below, else skip it
        libc::sock_filter {
            code: (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16,
            jt: 0,
            jf: 1,
            k: X32_SYSCALL_BIT,
        },
        stmt(
            libc::BPF_RET | libc::BPF_K,
            libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
        ),
    ]
}

#[cfg(not(target_arch = "x86_64"))]
fn x32_guard() -> Vec<libc::sock_filter> {
    Vec::new()
}
