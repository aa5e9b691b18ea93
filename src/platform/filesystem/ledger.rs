//! The file ledger of an agent tree: who read which file last, and who wrote it last,
//! so that a whole-file write made from a stale copy never silently overwrites what
//! another agent of the same tree wrote since.
//!
//! Each write through the ledger gives the file a new version. A read notes the version
//! its author saw. A whole-file write ([`FileLedger::check_whole_write`]) by an author
//! whose last read is older than the last write of *another* author is refused, naming
//! that author; a write by the author who wrote last, or after a fresh read, goes
//! ahead. Edits that apply to the current content (`replace`) only note their write.
//!
//! The ledger costs nothing until a tree has more than one author: it starts noting
//! when the first subagent starts ([`FileLedger::activate`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// What the ledger knows of one file.
#[derive(Debug, Default)]
struct Entry {
    /// Bumped by every write noted.
    version: u64,
    /// Who wrote the current version (`None`: not written through the ledger).
    writer: Option<String>,
    /// The version each author saw at its last read or write.
    seen: HashMap<String, u64>,
}

/// The tree's ledger; shared by the main session and all its subagents.
#[derive(Debug, Default)]
pub struct FileLedger {
    active: AtomicBool,
    files: Mutex<HashMap<PathBuf, Entry>>,
    /// One edit of a file at a time across the tree ([`FileLedger::hold`]).
    editing: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
}

/// Why a whole-file write was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} was changed by {writer} after you last read it{}, so writing your copy would lose that change. Read the file again and apply your change to its current content (or use replace, whose old_string must still match).", path.display(), if *never_read { " (you never read it)" } else { "" })]
pub struct StaleWrite {
    pub path: PathBuf,
    /// The author of the change the write would lose, as the model is told it.
    pub writer: String,
    pub never_read: bool,
}

impl FileLedger {
    /// Starts noting reads and writes (the tree's first subagent starts).
    pub fn activate(&self) {
        self.active.store(true, Ordering::Release);
    }

    /// Whether the tree has had a subagent (before that, nothing is noted).
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    fn files(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Entry>> {
        self.files.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until no other edit of `path` by the tree runs, and holds it until the
    /// guard is dropped: an edit's read, change and write then see no other agent's
    /// edit in between, so two agents' `replace` calls on one file both apply, one
    /// after the other (the calls of one agent are ordered by its Scheduler already).
    /// `None` (no wait) until the tree has a subagent.
    pub async fn hold(&self, path: &Path) -> Option<tokio::sync::OwnedMutexGuard<()>> {
        if !self.is_active() {
            return None;
        }
        let lock = {
            let mut editing = self.editing.lock().unwrap_or_else(|p| p.into_inner());
            editing.entry(path.to_path_buf()).or_default().clone()
        };
        Some(lock.lock_owned().await)
    }

    /// `author` read `path` (all of it or part: it saw the current version).
    pub fn note_read(&self, author: &str, path: &Path) {
        if !self.is_active() {
            return;
        }
        let mut files = self.files();
        let entry = files.entry(path.to_path_buf()).or_default();
        let version = entry.version;
        entry.seen.insert(author.to_string(), version);
    }

    /// `author` wrote `path`: a new version, which the author has seen.
    pub fn note_write(&self, author: &str, path: &Path) {
        if !self.is_active() {
            return;
        }
        let mut files = self.files();
        let entry = files.entry(path.to_path_buf()).or_default();
        entry.version += 1;
        entry.writer = Some(author.to_string());
        let version = entry.version;
        entry.seen.insert(author.to_string(), version);
    }

    /// Whether `author` may replace the whole of `path`: refused when another author
    /// wrote it after `author` last saw it.
    pub fn check_whole_write(&self, author: &str, path: &Path) -> Result<(), StaleWrite> {
        if !self.is_active() {
            return Ok(());
        }
        let files = self.files();
        let Some(entry) = files.get(path) else {
            return Ok(());
        };
        match (&entry.writer, entry.seen.get(author)) {
            (Some(writer), seen) if writer != author && seen != Some(&entry.version) => {
                Err(StaleWrite {
                    path: path.to_path_buf(),
                    writer: writer.clone(),
                    never_read: seen.is_none(),
                })
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger() -> FileLedger {
        let ledger = FileLedger::default();
        ledger.activate();
        ledger
    }

    #[test]
    fn the_second_of_two_stale_rewrites_is_refused_naming_the_first_writer() {
        let (l, f) = (ledger(), Path::new("/w/a.txt"));
        l.note_read("agent a", f);
        l.note_read("agent b", f);
        assert_eq!(l.check_whole_write("agent a", f), Ok(()));
        l.note_write("agent a", f);
        let refused = l.check_whole_write("agent b", f).unwrap_err();
        assert_eq!(refused.writer, "agent a");
        assert!(!refused.never_read);
        // A fresh read makes the write safe again; the writer itself may go on.
        l.note_read("agent b", f);
        assert_eq!(l.check_whole_write("agent b", f), Ok(()));
        assert_eq!(l.check_whole_write("agent a", f), Ok(()));
    }

    #[test]
    fn an_author_that_never_read_a_file_another_wrote_is_refused() {
        let (l, f) = (ledger(), Path::new("/w/b.txt"));
        l.note_write("agent a", f);
        let refused = l.check_whole_write("main", f).unwrap_err();
        assert!(refused.never_read);
        assert!(refused.to_string().contains("you never read it"));
    }

    #[tokio::test]
    async fn one_edit_of_a_file_holds_it_until_it_is_done() {
        let (l, f) = (Arc::new(ledger()), Path::new("/w/d.txt"));
        let first = l.hold(f).await.expect("held");
        let l2 = l.clone();
        let second = tokio::spawn(async move { l2.hold(Path::new("/w/d.txt")).await.is_some() });
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        assert!(!second.is_finished(), "a second edit waits for the first");
        assert!(
            l.hold(Path::new("/w/other.txt")).await.is_some(),
            "other files are free"
        );
        drop(first);
        assert!(second.await.unwrap());
        assert!(
            FileLedger::default().hold(f).await.is_none(),
            "no wait without subagents"
        );
    }

    #[test]
    fn an_inactive_ledger_notes_nothing_and_refuses_nothing() {
        let (l, f) = (FileLedger::default(), Path::new("/w/c.txt"));
        l.note_write("agent a", f);
        assert_eq!(l.check_whole_write("agent b", f), Ok(()));
        assert!(l.files().is_empty());
    }
}
