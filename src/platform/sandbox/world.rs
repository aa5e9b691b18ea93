//! The allow-listed world a sandboxed command sees (parent side).
//!
//! A command does not start from the machine and lose parts of it: it starts from an
//! empty root and gets only what [`WorldPlan::build`] lists — the system directories
//! read-only, the developer toolchains of [`TOOLCHAIN_ROOTS`] and
//! `sandbox.readable_roots` read-only, the workspace roots (writable in
//! `workspace-write`), `sandbox.writable_roots`, a private `/tmp`, a private `/dev`
//! (null, zero, full, random, urandom, tty, its own pseudo-terminals, shared memory)
//! and its own `/proc`. Nothing else of `HOME` exists in it, and no socket of the host:
//! not `/run`, not `/var/run`, not the user's `/tmp`.
//!
//! Everything is decided and allocated here; [`super::world_child`] only carries the
//! plan out between `fork` and `exec`.

use std::ffi::CString;
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::AtomicI32;

use super::child::{c_path, IdMaps};
use super::landlock_raw::{self, InsideRules};
pub(super) use super::world_paths::private_tmp;
pub use super::world_paths::remove_private_tmp;
use super::world_paths::{
    denied_inside, env_files, protect_subdirs, scaffold_under_tmp, secret_files,
};
use super::{SandboxError, SandboxMode, SandboxPolicy};

/// Where the new root is assembled before `pivot_root` (a tmpfs mounted over it in the
/// command's own mount namespace; the host's directory is untouched).
pub(super) const STAGE: &str = "/tmp";

/// Top-level system directories shown read-only (those that exist; a symbolic link
/// such as `/bin -> usr/bin` is recreated as the same link).
pub const SYSTEM_ROOTS: [&str; 10] = [
    "/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/opt", "/nix", "/etc",
];

/// Directories of `HOME` shown read-only by default: the toolchains that `cargo build`,
/// `pip install -e .`, `python3 -m pytest`, `npm test`, `go test` and `git commit`
/// were seen to read (docs/security.md), where they exist.
pub const TOOLCHAIN_ROOTS: [&str; 14] = [
    ".cargo",
    ".rustup",
    ".pyenv",
    ".nvm",
    ".local/bin",
    ".local/lib",
    ".cache/pip",
    ".gitconfig",
    ".config/git",
    "go/pkg/mod",
    ".cache/go-build",
    ".rbenv",
    ".bun",
    ".deno",
];

/// Files inside the shown directories that hold secrets and are shown empty.
pub(super) const SECRET_FILES: [&str; 8] = [
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
    "~/.config/git/credentials",
    "~/.pyenv/.netrc",
];

/// Devices of the private `/dev`, bound from the host's (character devices that
/// reach no hardware and no terminal).
const DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// At most this many `.env*` files of a workspace are hidden from `read-only`
/// commands; past it the walk stops (and says so in the log).
pub(super) const MAX_ENV_MASKS: usize = 256;

/// One step of building the new root, in order. Paths are inside the staging root.
pub(super) enum MountOp {
    /// `mkdir` (an existing directory is fine).
    Dir(CString),
    /// An empty regular file to bind a file onto.
    File(CString),
    /// A symbolic link `link -> target`.
    Symlink { target: CString, link: CString },
    /// A copy of the host's mount tree at `src` (opened before the staging tmpfs
    /// hides anything), made read-only when asked, attached at `dst`. `slot` is its
    /// index in [`WorldPlan::trees`].
    Bind {
        src: CString,
        dst: CString,
        read_only: bool,
        /// Device nodes stay usable (only the devices of the private `/dev`).
        devices: bool,
        slot: usize,
        /// Whether its mount point is made (on the new root's tmpfs), and how.
        mountpoint: Mountpoint,
        /// A missing source fails the command (a workspace root, the private
        /// `/tmp`); any other bind whose source or mount point vanished after
        /// planning is left out, and nothing is made in its place.
        required: bool,
    },
    /// A fresh tmpfs with these mount options.
    Tmpfs { dst: CString, options: CString },
    /// An empty, read-only directory over a denied one.
    EmptyDir(CString),
    /// The command's own `/proc` (mounted from inside its PID namespace).
    Proc(CString),
    /// A new pseudo-terminal instance (`/dev/pts`), with `/dev/ptmx` linked to it.
    Devpts(CString),
}

/// The mount point of a bind.
#[derive(Clone, Copy)]
pub(super) enum Mountpoint {
    /// Made on the new root's tmpfs: a directory, or an empty file.
    Make { dir: bool },
    /// Inside a tree bound from the host: it must already be there (nothing is ever
    /// created in a host tree).
    Existing,
}

/// Everything the child needs to build the world and enter it.
pub(super) struct WorldPlan {
    pub(super) ops: Vec<MountOp>,
    /// Filled in by the child: one descriptor per [`MountOp::Bind`].
    pub(super) trees: Vec<AtomicI32>,
    /// A user namespace too (the parent lacks `CAP_SYS_ADMIN`), with these maps.
    pub(super) user_ns: Option<IdMaps>,
    /// A network namespace with only loopback (no network).
    pub(super) net_ns: bool,
    /// The Landlock layer applied inside the world.
    pub(super) landlock: InsideRules,
    /// Scaffolds remounted read-only once everything is mounted.
    pub(super) read_only_after: Vec<CString>,
    /// Where this process's argument strings are (`arg_start`, `arg_end`), for the
    /// helper processes to rename themselves.
    pub(super) argv_area: Option<(usize, usize)>,
}

/// What a plan is built from: the policy plus where `HOME` and the private `/tmp` are.
pub(super) struct WorldInputs<'a> {
    pub(super) policy: &'a SandboxPolicy,
    pub(super) home: &'a Path,
    pub(super) private_tmp: &'a Path,
    pub(super) abi: u8,
    pub(super) user_ns: bool,
}

/// Collects mount targets, then orders them so that a parent is mounted before
/// anything beneath it.
#[derive(Default)]
pub(super) struct Targets {
    pub(super) entries: Vec<Target>,
}

pub(super) struct Target {
    pub(super) path: PathBuf,
    pub(super) kind: TargetKind,
}

pub(super) enum TargetKind {
    Bind {
        src: PathBuf,
        read_only: bool,
        required: bool,
    },
    /// A tmpfs holding only the mount points beneath it, read-only once they are made
    /// (the parents of a workspace that lies in `/tmp`).
    Scaffold,
    Symlink(PathBuf),
    Tmpfs(&'static str),
    Proc,
    Devpts,
}

impl Targets {
    pub(super) fn bind(&mut self, src: &Path, dst: &Path, read_only: bool) {
        self.bind_as(src, dst, read_only, false);
    }

    /// A bind whose source missing at spawn time must fail the command.
    fn bind_required(&mut self, src: &Path, dst: &Path, read_only: bool) {
        self.bind_as(src, dst, read_only, true);
    }

    fn bind_as(&mut self, src: &Path, dst: &Path, read_only: bool, required: bool) {
        self.entries.retain(|t| t.path != dst);
        self.entries.push(Target {
            path: dst.to_path_buf(),
            kind: TargetKind::Bind {
                src: src.to_path_buf(),
                read_only,
                required,
            },
        });
    }

    fn push(&mut self, path: &str, kind: TargetKind) {
        self.entries.push(Target {
            path: PathBuf::from(path),
            kind,
        });
    }
}

impl WorldPlan {
    /// Plans the world of one command. Missing optional paths are left out; a
    /// workspace root that cannot be resolved is an error.
    pub(super) fn build(inputs: &WorldInputs<'_>) -> Result<Self, SandboxError> {
        let policy = inputs.policy;
        let writable = policy.mode == SandboxMode::WorkspaceWrite;
        let mut t = Targets::default();
        system_roots(&mut t);
        for rel in TOOLCHAIN_ROOTS {
            bind_existing(&mut t, &inputs.home.join(rel), true);
        }
        for root in &policy.readable_roots {
            bind_existing(&mut t, root, true);
        }
        t.bind_required(inputs.private_tmp, Path::new("/tmp"), !writable);
        t.push("/var/tmp", TargetKind::Symlink(PathBuf::from("/tmp")));
        for root in &policy.writable_roots {
            bind_existing(&mut t, root, !writable);
        }
        let mut workspaces = Vec::new();
        for root in &policy.workspace_roots {
            let root = root
                .canonicalize()
                .map_err(|e| super::rules::path_err(root, e))?;
            t.bind_required(&root, &root, !writable);
            workspaces.push(root);
        }
        if writable {
            for root in &workspaces {
                protect_subdirs(&mut t, root);
            }
        }
        private_dev(&mut t);
        t.push("/proc", TargetKind::Proc);
        let mut masks = secret_files(inputs.home);
        masks.extend(denied_inside(&t, &policy.deny_read));
        if !writable {
            for root in &workspaces {
                masks.extend(env_files(root));
            }
        }
        if policy.network && writable {
            resolv_conf(&mut t);
        }
        let mut plan = WorldPlan {
            ops: Vec::new(),
            trees: Vec::new(),
            user_ns: inputs.user_ns.then(IdMaps::current),
            // Without network the seccomp filter refuses every socket but AF_UNIX and
            // Landlock keeps abstract UNIX sockets inside (ABI 6): a network namespace
            // (about 1.3 ms a command) is needed only on older kernels.
            net_ns: !(policy.network && writable) && inputs.abi < 6,
            landlock: landlock_raw::inside_rules(inputs.abi, policy, &workspaces)?,
            read_only_after: Vec::new(),
            argv_area: argv_area(),
        };
        scaffold_under_tmp(&mut t, inputs.private_tmp)?;
        plan.emit(t, inputs.home, &masks)?;
        Ok(plan)
    }

    /// Turns the targets into ordered operations: the staging tmpfs, then every
    /// target after its ancestors (each ancestor directory created), then the masks.
    fn emit(&mut self, mut t: Targets, home: &Path, masks: &[PathBuf]) -> Result<(), SandboxError> {
        t.entries
            .sort_by(|a, b| a.path.components().cmp(b.path.components()));
        let mut made: Vec<PathBuf> = vec![PathBuf::from("/")];
        self.ops.push(MountOp::Dir(stage_path(Path::new("/"))?));
        // Each mounted target, and whether it is a tree of the host's.
        let mut mounted: Vec<(PathBuf, bool)> = Vec::new();
        for target in &t.entries {
            let in_host_tree = enclosing_is_host(&mounted, &target.path);
            if !in_host_tree {
                self.ancestors(&target.path, &mut made)?;
            }
            let dst = stage_path(&target.path)?;
            match &target.kind {
                TargetKind::Bind {
                    src,
                    read_only,
                    required,
                } => {
                    let mountpoint = if in_host_tree {
                        Mountpoint::Existing
                    } else {
                        let dir = fs::metadata(src).map(|m| m.is_dir()).unwrap_or(false);
                        Mountpoint::Make { dir }
                    };
                    self.push_bind(src, dst, *read_only, mountpoint, *required)?;
                }
                TargetKind::Symlink(to) => self.ops.push(MountOp::Symlink {
                    target: c_path(to).map_err(SandboxError::Io)?,
                    link: dst,
                }),
                TargetKind::Scaffold => {
                    self.ops.push(MountOp::Dir(dst.clone()));
                    self.ops.push(MountOp::Tmpfs {
                        dst: dst.clone(),
                        options: CString::new("mode=0755,size=64k").map_err(io_invalid)?,
                    });
                    self.read_only_after.push(dst);
                }
                TargetKind::Tmpfs(options) => {
                    self.ops.push(MountOp::Dir(dst.clone()));
                    self.ops.push(MountOp::Tmpfs {
                        dst,
                        options: CString::new(*options).map_err(io_invalid)?,
                    });
                }
                TargetKind::Proc => {
                    self.ops.push(MountOp::Dir(dst.clone()));
                    self.ops.push(MountOp::Proc(dst));
                }
                TargetKind::Devpts => {
                    self.ops.push(MountOp::Dir(dst.clone()));
                    self.ops.push(MountOp::Devpts(dst));
                }
            }
            let host = matches!(target.kind, TargetKind::Bind { .. });
            mounted.push((target.path.clone(), host));
            made.push(target.path.clone());
        }
        // HOME exists (empty but for the toolchains) so programs find their way.
        self.ancestors(&home.join("x"), &mut made)?;
        for mask in masks {
            let dst = stage_path(mask)?;
            if mask.is_dir() {
                self.ops.push(MountOp::EmptyDir(dst));
            } else {
                self.push_bind(
                    Path::new("/dev/null"),
                    dst,
                    true,
                    Mountpoint::Existing,
                    false,
                )?;
            }
        }
        Ok(())
    }

    fn push_bind(
        &mut self,
        src: &Path,
        dst: CString,
        read_only: bool,
        mountpoint: Mountpoint,
        required: bool,
    ) -> Result<(), SandboxError> {
        let slot = self.trees.len();
        self.trees.push(AtomicI32::new(-1));
        self.ops.push(MountOp::Bind {
            src: c_path(src).map_err(SandboxError::Io)?,
            dst,
            read_only,
            devices: src.starts_with("/dev/"),
            slot,
            mountpoint,
            required,
        });
        Ok(())
    }

    /// `Dir` operations for the ancestors of `path` not made yet.
    fn ancestors(&mut self, path: &Path, made: &mut Vec<PathBuf>) -> Result<(), SandboxError> {
        let mut acc = PathBuf::from("/");
        let Some(parent) = path.parent() else {
            return Ok(());
        };
        for part in parent.components() {
            if let Component::Normal(name) = part {
                acc.push(name);
                if !made.contains(&acc) {
                    self.ops.push(MountOp::Dir(stage_path(&acc)?));
                    made.push(acc.clone());
                }
            }
        }
        Ok(())
    }

    /// Number of host trees bound into the world.
    pub(super) fn bind_count(&self) -> usize {
        self.trees.len()
    }
}

/// This process's argument area, from `/proc/self/stat` (fields 48 and 49), read once.
fn argv_area() -> Option<(usize, usize)> {
    static AREA: std::sync::OnceLock<Option<(usize, usize)>> = std::sync::OnceLock::new();
    *AREA.get_or_init(|| {
        let stat = fs::read_to_string("/proc/self/stat").ok()?;
        let fields: Vec<&str> = crate::engine::proc_stat::fields_after_name(&stat)?.collect();
        // After the name, field 3 (state) is index 0: arg_start is field 48.
        let start = fields.get(45)?.parse().ok()?;
        let end = fields.get(46)?.parse().ok()?;
        (start > 0 && end > start).then_some((start, end))
    })
}

/// Whether the innermost mount already made above `path` is a tree of the host's
/// (then nothing may be created there: a missing mount point means the tree changed).
fn enclosing_is_host(mounted: &[(PathBuf, bool)], path: &Path) -> bool {
    mounted
        .iter()
        .filter(|(p, _)| path.starts_with(p) && p != path)
        .max_by_key(|(p, _)| p.components().count())
        .is_some_and(|(_, host)| *host)
}

/// The system directories: real ones bound read-only, links recreated.
fn system_roots(t: &mut Targets) {
    for dir in SYSTEM_ROOTS {
        let path = Path::new(dir);
        match fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => {
                if let Ok(to) = fs::read_link(path) {
                    t.push(dir, TargetKind::Symlink(to));
                }
            }
            Ok(m) if m.is_dir() => t.bind(path, path, true),
            _ => {}
        }
    }
}

/// Binds `path` at the same place when it exists (resolved: a toolchain reached
/// through a link is shown where the link points, and the link itself is recreated).
fn bind_existing(t: &mut Targets, path: &Path, read_only: bool) {
    let Ok(real) = path.canonicalize() else {
        return;
    };
    t.bind(&real, &real, read_only);
    if real != path && path.is_absolute() {
        t.entries.retain(|e| e.path != path);
        t.entries.push(Target {
            path: path.to_path_buf(),
            kind: TargetKind::Symlink(real),
        });
    }
}

/// `/dev`: a tmpfs holding the harmless devices, a new `devpts`, shared memory and
/// the usual links.
fn private_dev(t: &mut Targets) {
    t.push("/dev", TargetKind::Tmpfs("mode=0755,size=64k"));
    for dev in DEVICES {
        let path = Path::new(dev);
        if path.exists() {
            t.bind(path, path, false);
        }
    }
    t.push("/dev/pts", TargetKind::Devpts);
    t.push("/dev/shm", TargetKind::Tmpfs("mode=1777"));
    for (link, to) in [
        ("/dev/fd", "/proc/self/fd"),
        ("/dev/stdin", "/proc/self/fd/0"),
        ("/dev/stdout", "/proc/self/fd/1"),
        ("/dev/stderr", "/proc/self/fd/2"),
        ("/dev/ptmx", "pts/ptmx"),
    ] {
        t.push(link, TargetKind::Symlink(PathBuf::from(to)));
    }
}

/// With network: `/etc/resolv.conf` often links into `/run` (systemd-resolved),
/// which is not shown; the one file it names is.
fn resolv_conf(t: &mut Targets) {
    let link = Path::new("/etc/resolv.conf");
    let Ok(real) = link.canonicalize() else {
        return;
    };
    if !real.starts_with("/etc") && real.is_file() {
        t.bind(&real, &real, true);
    }
}

/// `path` inside the staging root.
fn stage_path(path: &Path) -> Result<CString, SandboxError> {
    let mut s = String::from(STAGE);
    if path != Path::new("/") {
        s.push_str(&path.to_string_lossy());
    }
    CString::new(s).map_err(io_invalid)
}

fn io_invalid(e: std::ffi::NulError) -> SandboxError {
    SandboxError::Io(std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
}
