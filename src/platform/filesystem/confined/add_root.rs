//! Adding a root during a session (`/directory add`): the directory is opened once,
//! by the user's path, and its descriptor becomes one more root that paths are opened
//! beneath, exactly like the roots opened at start.

use std::io;
use std::path::Path;
use std::sync::{Arc, PoisonError};

use super::{fd_path, normalize_lexically, open_root, Confined};
use crate::protocol::{AddRootError, AddedRoot};

impl Confined {
    /// Opens `typed` (`~` expanded, relative to the primary root) as a new root. The
    /// root is the directory the descriptor refers to (symlinks resolved by the
    /// kernel at open), so what is checked is what is used.
    pub fn add_root(&self, typed: &str) -> Result<AddedRoot, AddRootError> {
        let typed = typed.trim();
        if typed.is_empty() {
            return Err(AddRootError::Empty);
        }
        let expanded = crate::settings::expand_tilde(Path::new(typed));
        let abs = normalize_lexically(self.workspace.primary().join(expanded));
        let fd = open_root(&abs).map_err(|e| open_error(&abs, e))?;
        let real = fd_path(std::os::fd::AsFd::as_fd(&fd)).map_err(|e| open_error(&abs, e))?;
        let mut roots = self.roots.write().unwrap_or_else(PoisonError::into_inner);
        if self.workspace.roots().contains(&real) {
            return Ok(AddedRoot::AlreadyThere(real));
        }
        roots.paths.push(real.clone());
        roots.fds.push(Arc::new(fd));
        // The descriptor is in place before the workspace accepts paths under it.
        self.workspace.push_root(real.clone());
        tracing::info!(root = %real.display(), "workspace root added");
        Ok(AddedRoot::Added(real))
    }
}

fn open_error(abs: &Path, e: io::Error) -> AddRootError {
    match e.raw_os_error() {
        Some(libc::ENOENT) => AddRootError::Missing(abs.to_path_buf()),
        Some(libc::ENOTDIR) => AddRootError::NotADirectory(abs.to_path_buf()),
        _ => AddRootError::Io {
            path: abs.to_path_buf(),
            message: e.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::filesystem::{FsError, OpenMode};
    use crate::platform::workspace::{PathError, Workspace};

    #[test]
    fn an_added_root_opens_beneath_its_own_descriptor() {
        let outer = tempfile::tempdir().unwrap();
        let base = outer.path().canonicalize().unwrap();
        std::fs::create_dir_all(base.join("ws")).unwrap();
        std::fs::create_dir_all(base.join("sib/in")).unwrap();
        std::fs::write(base.join("sib/in/f.txt"), "sib").unwrap();
        std::fs::write(base.join("secret"), "s").unwrap();
        std::fs::write(base.join("file"), "f").unwrap();
        std::os::unix::fs::symlink(base.join("secret"), base.join("sib/out")).unwrap();
        let ws = Arc::new(Workspace::new(&base.join("ws"), &[]).unwrap());
        let c = Confined::new(ws.clone()).unwrap();
        let target = base.join("sib/in/f.txt");
        assert!(matches!(
            c.open(&target, OpenMode::Read),
            Err(FsError::Path(PathError::OutsideWorkspace { .. }))
        ));

        assert_eq!(c.add_root("../sib"), Ok(AddedRoot::Added(base.join("sib"))));
        assert_eq!(ws.roots(), vec![base.join("ws"), base.join("sib")]);
        assert!(ws
            .roots_text()
            .ends_with(&format!(", {}", base.join("sib").display())));
        assert!(c.open(&target, OpenMode::Read).is_ok());
        assert!(c.open(Path::new("../sib/in/f.txt"), OpenMode::Read).is_ok());
        // The new root confines like the others: a link out of it is refused.
        assert!(c.open(&base.join("sib/out"), OpenMode::Read).is_err());
        assert!(c.open(&base.join("secret"), OpenMode::Read).is_err());

        assert_eq!(
            c.add_root(&base.join("sib").display().to_string()),
            Ok(AddedRoot::AlreadyThere(base.join("sib")))
        );
        assert_eq!(
            c.add_root("../nope"),
            Err(AddRootError::Missing(base.join("nope")))
        );
        assert_eq!(
            c.add_root("../file"),
            Err(AddRootError::NotADirectory(base.join("file")))
        );
        assert_eq!(c.add_root("  "), Err(AddRootError::Empty));
        assert_eq!(ws.roots().len(), 2);
    }
}
