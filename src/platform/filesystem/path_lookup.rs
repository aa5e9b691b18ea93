//! `replace`'s "did you mean" path lookup ([`crate::platform::path_correction`]) run on
//! the FileSystem pool: every existence check and directory listing it needs opens a
//! descriptor beneath a workspace root ([`Confined`]), like every other file
//! operation, so a directory swapped for a link cannot make it list anything outside.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType};

use super::{stat_confined, Confined, OpenMode};
use crate::platform::path_correction::{self, DirectoryLister, ListedEntry, PathCorrectionError};

/// The file a relative `raw` path most likely means (see
/// [`path_correction::correct_path`]), looked up through confined opens.
pub fn correct_path(confined: &Confined, raw: &str) -> Result<PathBuf, PathCorrectionError> {
    let workspace = confined.workspace().clone();
    path_correction::correct_path(&workspace, raw, &mut ConfinedLister { confined })
}

impl super::FsClient {
    /// [`correct_path`] on the FileSystem pool.
    pub async fn correct_path(
        &self,
        raw: String,
    ) -> Result<Result<PathBuf, PathCorrectionError>, super::FsError> {
        self.run(move |confined| correct_path(confined, &raw)).await
    }
}

/// Answers the path search with descriptors opened beneath the roots.
struct ConfinedLister<'a> {
    confined: &'a Confined,
}

impl DirectoryLister for ConfinedLister<'_> {
    fn exists(&mut self, path: &Path) -> bool {
        stat_confined(self.confined, path).is_ok_and(|meta| meta.exists)
    }

    fn entries(&mut self, dir: &Path) -> Option<Vec<ListedEntry>> {
        let opened = self.confined.open(dir, OpenMode::Directory).ok()?;
        let listing = rustix::fs::Dir::read_from(&opened.file).ok()?;
        let mut out = Vec::new();
        for entry in listing.flatten() {
            let name = OsStr::from_bytes(entry.file_name().to_bytes());
            if name == "." || name == ".." {
                continue;
            }
            let kind = match entry.file_type() {
                FileType::Unknown => {
                    // Some file systems do not fill in the type: ask without
                    // following a link.
                    match rustix::fs::statat(&opened.file, name, AtFlags::SYMLINK_NOFOLLOW) {
                        Ok(st) => FileType::from_raw_mode(st.st_mode),
                        Err(_) => continue,
                    }
                }
                known => known,
            };
            out.push(ListedEntry {
                name: name.to_os_string(),
                is_dir: kind == FileType::Directory,
            });
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::platform::workspace::Workspace;

    #[test]
    fn a_directory_that_is_a_link_out_is_not_searched() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret_plan.md"), "x").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::write(root.join("docs/guide.md"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
        let ws = Arc::new(Workspace::new(&root, &[]).unwrap());
        let confined = Confined::new(ws).unwrap();
        assert_eq!(
            correct_path(&confined, "guide.md").unwrap(),
            root.join("docs/guide.md")
        );
        assert!(matches!(
            correct_path(&confined, "secret_plan.md"),
            Err(PathCorrectionError::NotFound(_))
        ));
        // Outside the roots, nothing is listed at all.
        let mut lister = ConfinedLister {
            confined: &confined,
        };
        assert_eq!(lister.entries(outside.path()), None);
        assert_eq!(lister.entries(&root.join("out")), None);
        assert!(!lister.exists(&outside.path().join("secret_plan.md")));
        assert!(lister.exists(&root.join("docs/guide.md")));
    }
}
