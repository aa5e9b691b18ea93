//! The host paths a world is planned from: secrets shown empty, the `.env` files of a
//! workspace, and the private `/tmp` of this process.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::world::{Target, TargetKind, Targets, MAX_ENV_MASKS, SECRET_FILES};
use super::{SandboxError, PROTECTED_SUBDIRS};

/// The `deny_read` paths that a shown tree holds (a readable root that contains
/// `~/.ssh`, say): each is shown empty.
pub(super) fn denied_inside(t: &Targets, deny_read: &[PathBuf]) -> Vec<PathBuf> {
    let shown: Vec<&Path> = t
        .entries
        .iter()
        .filter_map(|e| match &e.kind {
            TargetKind::Bind { src, .. } => Some(src.as_path()),
            _ => None,
        })
        .collect();
    deny_read
        .iter()
        .filter_map(|p| p.canonicalize().ok())
        .filter(|p| shown.iter().any(|root| p.starts_with(root) && p != root))
        .collect()
}

/// The secret files of [`SECRET_FILES`] that exist.
pub(super) fn secret_files(home: &Path) -> Vec<PathBuf> {
    SECRET_FILES
        .iter()
        .map(|p| match p.strip_prefix("~/") {
            Some(rel) => home.join(rel),
            None => PathBuf::from(p),
        })
        .filter(|p| p.is_file())
        .filter_map(|p| p.canonicalize().ok())
        .collect()
}

/// `.env`, `.env.*` and `.envrc` files beneath a workspace root (ignore files not
/// honoured: a secret is usually ignored), hidden from `read-only` commands.
pub(super) fn env_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let walk = ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .filter_entry(|e| {
            let name = e.file_name();
            !(name == ".git" || name == "node_modules" || name == "target")
        })
        .build();
    for entry in walk.flatten() {
        let name = entry.file_name().to_string_lossy();
        let secret = name == ".env" || name.starts_with(".env.") || name == ".envrc";
        if secret && entry.file_type().is_some_and(|k| k.is_file()) {
            out.push(entry.into_path());
            if out.len() >= MAX_ENV_MASKS {
                tracing::warn!(root = %root.display(), "more than {MAX_ENV_MASKS} .env files: the rest stay readable");
                break;
            }
        }
    }
    out
}

/// The private `/tmp` of this process's commands: one directory (mode 0700) in
/// Troupe's home (`tmp/sandbox-<pid>-…`, which no command sees), shared by all
/// commands of the process so that a file one command leaves in `/tmp` is there for
/// the next. Removed by [`remove_private_tmp`]; those of processes that are gone are
/// removed when the next one starts.
pub(super) fn private_tmp() -> Result<&'static Path, SandboxError> {
    let dir = PRIVATE_TMP.get_or_init(|| {
        let parent = crate::settings::troupe_home().join("tmp");
        fs::create_dir_all(&parent).map_err(|e| e.to_string())?;
        remove_stale_private_tmps(&parent);
        tempfile::Builder::new()
            .prefix(&format!("sandbox-{}-", std::process::id()))
            .tempdir_in(&parent)
            .map(|d| d.keep())
            .map_err(|e| e.to_string())
    });
    match dir {
        Ok(p) => Ok(p.as_path()),
        Err(e) => Err(SandboxError::Io(std::io::Error::other(e.clone()))),
    }
}

/// Removes the `sandbox-<pid>-…` directories of processes that no longer run.
fn remove_stale_private_tmps(parent: &Path) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("sandbox-")
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only checks that the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if !alive {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

static PRIVATE_TMP: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// Removes the private `/tmp` when the process ends (best effort; nothing when no
/// command ran in a world).
pub fn remove_private_tmp() {
    if let Some(Ok(dir)) = PRIVATE_TMP.get() {
        let _ = fs::remove_dir_all(dir);
    }
}

/// A workspace (or another shown tree) beneath `/tmp` is shown inside the private
/// `/tmp`: its first directory there is a read-only scaffold (a tmpfs holding only
/// the mount points), so that `touch ../x` fails instead of writing somewhere the
/// user never sees. The scaffold's mount point is made in the private directory.
pub(super) fn scaffold_under_tmp(t: &mut Targets, private_tmp: &Path) -> Result<(), SandboxError> {
    let mut firsts: Vec<PathBuf> = Vec::new();
    for target in &t.entries {
        let Ok(rel) = target.path.strip_prefix("/tmp") else {
            continue;
        };
        let mut parts = rel.components();
        let Some(first) = parts.next() else {
            continue;
        };
        let first = Path::new("/tmp").join(first);
        let host = private_tmp.join(first.strip_prefix("/tmp").unwrap_or(&first));
        let is_file = matches!(&target.kind, TargetKind::Bind { src, .. } if src.is_file());
        if is_file && parts.next().is_none() {
            if !host.exists() {
                fs::File::create(&host).map_err(|e| super::rules::path_err(&host, e))?;
            }
            continue;
        }
        fs::create_dir_all(&host).map_err(|e| super::rules::path_err(&host, e))?;
        let deeper = rel.components().count() > 1;
        if deeper && !firsts.contains(&first) {
            firsts.push(first);
        }
    }
    for first in firsts {
        if !t.entries.iter().any(|e| e.path == first) {
            t.entries.push(Target {
                path: first,
                kind: TargetKind::Scaffold,
            });
        }
    }
    Ok(())
}

/// What of a writable workspace root stays read-only: `.troupe`, `.gemini` and `.agents` whole;
/// of `.git` the parts that name programs git runs — `config`, `hooks` (made, empty,
/// when missing, so that no command can add one) and the submodules' `modules` —
/// while objects, refs and the index stay writable so that `git commit` works.
pub(super) fn protect_subdirs(t: &mut Targets, root: &Path) {
    for sub in PROTECTED_SUBDIRS {
        let p = root.join(sub);
        if !p.symlink_metadata().is_ok_and(|m| m.is_dir()) {
            continue;
        }
        if sub != ".git" {
            t.bind(&p, &p, true);
            continue;
        }
        // A mount point itself, so that it cannot be renamed or removed (and a new
        // one made in its place).
        t.bind(&p, &p, false);
        let hooks = p.join("hooks");
        if hooks.symlink_metadata().is_err() {
            let _ = fs::create_dir(&hooks);
        }
        for part in GIT_PROGRAM_PARTS {
            let q = p.join(part);
            if q.symlink_metadata()
                .is_ok_and(|m| !m.file_type().is_symlink())
            {
                t.bind(&q, &q, true);
            }
        }
    }
}

/// The parts of a `.git` directory that make git run programs.
const GIT_PROGRAM_PARTS: [&str; 4] = ["config", "hooks", "modules", "info"];
