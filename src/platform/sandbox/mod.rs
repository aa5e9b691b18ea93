//! Kernel sandbox for child processes. By default ([`ProtectionStrategy::Auto`], when
//! [`world_support`] finds namespaces usable) a command runs in an allow-listed world
//! (`world`, `world_child`): fresh mount, PID, IPC, UTS (and user) namespaces whose
//! root holds only the system directories, the toolchains, the workspace roots, a
//! private `/tmp`, `/dev` and `/proc`, with Landlock (`landlock_raw`) and seccomp
//! inside. Without namespaces, the fallback described below applies Landlock
//! (filesystem, plus TCP and scopes where the ABI allows), seccomp (network), and in
//! `workspace-write` a private mount namespace that keeps `.git`, `.troupe`, `.agents` and
//! `.gemini` read-only, over the host's whole filesystem.
//!
//! Everything that allocates or opens paths happens in the parent in
//! [`SandboxPolicy::prepare`]. The hook installed by [`PreparedSandbox::apply_to`]
//! runs in the child between `fork` and `exec` and only issues raw syscalls on
//! memory owned by the [`PreparedSandbox`]: optional `unshare` + `mount`, capability
//! drops (privileged parent only), `prctl(PR_SET_NO_NEW_PRIVS)`,
//! `landlock_restrict_self` and `seccomp(SECCOMP_SET_MODE_FILTER)`. For
//! `tokio::process::Command` use `sandbox.apply_to(cmd.as_std_mut())`.
//!
//! # Policy
//! * **read-only**: read everywhere except `deny_read`; write only the devices in
//!   [`WRITABLE_DEVICES`] and pipes (not path-based); no change of any file's mode,
//!   owner, times or extended attributes (seccomp: Landlock does not cover them);
//!   execute only beneath
//!   [`SYSTEM_EXEC_DIRS`] (so toolchains installed in `$HOME`, e.g. rustup or pyenv
//!   shims, cannot start); no network whatever `network` says. `bash script.sh` and
//!   `ld.so ./binary` still run workspace code (they only *read* it), under the same
//!   restrictions. Signals to processes outside the sandbox are refused (ABI >= 6).
//! * **workspace-write**: as above, plus execute anywhere readable, plus write
//!   beneath the workspace roots, `writable_roots` and [`std::env::temp_dir`],
//!   except the [`PROTECTED_SUBDIRS`] directly inside each workspace root.
//! * **off**: no sandbox ([`SandboxPolicy::prepare`] returns `None`).
//!
//! Without network, `socket()` for any domain but `AF_UNIX` and `io_uring_setup()`
//! fail with `EPERM`, TCP bind/connect are also denied by Landlock (ABI >= 4) and
//! abstract UNIX sockets created outside the sandbox are unreachable (ABI >= 6).
//! Syscalls of a foreign architecture (32-bit x86 binaries) kill the process.
//!
//! Raw block devices and `/dev/{mem,kmem,port}` are never readable (as root they
//! would bypass `deny_read`); creating device nodes is never allowed; `/dev/shm` is
//! not writable.
//!
//! # Protected subdirectories
//! Landlock cannot subtract a subtree: a rule allowing file creation in a workspace
//! root also allows it in `root/.git/hooks`. So by default ([`ProtectionStrategy::Auto`])
//! each child gets a private mount namespace (plain if the parent has
//! `CAP_SYS_ADMIN`, else inside a user namespace mapping only the caller's uid/gid)
//! in which existing protected paths are bind-mounted read-only (`EROFS`; renaming
//! or deleting them gives `EBUSY`). A protected directory that does **not exist** at
//! `prepare()` time can then be created by the child. When namespaces are
//! unavailable, [`ProtectionStrategy::Enumerate`] is used: every entry of the root
//! except the protected ones is granted, and nothing can be created, deleted or
//! renamed directly in the workspace root (only inside its existing subdirectories
//! and existing files).
//!
//! # Caveats
//! * Landlock does not cover metadata: in `workspace-write` a child may still change
//!   the mode, owner (as root), times and extended attributes of files it can reach
//!   outside the writable roots (`chmod`, `touch` of an existing file). `read-only`
//!   refuses those syscalls with seccomp.
//! * Exclusions (deny_read, block devices, and protected subdirectories with
//!   enumeration) are implemented by enumerating the excluded paths' ancestors at
//!   `prepare()` time. Entries created later in such an ancestor directory get no
//!   access at all, the ancestors themselves only get `ReadDir` (names inside a
//!   denied directory remain listable; contents are not readable), and no entry can
//!   be created directly in an ancestor directory. Prepare once per spawn.
//! * `/proc` is granted as a whole (the child's own `/proc/<pid>` does not exist at
//!   `prepare()` time, so excluding the parent's entry by enumeration breaks
//!   `/proc/self`). The parent's `environ`, `maps`, `auxv`, `mem`, `fd/`, `cwd` are
//!   refused by Landlock's ptrace scoping, but `CAP_PERFMON`/`CAP_SYS_ADMIN` bypass
//!   it for `environ`/`maps`/`auxv`: a root parent's child therefore sheds all
//!   capabilities but a small Docker-like set. `cmdline` and `status` of every
//!   process stay readable: never put secrets in argv.
//! * `PR_SET_NO_NEW_PRIVS` is always set: setuid programs (`sudo`) do not elevate.
//!   Do not combine with `Command::uid`/`gid` (they run before the hook).

mod child;
pub mod denial;
mod landlock_raw;
mod rules;
mod seccomp;
pub mod session;
mod world;
mod world_child;
mod world_paths;
mod world_probe;

pub use world_probe::world_support;
use world_probe::FileIdentity;

pub use world::{remove_private_tmp, SYSTEM_ROOTS, TOOLCHAIN_ROOTS};

use std::fmt;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

use landlock::AccessFs;

use child::{CapDrop, ChildPlan, NsPlan};
use rules::{path_err, RuleBuilder, DEVICE_RW, READ};

/// Variables that name a socket or agent of the host (terminal multiplexers, ssh and
/// gpg agents, the session bus, docker, the display): not passed to a command in the
/// allow-listed world, where those sockets do not exist, unless `[environment] pass`
/// names them.
pub const HOST_SOCKET_VARS: [&str; 14] = [
    "TMUX",
    "TMUX_PANE",
    "STY",
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "DBUS_SESSION_BUS_ADDRESS",
    "DOCKER_HOST",
    "XDG_RUNTIME_DIR",
    "WAYLAND_DISPLAY",
    "DISPLAY",
    "XAUTHORITY",
    "ZELLIJ",
    "KITTY_LISTEN_ON",
];

/// Directories directly inside each workspace root that stay read-only in
/// `workspace-write`: `.git` and the configuration folders of the trust pin
/// (`.troupe`, `.gemini`, `.agents`, whose skills a later run would load).
pub const PROTECTED_SUBDIRS: [&str; 4] = {
    let [troupe, gemini, agents] = crate::settings::trust::pin::CONFIG_DIRS;
    [".git", troupe, gemini, agents]
};

/// The only places where programs may be executed in `read-only` mode (those that
/// exist).
pub const SYSTEM_EXEC_DIRS: [&str; 9] = [
    "/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/opt", "/nix", "/etc",
];

/// Devices that are writable in every mode.
pub const WRITABLE_DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// Errors raised while preparing a sandbox.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The kernel has no usable Landlock: the caller must not pretend to sandbox.
    #[error("Landlock is not available on this kernel: cannot sandbox child processes")]
    Unavailable,
    /// [`ProtectionStrategy::MountNamespace`] was required but namespaces cannot be used.
    #[error("mount namespaces are unavailable: cannot keep protected subdirectories read-only")]
    NamespaceUnavailable,
    /// Unknown sandbox mode name.
    #[error("unknown sandbox mode {0:?} (expected read-only, workspace-write or off)")]
    InvalidMode(String),
    /// A path of the policy could not be used.
    #[error("sandbox path {}: {source}", path.display())]
    Path {
        /// The offending path.
        path: PathBuf,
        /// Underlying error.
        #[source]
        source: io::Error,
    },
    /// The Landlock ruleset could not be built.
    #[error("building the Landlock ruleset: {0}")]
    Landlock(#[from] landlock::RulesetError),
    /// The seccomp program could not be built.
    #[error("building the seccomp filter: {0}")]
    Seccomp(#[from] seccompiler::BackendError),
    /// Other system error.
    #[error("sandbox: {0}")]
    Io(#[from] io::Error),
}

/// How child processes are confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SandboxMode {
    /// Read everywhere (except `deny_read`), write nowhere, no network.
    ReadOnly,
    /// Read everywhere, write in the workspace and temp dir, network per policy.
    WorkspaceWrite,
    /// No sandbox.
    Off,
}

impl FromStr for SandboxMode {
    type Err = SandboxError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "read-only" => Ok(SandboxMode::ReadOnly),
            "workspace-write" => Ok(SandboxMode::WorkspaceWrite),
            "off" => Ok(SandboxMode::Off),
            other => Err(SandboxError::InvalidMode(other.to_owned())),
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::Off => "off",
        })
    }
}

/// What a sandboxed child may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// The mode.
    pub mode: SandboxMode,
    /// Writable in `workspace-write`, except [`PROTECTED_SUBDIRS`]. Must exist.
    pub workspace_roots: Vec<PathBuf>,
    /// Extra writable directories (setting `sandbox.writable_roots`); missing ones are
    /// skipped. The temp dir is always added in `workspace-write`.
    pub writable_roots: Vec<PathBuf>,
    /// Network access in `workspace-write` (`read-only` never has any). When false,
    /// `socket()` fails with `EPERM` for every domain but `AF_UNIX`.
    pub network: bool,
    /// Never readable (nor writable, nor executable) in any mode; missing ones are
    /// skipped. (Only the host-world fallback needs it: the allow-listed world shows
    /// none of them.)
    pub deny_read: Vec<PathBuf>,
    /// Shown read-only in the allow-listed world besides the system directories and
    /// [`TOOLCHAIN_ROOTS`] (setting `sandbox.readable_roots`); missing ones skipped.
    pub readable_roots: Vec<PathBuf>,
    /// The user's home directory: the world holds it empty but for the toolchains.
    pub home: PathBuf,
}

impl SandboxPolicy {
    /// The usual `deny_read` list: Troupe's home, `~/.ssh`, `~/.gnupg`, `~/.aws`,
    /// `~/.config/gcloud`.
    pub fn default_deny_read(home: &Path, troupe_home: &Path) -> Vec<PathBuf> {
        let mut v = vec![troupe_home.to_path_buf()];
        v.extend([".ssh", ".gnupg", ".aws", ".config/gcloud"].map(|p| home.join(p)));
        v
    }

    /// Builds the sandbox in the parent (ruleset populated, seccomp compiled) with
    /// [`ProtectionStrategy::Auto`]. `None` for [`SandboxMode::Off`].
    pub fn prepare(&self) -> Result<Option<PreparedSandbox>, SandboxError> {
        self.prepare_with(ProtectionStrategy::Auto)
    }

    /// Like [`SandboxPolicy::prepare`] with an explicit way of protecting
    /// [`PROTECTED_SUBDIRS`].
    pub fn prepare_with(
        &self,
        strategy: ProtectionStrategy,
    ) -> Result<Option<PreparedSandbox>, SandboxError> {
        let read_only = match self.mode {
            SandboxMode::Off => return Ok(None),
            SandboxMode::ReadOnly => true,
            SandboxMode::WorkspaceWrite => false,
        };
        let abi = landlock_abi().ok_or(SandboxError::Unavailable)?;
        let block_net = read_only || !self.network;
        if strategy == ProtectionStrategy::Auto {
            if let Some(user_ns) = world_support() {
                return self.prepare_world(abi, user_ns, block_net, read_only);
            }
        }
        let protection = protection_for(read_only, strategy)?;

        let mut deny: Vec<PathBuf> = self
            .deny_read
            .iter()
            .filter_map(|p| p.canonicalize().ok())
            .collect();
        deny.extend(rules::sensitive_devices());

        let mut b = RuleBuilder::new(block_net, read_only)?;
        grant_reads(&mut b, read_only, &deny)?;
        let ro_binds = if read_only {
            Vec::new()
        } else {
            self.grant_writes(&mut b, deny, protection)?
        };

        let rule_count = b.rules();
        let ruleset_fd = b.finish()?.ok_or(SandboxError::Unavailable)?;
        let ns = match protection {
            Protection::MountNamespace | Protection::UserNamespace if !ro_binds.is_empty() => {
                let user_ns = protection == Protection::UserNamespace;
                Some(NsPlan::new(user_ns, &ro_binds).map_err(SandboxError::Io)?)
            }
            _ => None,
        };
        let seccomp = if block_net || read_only {
            Some(seccomp::filter(block_net, read_only)?)
        } else {
            None
        };
        Ok(Some(PreparedSandbox {
            plan: Arc::new(ChildPlan {
                ruleset_fd: Some(ruleset_fd),
                world: None,
                seccomp,
                ns,
                caps: CapDrop::for_current_process(),
            }),
            abi,
            protection,
            rule_count,
            protected_at_prepare: Vec::new(),
        }))
    }

    /// `workspace-write`: the workspace roots, the extra writable roots and the temp
    /// dir granted writable (less `deny`); returns the protected subdirectories that
    /// exist, to be bound read-only, unless `protection` is enumeration (then they
    /// are left out of the grants).
    fn grant_writes(
        &self,
        b: &mut RuleBuilder,
        deny: Vec<PathBuf>,
        protection: Protection,
    ) -> Result<Vec<PathBuf>, SandboxError> {
        let mut ro_binds = Vec::new();
        let mut write_deny = deny;
        let mut roots = Vec::new();
        for root in &self.workspace_roots {
            let root = root.canonicalize().map_err(|e| path_err(root, e))?;
            for sub in PROTECTED_SUBDIRS {
                let p = root.join(sub);
                let exists = p.symlink_metadata().is_ok();
                let p = p.canonicalize().unwrap_or(p);
                if protection == Protection::Enumeration {
                    write_deny.push(p);
                } else if exists {
                    ro_binds.push(p);
                }
            }
            roots.push(root);
        }
        let extra = self.writable_roots.iter().cloned();
        roots.extend(
            extra
                .chain([std::env::temp_dir()])
                .filter_map(|p| p.canonicalize().ok()),
        );
        for root in &roots {
            b.grant(root, rules::write_rights(), &write_deny)?;
        }
        Ok(ro_binds)
    }
}

/// How the protected subdirectories are kept read-only: not at all in `read-only`,
/// else as `strategy` asks and the kernel allows (namespaces probed once).
fn protection_for(
    read_only: bool,
    strategy: ProtectionStrategy,
) -> Result<Protection, SandboxError> {
    Ok(match (read_only, strategy) {
        (true, _) => Protection::NotNeeded,
        (false, ProtectionStrategy::Enumerate) => Protection::Enumeration,
        (false, _) => match (strategy, child::namespace_support()) {
            (_, Some(false)) => Protection::MountNamespace,
            (_, Some(true)) => Protection::UserNamespace,
            (ProtectionStrategy::MountNamespace, None) => {
                return Err(SandboxError::NamespaceUnavailable)
            }
            (_, None) => Protection::Enumeration,
        },
    })
}

/// The read (and execute) grants: everything but `deny` readable, executable only in
/// the system directories in `read-only` and everywhere otherwise, and the usual
/// devices writable.
fn grant_reads(b: &mut RuleBuilder, read_only: bool, deny: &[PathBuf]) -> Result<(), SandboxError> {
    if read_only {
        b.grant(Path::new("/"), READ, deny)?;
        for dir in SYSTEM_EXEC_DIRS {
            if let Ok(dir) = Path::new(dir).canonicalize() {
                b.grant(&dir, READ | AccessFs::Execute, deny)?;
            }
        }
    } else {
        b.grant(Path::new("/"), READ | AccessFs::Execute, deny)?;
    }
    for dev in WRITABLE_DEVICES {
        b.grant(Path::new(dev), DEVICE_RW, deny)?;
    }
    Ok(())
}

/// How [`PROTECTED_SUBDIRS`] are kept read-only in `workspace-write`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProtectionStrategy {
    /// A mount namespace when available (probed once), else enumeration.
    #[default]
    Auto,
    /// Require a mount namespace (plain when privileged, else inside a user namespace).
    MountNamespace,
    /// Landlock-only: grant each entry of a workspace root except the protected ones.
    /// No new entry can then be created directly in a workspace root.
    Enumerate,
}

/// How [`PROTECTED_SUBDIRS`] are actually protected by a [`PreparedSandbox`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protection {
    /// `read-only` mode: nothing is writable anyway.
    NotNeeded,
    /// Read-only bind mounts in a private mount namespace (privileged parent).
    MountNamespace,
    /// Read-only bind mounts in a private user + mount namespace.
    UserNamespace,
    /// Landlock rules enumerating the workspace roots' entries.
    Enumeration,
    /// The allow-listed world: existing ones bound read-only, and one a command
    /// creates moved aside when the command ends.
    World,
}

/// A sandbox ready to be applied to any number of children. Cheap to clone.
#[derive(Clone)]
pub struct PreparedSandbox {
    plan: Arc<ChildPlan>,
    abi: u8,
    protection: Protection,
    rule_count: usize,
    /// Each protected subdirectory of the workspace roots, and which file it was when
    /// the sandbox was prepared (`None`: absent).
    protected_at_prepare: Vec<(PathBuf, Option<FileIdentity>)>,
}

impl fmt::Debug for PreparedSandbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreparedSandbox")
            .field("landlock_abi", &self.abi)
            .field("protection", &self.protection)
            .field("rule_count", &self.rule_count)
            .field("seccomp", &self.plan.seccomp.is_some())
            .finish()
    }
}

impl PreparedSandbox {
    /// Installs the sandbox as a `pre_exec` hook of `cmd`. For
    /// `tokio::process::Command`, pass `cmd.as_std_mut()`.
    pub fn apply_to(&self, cmd: &mut Command) {
        let hook = self.pre_exec_hook();
        // SAFETY: the hook only performs async-signal-safe raw syscalls on memory that
        // was prepared by the parent and is kept alive by the closure.
        unsafe {
            cmd.pre_exec(hook);
        }
    }

    /// The child-side hook, for `pre_exec` APIs other than `std`'s.
    pub fn pre_exec_hook(&self) -> impl FnMut() -> io::Result<()> + Send + Sync + 'static {
        let plan = Arc::clone(&self.plan);
        move || plan.apply()
    }

    /// Landlock ABI of the running kernel (rights beyond it are silently dropped).
    pub fn landlock_abi(&self) -> u8 {
        self.abi
    }

    /// How protected subdirectories are enforced.
    pub fn protection(&self) -> Protection {
        self.protection
    }

    /// Number of Landlock rules in the ruleset (of host trees bound, in a world).
    pub fn rule_count(&self) -> usize {
        self.rule_count
    }

    /// Whether the command runs in the allow-listed world (fresh namespaces).
    pub fn is_world(&self) -> bool {
        self.plan.world.is_some()
    }
}

/// What the kernel offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxStatus {
    /// Landlock ABI version; `None`: not available.
    pub landlock_abi: Option<u8>,
}

/// Reports sandbox support on this machine.
pub fn status() -> SandboxStatus {
    SandboxStatus {
        landlock_abi: landlock_abi(),
    }
}

/// The kernel's Landlock ABI version (probed once); `None` when Landlock is absent
/// or disabled.
pub fn landlock_abi() -> Option<u8> {
    static ABI: OnceLock<Option<u8>> = OnceLock::new();
    *ABI.get_or_init(|| {
        const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1;
        // SAFETY: version query: null attributes, size 0.
        let v = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                LANDLOCK_CREATE_RULESET_VERSION,
            )
        };
        u8::try_from(v).ok().filter(|v| *v > 0)
    })
}
