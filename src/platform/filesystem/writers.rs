//! Which processes may have left temp files in a workspace: before its first temp file,
//! a process writes `<project temp>/writers/<pid>` (its start time and its roots), and
//! it removes that file when it ends cleanly. A killed process leaves its file behind,
//! so the next start knows whether the workspace needs a sweep for stale temps at all
//! ([`super::stale_temps`]), instead of walking a large tree on every start.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

/// The writers directories this process was started for, and whether it announced
/// itself in each yet. Process-wide, because the temp names are (they carry the pid).
static REGISTERED: Mutex<Vec<Registration>> = Mutex::new(Vec::new());

struct Registration {
    dir: PathBuf,
    roots: Vec<PathBuf>,
    announced: bool,
}

/// The writers directory of a project temp directory.
pub fn writers_dir(project_temp: &Path) -> PathBuf {
    project_temp.join("writers")
}

/// Registers `dir`: a temp file this process creates from now on is announced there
/// first. `roots` are the workspace roots the temps may land in.
pub fn register(dir: &Path, roots: &[PathBuf]) {
    let mut registered = REGISTERED.lock().unwrap_or_else(PoisonError::into_inner);
    if !registered.iter().any(|r| r.dir == dir) {
        registered.push(Registration {
            dir: dir.to_path_buf(),
            roots: roots.to_vec(),
            announced: false,
        });
    }
}

/// Temp files of this process that exist now (created, not yet renamed or removed).
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// A temp file in flight; dropped once the temp name is gone.
pub struct TempInFlight(());

impl Drop for TempInFlight {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Called before a temp file is created: writes this process's file into every
/// registered directory that does not hold it yet. A file that cannot be written is
/// logged (a temp this process then leaves behind waits for a start that sweeps for
/// another reason). Hold the guard until the temp name is gone.
pub fn announce() -> TempInFlight {
    let mut registered = REGISTERED.lock().unwrap_or_else(PoisonError::into_inner);
    // Counted under the lock, so that `withdraw` sees every temp about to be made.
    IN_FLIGHT.fetch_add(1, Ordering::AcqRel);
    let guard = TempInFlight(());
    for r in registered.iter_mut().filter(|r| !r.announced) {
        r.announced = true;
        let mut text = format!("start={}\n", start_ticks(std::process::id()).unwrap_or(0));
        for root in &r.roots {
            text.push_str(&root.to_string_lossy());
            text.push('\n');
        }
        let file = r.dir.join(std::process::id().to_string());
        let written = std::fs::create_dir_all(&r.dir).and_then(|()| std::fs::write(&file, text));
        if let Err(e) = written {
            tracing::warn!(path = %file.display(), error = %e, "could not announce a writer");
        }
    }
    guard
}

/// Removes this process's files at its end, unless a temp file is in flight (the exit
/// would leave it behind for the next start to remove). A write that starts afterwards
/// announces itself again.
pub fn withdraw() {
    let mut registered = REGISTERED.lock().unwrap_or_else(PoisonError::into_inner);
    if IN_FLIGHT.load(Ordering::Acquire) > 0 {
        return;
    }
    for r in registered.iter_mut().filter(|r| r.announced) {
        r.announced = false;
        let _ = std::fs::remove_file(r.dir.join(std::process::id().to_string()));
    }
}

/// What a start finds in a writers directory.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// No directory: a project never started with the journal (or a new one); sweep.
    NoJournal,
    /// Files of processes that are gone: sweep, then remove those whose roots the sweep
    /// covered.
    Stale(Vec<StaleWriter>),
    /// Every file belongs to a running process: no sweep.
    Clean,
}

/// The file of a writer that ended without removing it.
#[derive(Debug, PartialEq, Eq)]
pub struct StaleWriter {
    pub file: PathBuf,
    pub roots: Vec<PathBuf>,
}

/// Reads `dir` (this process's own file is not stale).
pub fn inspect(dir: &Path) -> Found {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Found::NoJournal;
    };
    let mut stale = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        let mut lines = text.lines();
        let started: Option<u64> = lines
            .next()
            .and_then(|l| l.strip_prefix("start="))
            .and_then(|t| t.parse().ok());
        if is_running(pid, started) {
            continue;
        }
        stale.push(StaleWriter {
            file: entry.path(),
            roots: lines.map(PathBuf::from).collect(),
        });
    }
    if stale.is_empty() {
        Found::Clean
    } else {
        Found::Stale(stale)
    }
}

/// The process `pid` runs and, when its start time was recorded, is the same process
/// (not a later one given the same pid).
fn is_running(pid: u32, started: Option<u64>) -> bool {
    match (start_ticks(pid), started) {
        (None, _) => false,
        (Some(_), None | Some(0)) => true,
        (Some(now), Some(then)) => now == then,
    }
}

/// A process's start time in clock ticks after boot (`/proc/<pid>/stat`, field 22).
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    crate::engine::proc_stat::fields_after_name(&stat)?
        .nth(19)?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_start_time_is_read_and_a_missing_process_is_not_running() {
        let me = std::process::id();
        let ticks = start_ticks(me).expect("own /proc stat");
        assert!(is_running(me, Some(ticks)));
        assert!(!is_running(me, Some(ticks + 1)), "a reused pid passes");
        assert!(!is_running(u32::MAX - 1, None));
    }

    #[test]
    fn inspect_tells_no_journal_clean_and_stale_apart() {
        let dir = tempfile::tempdir().expect("tempdir");
        let writers = dir.path().join("writers");
        assert_eq!(inspect(&writers), Found::NoJournal);
        std::fs::create_dir(&writers).expect("mkdir");
        let me = std::process::id();
        std::fs::write(writers.join(me.to_string()), "start=1\n/x\n").expect("write");
        let live = start_ticks(1).map(|t| format!("start={t}\n/y\n"));
        if let Some(text) = &live {
            std::fs::write(writers.join("1"), text).expect("write");
        }
        std::fs::write(writers.join("notes.txt"), "not a writer").expect("write");
        assert_eq!(inspect(&writers), Found::Clean);
        let gone = writers.join((u32::MAX - 1).to_string());
        std::fs::write(&gone, "start=5\n/a\n/b\n").expect("write");
        assert_eq!(
            inspect(&writers),
            Found::Stale(vec![StaleWriter {
                file: gone,
                roots: vec![PathBuf::from("/a"), PathBuf::from("/b")],
            }])
        );
    }
}
