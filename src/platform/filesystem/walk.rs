//! A walk of the workspace's files on the FileSystem pool: the `ignore` crate's
//! parallel walker (gitignore, `.geminiignore`, `.troupeignore`, hidden files skipped,
//! extra exclude globs as overrides), each file it yields opened beneath its
//! workspace root ([`Confined::open`]) and handed to a visitor as that descriptor. A
//! directory swapped for a link leading out makes the open of what lies under it fail,
//! so nothing outside is read. Blocking: runs inside an [`super::FsWork`].

use std::fs::File;
use std::path::{Path, PathBuf};

use ignore::overrides::{Override, OverrideBuilder};
use ignore::{WalkBuilder, WalkState};

use super::{Confined, OpenMode};
use crate::platform::ignore_rules::{GEMINI_IGNORE, TROUPE_IGNORE};

/// What a walk visits.
#[derive(Debug, Clone)]
pub struct WalkSpec {
    /// A directory (walked recursively) or a single file.
    pub root: PathBuf,
    /// A glob restricting which files are visited (ripgrep's `--glob`).
    pub include: Option<String>,
    /// Globs of files and directories left out (unless `no_ignore`).
    pub exclude: &'static [&'static str],
    /// Ignore files, hidden-file skipping and `exclude` all off.
    pub no_ignore: bool,
    /// `.gitignore`, `.git/info/exclude` and the global git excludes apply.
    pub respect_git_ignore: bool,
    /// Walker threads; 0 picks one per core.
    pub threads: usize,
}

/// Why a walk could not start.
#[derive(Debug, Clone, thiserror::Error)]
pub enum WalkError {
    #[error("invalid include pattern '{glob}': {message}")]
    Glob { glob: String, message: String },
}

/// Whether a walk goes on after a visit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalkStep {
    Continue,
    Quit,
}

/// One walker thread's visitor of the files of a walk.
pub trait WalkVisitor: Send {
    /// Asked before each entry the walker yields: `false` ends the walk.
    fn keep_going(&mut self) -> bool;
    /// A regular file the walk found, opened read-only and non-blocking.
    fn visit(&mut self, path: PathBuf, file: File) -> WalkStep;
}

/// Makes the visitor of one walker thread.
pub type MakeVisitor<'a> = dyn FnMut() -> Box<dyn WalkVisitor + 'a> + 'a;

impl Confined {
    /// Walks `spec` with one visitor per walker thread (from `make`); every file is
    /// opened beneath its root, and one that cannot be is skipped.
    pub fn walk_files(&self, spec: &WalkSpec, make: &mut MakeVisitor<'_>) -> Result<(), WalkError> {
        let open = |path: &Path| self.open(path, OpenMode::Read).ok().map(|o| o.file);
        walk_with(spec, &open, make)
    }
}

/// Walks `spec`, opening each file with `open` (`None` skips it); see
/// [`Confined::walk_files`], the way every tool walks.
pub fn walk_with(
    spec: &WalkSpec,
    open: &(dyn Fn(&Path) -> Option<File> + Sync),
    make: &mut MakeVisitor<'_>,
) -> Result<(), WalkError> {
    let mut walk = WalkBuilder::new(&spec.root);
    let git = !spec.no_ignore && spec.respect_git_ignore;
    walk.threads(spec.threads)
        .follow_links(false)
        .hidden(!spec.no_ignore)
        .ignore(!spec.no_ignore)
        .parents(!spec.no_ignore)
        .git_ignore(git)
        .git_exclude(git)
        .git_global(git)
        .overrides(overrides(spec)?);
    if !spec.no_ignore {
        walk.add_custom_ignore_filename(GEMINI_IGNORE)
            .add_custom_ignore_filename(TROUPE_IGNORE);
    }
    walk.build_parallel().run(|| {
        let mut visitor = make();
        Box::new(move |entry| {
            if !visitor.keep_going() {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            // No fstat of the open file (a system call per file, which ripgrep does
            // not make either): the walk saw a regular file, and what could be swapped
            // in before the open is harmless. The open is non-blocking, so a FIFO reads
            // as empty; a directory fails to read and is skipped; a device node takes
            // root to make, and the caller's timeout still bounds it.
            let Some(file) = open(entry.path()) else {
                return WalkState::Continue;
            };
            match visitor.visit(entry.into_path(), file) {
                WalkStep::Continue => WalkState::Continue,
                WalkStep::Quit => WalkState::Quit,
            }
        })
    });
    Ok(())
}

fn overrides(spec: &WalkSpec) -> Result<Override, WalkError> {
    let mut builder = OverrideBuilder::new(&spec.root);
    let mut add = |glob: &str| {
        builder.add(glob).map(|_| ()).map_err(|e| WalkError::Glob {
            glob: glob.to_string(),
            message: e.to_string(),
        })
    };
    if let Some(include) = &spec.include {
        add(include)?;
    }
    if !spec.no_ignore {
        for glob in spec.exclude {
            add(&format!("!{glob}"))?;
        }
    }
    builder.build().map_err(|e| WalkError::Glob {
        glob: spec.include.clone().unwrap_or_default(),
        message: e.to_string(),
    })
}
