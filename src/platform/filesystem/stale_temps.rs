//! Removing the temp files a killed run left behind. A start reads the project's
//! writers directory ([`super::writers`]): when every process that announced writing
//! there has ended cleanly, there is nothing to remove and nothing is walked. Otherwise
//! (a writer that is gone, or a project with no writers directory yet) every workspace
//! root is walked (links not followed, `.git` and `node_modules` skipped, a bounded
//! number of entries) for Troupe's own temp names (`.troupe-write-*`) written before
//! this process started by a process that is gone; each is removed relative to its
//! directory's descriptor, opened beneath the root.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::atomic_write::{temp_owner, TEMP_PREFIX};
use super::confined::Confined;
use super::writers::{self, Found};

/// At most this many entries are visited per sweep.
const MAX_VISITED: usize = 200_000;

/// The sweep of [`remove_stale_temps`] running on a thread of its own, so that a large
/// workspace does not delay the start of a session; [`Sweep::finished`] waits for it.
pub struct Sweep(Option<tokio::sync::oneshot::Receiver<usize>>);

impl Sweep {
    /// Starts the sweep of `confined`'s roots for temps written before `started`: only
    /// when `writers` (the project's writers directory, read here: a few names) says
    /// one is needed, always when there is none. No thread starts when none is needed.
    pub fn start(
        confined: std::sync::Arc<Confined>,
        started: SystemTime,
        writers: Option<PathBuf>,
    ) -> Self {
        let found = match &writers {
            Some(dir) => writers::inspect(dir),
            None => Found::NoJournal,
        };
        if found == Found::Clean {
            return Self(None);
        }
        let (done, finished) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("troupe-sweep".into())
            .spawn(move || {
                let removed = remove_stale_temps(&confined, started);
                if let Some(dir) = writers {
                    forget_swept_writers(&confined, &dir, found);
                }
                let _ = done.send(removed);
            });
        Self(spawned.is_ok().then_some(finished))
    }

    /// How many stale temps the sweep removed, once it is over (0 when it could not run).
    pub async fn finished(&mut self) -> usize {
        match self.0.take() {
            Some(finished) => finished.await.unwrap_or(0),
            None => 0,
        }
    }
}

/// After a sweep: makes the writers directory (a project's first sweep) and forgets
/// the writers whose roots were all swept (a writer that also wrote into a root this
/// workspace does not have stays, for a start that has that root).
fn forget_swept_writers(confined: &Confined, writers: &Path, found: Found) {
    if let Err(e) = std::fs::create_dir_all(writers) {
        tracing::warn!(path = %writers.display(), error = %e, "no writers directory");
    }
    let Found::Stale(stale) = found else {
        return;
    };
    let roots = confined.roots();
    for writer in stale {
        if writer.roots.iter().all(|r| roots.contains(r)) {
            let _ = std::fs::remove_file(&writer.file);
        }
    }
}

/// Removes stale temp files under every root; returns how many were removed.
pub fn remove_stale_temps(confined: &Confined, started: SystemTime) -> usize {
    let mut removed = 0;
    let mut visited = 0;
    for (index, root) in confined.roots().iter().enumerate() {
        let walker = crate::platform::ignore_rules::pruned_walk(root);
        for entry in walker.flatten() {
            visited += 1;
            if visited > MAX_VISITED {
                return removed;
            }
            let Some(name) = entry.file_name().to_str() else {
                continue;
            };
            if !name.starts_with(TEMP_PREFIX) || !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            if !is_stale(entry.path(), name, started) {
                continue;
            }
            if remove_beneath(confined, index, root, entry.path()) {
                removed += 1;
            }
        }
    }
    if removed > 0 {
        tracing::info!(removed, "removed temp files left by an earlier run");
    }
    removed
}

/// Written before `started` by a process that no longer runs (or by this one's pid
/// reused: a process cannot have written it before it started).
fn is_stale(path: &Path, name: &str, started: SystemTime) -> bool {
    let older = std::fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .is_ok_and(|m| m < started);
    if !older {
        return false;
    }
    match temp_owner(name) {
        Some(pid) if pid != std::process::id() => !Path::new(&format!("/proc/{pid}")).exists(),
        _ => true,
    }
}

fn remove_beneath(confined: &Confined, root_index: usize, root: &Path, path: &Path) -> bool {
    let (Ok(rel), Some(name)) = (path.strip_prefix(root), path.file_name()) else {
        return false;
    };
    let at = super::confined::Located {
        root: root_index,
        rel: rel.parent().map(Path::to_path_buf).unwrap_or_default(),
    };
    let Ok(dir) = confined.open_located(&at, super::confined::OpenMode::Directory) else {
        return false;
    };
    rustix::fs::unlinkat(&dir, name, rustix::fs::AtFlags::empty()).is_ok()
}
