//! Git worktrees: `-w/--worktree [NAME]` starts the session in a new worktree of the
//! current repository, where gemini-cli 0.61 puts them (`<repository>/.gemini/worktrees/
//! NAME`, on a new branch `worktree-NAME`), and `troupe batch --worktree` gives each
//! task a detached one. The worktree stays when the session ends, as in gemini-cli;
//! the interactive session's last lines say how to come back to it and remove it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `git -C dir ARGS`; its stdout, or an error naming the command and git's stderr.
pub fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Adds a worktree of the repository at `repo` in `dest`: on a new branch `branch`
/// from HEAD, or (`None`) with HEAD detached.
pub fn add(repo: &Path, dest: &Path, branch: Option<&str>) -> Result<(), String> {
    let dest = dest.to_string_lossy();
    let args: Vec<&str> = match branch {
        Some(branch) => vec!["worktree", "add", &dest, "-b", branch],
        None => vec!["worktree", "add", "--detach", &dest, "HEAD"],
    };
    git(repo, &args).map(drop)
}

/// The worktree a session was started in.
#[derive(Debug, Clone)]
pub struct Entered {
    pub name: String,
    pub path: PathBuf,
}

/// The root of the repository `dir` belongs to (its main checkout, even from inside
/// one of its worktrees): the folder of git's common directory.
fn project_root(dir: &Path) -> Result<PathBuf, String> {
    let common = git(dir, &["rev-parse", "--git-common-dir"])?;
    let common = dir.join(common.trim());
    let common = std::fs::canonicalize(&common).unwrap_or(common);
    common
        .parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| format!("{} has no parent folder", common.display()))
}

/// gemini-cli's name for an unnamed worktree: the UTC time, `YYYY-MM-DD-HH-MM-SS-mmm`,
/// and four random base-36 characters.
fn generated_name() -> String {
    let stamp = crate::engine::text::iso8601(std::time::SystemTime::now())
        .replace([':', '.'], "-")
        .replace('T', "-")
        .replace('Z', "");
    let suffix: String = (0..4)
        .map(|_| {
            let d = fastrand::u32(0..36);
            char::from_digit(d, 36).unwrap_or('0')
        })
        .collect();
    format!("{stamp}-{suffix}")
}

/// A name usable as a folder and in a branch name: letters, digits, `.`, `_` and `-`,
/// not starting with `.` or `-`.
fn check_name(name: &str) -> Result<(), String> {
    let fine = !name.is_empty()
        && !name.starts_with(['.', '-'])
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if fine {
        Ok(())
    } else {
        Err(format!("`{name}` is not a worktree name: use letters, digits, `.`, `_` and `-`, not starting with `.` or `-`"))
    }
}

/// Makes the worktree `name` (made up when empty) of the repository the current
/// directory is in, and makes it the current directory.
pub fn enter(name: &str) -> Result<Entered, String> {
    let cwd = std::env::current_dir().map_err(|e| format!("no current directory: {e}"))?;
    let name = match name.trim() {
        "" => generated_name(),
        given => given.to_string(),
    };
    check_name(&name)?;
    let root = project_root(&cwd)?;
    let path = root.join(".gemini").join("worktrees").join(&name);
    add(&root, &path, Some(&format!("worktree-{name}")))?;
    std::env::set_current_dir(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    tracing::info!(path = %path.display(), "started in a new git worktree");
    Ok(Entered { name, path })
}

/// The worktree this process started in (`-w`), if any.
static ENTERED: std::sync::OnceLock<Entered> = std::sync::OnceLock::new();

/// [`enter`] for `-w`, remembered for [`entered`]; the message to exit with (gemini-cli's)
/// when it fails.
pub fn enter_for_session(name: &str) -> Result<(), String> {
    let entered =
        enter(name).map_err(|e| format!("Failed to create or switch to worktree: {e}"))?;
    let _ = ENTERED.set(entered);
    Ok(())
}

/// The worktree `-w` made for this process.
pub fn entered() -> Option<&'static Entered> {
    ENTERED.get()
}

/// The worktree the session runs in: the one `-w` made, or the worktree under
/// `.gemini/worktrees/` of its repository the current directory lies in (a session
/// resumed there, as gemini-cli finds it).
pub fn current() -> Option<Entered> {
    if let Some(entered) = entered() {
        return Some(entered.clone());
    }
    let cwd = std::env::current_dir().ok()?;
    let top = git(&cwd, &["rev-parse", "--show-toplevel"]).ok()?;
    let top = std::fs::canonicalize(top.trim()).ok()?;
    let base =
        std::fs::canonicalize(project_root(&cwd).ok()?.join(".gemini").join("worktrees")).ok()?;
    let name = top.strip_prefix(&base).ok()?.to_string_lossy().into_owned();
    (!name.is_empty()).then_some(Entered { name, path: top })
}

/// What the interactive session says as it ends in a worktree (gemini-cli's lines,
/// with Troupe's command).
pub fn farewell(entered: &Entered, session_id: &str) -> String {
    let path = shell_quoted(&entered.path.to_string_lossy());
    format!(
        "To resume work in this worktree: cd {path} && troupe --resume {}\nTo remove manually: git worktree remove {path}",
        shell_quoted(session_id)
    )
}

/// `text` as one word for a POSIX shell.
fn shell_quoted(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_names_are_gemini_clis_shape() {
        let name = generated_name();
        // 2026-12-03-13-45-12-123-ab1z
        let parts: Vec<&str> = name.split('-').collect();
        assert_eq!(parts.len(), 8, "{name}");
        assert_eq!(parts[0].len(), 4);
        assert_eq!(parts[6].len(), 3);
        assert_eq!(parts[7].len(), 4);
        assert!(check_name(&name).is_ok());
    }

    #[test]
    fn names_that_leave_the_folder_are_refused() {
        for bad in ["../x", "a/b", ".hidden", "-x", "a b", ""] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        assert!(check_name("fix-1.2_b").is_ok());
    }

    #[test]
    fn farewell_quotes_what_the_shell_would_split() {
        let e = Entered {
            name: "n".into(),
            path: PathBuf::from("/r/my repo/.gemini/worktrees/n"),
        };
        assert_eq!(
            farewell(&e, "abc-1"),
            "To resume work in this worktree: cd '/r/my repo/.gemini/worktrees/n' && troupe --resume abc-1\nTo remove manually: git worktree remove '/r/my repo/.gemini/worktrees/n'"
        );
    }
}
