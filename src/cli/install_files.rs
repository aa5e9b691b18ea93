//! Files for `troupe skills` and `troupe extensions` installs: copying a folder as
//! Node's `fs.cp` does, removing what a name points at, and asking for consent.

use std::io::{BufRead, Write};
use std::path::Path;

use crate::frontends::AppError;

/// Asks on stderr, reads the answer on stdin: an empty answer is yes (gemini-cli's
/// default), no answer at all (end of input) is no.
pub(crate) fn ask_consent(text: &str, consent: bool) -> Result<bool, AppError> {
    let mut err = std::io::stderr();
    if consent {
        let _ = writeln!(err, "You have consented to the following:\n{text}");
        return Ok(true);
    }
    let _ = writeln!(err, "{text}");
    let _ = write!(err, "Do you want to continue? [Y/n]: ");
    let _ = err.flush();
    let mut answer = String::new();
    let read = std::io::stdin().lock().read_line(&mut answer)?;
    if read == 0 {
        let _ = writeln!(err);
        return Err(AppError::Usage(
            "no answer on standard input: nothing was changed (pass --consent to go on without being asked)"
                .into(),
        ));
    }
    let answer = answer.trim().to_lowercase();
    Ok(answer.is_empty() || answer == "y" || answer == "yes")
}

/// Removes what is at `path` (a folder, a file or a symlink, which is not followed).
pub(crate) fn remove_any(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Copies the folder `from` to `to` (files with their permissions, symlinks as
/// symlinks), as Node's `fs.cp(…, {recursive: true})`.
pub(crate) fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        } else if kind.is_dir() {
            copy_dir(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}
