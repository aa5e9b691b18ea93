//! A task's own workspace: a copy of the one it names (files, folders and symbolic
//! links as they are, `.git` included), a git worktree of it (`--worktree`), or the
//! workspace itself (`in_place`); and what the task changed there.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::results::DiffStats;

/// How a task gets its workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    Copy,
    Worktree,
    InPlace,
}

/// Makes `dest` the task's workspace from `source`, leaving out `skip` (the batch's
/// output folder, when it lies inside the source). A worktree is asked for only of a
/// git repository; any other source is copied. Returns the placement used.
pub fn prepare(
    source: &Path,
    dest: &Path,
    wanted: Placement,
    skip: &Path,
) -> Result<Placement, String> {
    if !source.is_dir() {
        return Err(format!(
            "the workspace {} is not a directory",
            source.display()
        ));
    }
    if wanted == Placement::InPlace {
        return Ok(Placement::InPlace);
    }
    remove_old(dest)?;
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    if wanted == Placement::Worktree && source.join(".git").exists() {
        worktree(source, dest)?;
        return Ok(Placement::Worktree);
    }
    copy_tree(source, dest, skip)?;
    Ok(Placement::Copy)
}

/// A copy left by an earlier run of the same task (a retry starts afresh).
fn remove_old(dest: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(dest) {
        Ok(_) => std::fs::remove_dir_all(dest).map_err(|e| format!("{}: {e}", dest.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("{}: {e}", dest.display())),
    }
}

fn worktree(source: &Path, dest: &Path) -> Result<(), String> {
    // A worktree from an earlier run of the task is forgotten first.
    let _ = crate::frontends::worktree::git(source, &["worktree", "prune"]);
    crate::frontends::worktree::add(source, dest, None)
}

/// Every entry under `root` but `skip`, as paths relative to `root` (hidden files and
/// ignored ones too: a copy is whole).
fn entries(root: &Path, skip: &Path, leave_git: bool) -> Vec<(PathBuf, std::fs::FileType)> {
    let skip = skip.to_path_buf();
    let walker = ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .follow_links(false)
        .filter_entry(move |e| {
            e.path() != skip && !(leave_git && e.depth() == 1 && e.file_name() == ".git")
        })
        .build();
    walker
        .filter_map(Result::ok)
        .filter(|e| e.depth() > 0)
        .filter_map(|e| {
            let rel = e.path().strip_prefix(root).ok()?.to_path_buf();
            Some((rel, e.file_type()?))
        })
        .collect()
}

fn copy_tree(source: &Path, dest: &Path, skip: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dest).map_err(|e| format!("{}: {e}", dest.display()))?;
    let fail = |p: &Path, e: std::io::Error| format!("copying {}: {e}", p.display());
    for (rel, kind) in entries(source, skip, false) {
        let (from, to) = (source.join(&rel), dest.join(&rel));
        if kind.is_dir() {
            std::fs::create_dir_all(&to).map_err(|e| fail(&from, e))?;
        } else if kind.is_symlink() {
            let target = std::fs::read_link(&from).map_err(|e| fail(&from, e))?;
            std::os::unix::fs::symlink(target, &to).map_err(|e| fail(&from, e))?;
        } else if kind.is_file() {
            std::fs::copy(&from, &to).map_err(|e| fail(&from, e))?;
        }
    }
    Ok(())
}

/// What differs between the task's workspace and the one it was copied from (`.git`
/// and `skip` left out): files added, removed or changed, and their lines.
pub fn diff_stats(original: &Path, copy: &Path, skip: &Path) -> DiffStats {
    let files = |root: &Path| -> BTreeSet<PathBuf> {
        entries(root, skip, true)
            .into_iter()
            .filter(|(_, kind)| kind.is_file() || kind.is_symlink())
            .map(|(rel, _)| rel)
            .collect()
    };
    let (before, after) = (files(original), files(copy));
    let mut stats = DiffStats::default();
    for rel in before.union(&after) {
        let old = read(&original.join(rel), before.contains(rel));
        let new = read(&copy.join(rel), after.contains(rel));
        if old == new {
            continue;
        }
        stats.files_changed += 1;
        let (old, new) = (String::from_utf8_lossy(&old), String::from_utf8_lossy(&new));
        let diff = similar::TextDiff::from_lines(old.as_ref(), new.as_ref());
        for change in diff.iter_all_changes() {
            match change.tag() {
                similar::ChangeTag::Insert => stats.insertions += 1,
                similar::ChangeTag::Delete => stats.deletions += 1,
                similar::ChangeTag::Equal => {}
            }
        }
    }
    stats
}

/// A file's bytes (a symbolic link's target), or nothing when it is not there.
fn read(path: &Path, present: bool) -> Vec<u8> {
    if !present {
        return Vec::new();
    }
    match std::fs::read_link(path) {
        Ok(target) => target.to_string_lossy().into_owned().into_bytes(),
        Err(_) => std::fs::read(path).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_is_whole_and_its_changes_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let (src, out) = (dir.path().join("src"), dir.path().join("src/out"));
        std::fs::create_dir_all(src.join(".hidden")).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(src.join("a.txt"), "one\ntwo\n").unwrap();
        std::fs::write(src.join(".hidden/b"), "b\n").unwrap();
        std::fs::write(src.join(".gitignore"), "a.txt\n").unwrap();
        std::fs::write(out.join("leftover"), "x").unwrap();
        std::os::unix::fs::symlink("a.txt", src.join("link")).unwrap();
        let dest = out.join("workspaces/t1");
        assert_eq!(
            prepare(&src, &dest, Placement::Copy, &out),
            Ok(Placement::Copy)
        );
        assert_eq!(
            std::fs::read_to_string(dest.join("a.txt")).unwrap(),
            "one\ntwo\n"
        );
        assert!(dest.join(".hidden/b").is_file());
        assert_eq!(
            std::fs::read_link(dest.join("link")).unwrap(),
            PathBuf::from("a.txt")
        );
        assert!(
            !dest.join("out").exists(),
            "the output folder is not copied into itself"
        );
        assert_eq!(diff_stats(&src, &dest, &out), DiffStats::default());
        std::fs::write(dest.join("a.txt"), "one\n2\nthree\n").unwrap();
        std::fs::write(dest.join("new.txt"), "n\n").unwrap();
        std::fs::remove_file(dest.join(".hidden/b")).unwrap();
        let stats = diff_stats(&src, &dest, &out);
        assert_eq!(
            stats,
            DiffStats {
                files_changed: 3,
                insertions: 3,
                deletions: 2
            }
        );
        // A second run of the task starts from a fresh copy.
        assert_eq!(
            prepare(&src, &dest, Placement::Copy, &out),
            Ok(Placement::Copy)
        );
        assert!(!dest.join("new.txt").exists());
    }

    #[test]
    fn a_missing_workspace_is_an_error_and_in_place_copies_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let err = prepare(
            &dir.path().join("nope"),
            &dir.path().join("d"),
            Placement::Copy,
            dir.path(),
        );
        assert!(err.unwrap_err().contains("is not a directory"));
        let dest = dir.path().join("d");
        assert_eq!(
            prepare(dir.path(), &dest, Placement::InPlace, dir.path()),
            Ok(Placement::InPlace)
        );
        assert!(!dest.exists());
    }
}
