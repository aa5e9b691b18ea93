//! "Modify with external editor": the current and proposed contents go to two temp
//! files (0600, in a 0700 directory, removed afterwards), `$VISUAL` or `$EDITOR` opens
//! them — vim and neovim as a diff, VS Code-like editors with `--wait --diff`, any other
//! editor on the proposal alone — and the proposal is read back once the editor exits.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Why the proposal could not be edited.
#[derive(Debug, thiserror::Error)]
pub enum EditorError {
    #[error("no editor is set: set $VISUAL or $EDITOR (e.g. export EDITOR=vim)")]
    NotSet,
    #[error("cannot parse the editor command `{0}`")]
    BadCommand(String),
    #[error("cannot prepare the temp files: {0}")]
    TempFiles(std::io::Error),
    #[error("cannot start `{program}`: {source}")]
    Start {
        program: String,
        source: std::io::Error,
    },
    #[error("`{program}` exited with {status}; the proposal was left as it was")]
    Failed { program: String, status: String },
    #[error("cannot read the edited proposal back: {0}")]
    ReadBack(std::io::Error),
}

/// The editor command from `$VISUAL`, else `$EDITOR`, split into words.
pub fn editor_command() -> Result<Vec<String>, EditorError> {
    let raw = ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|v| !v.trim().is_empty())
        .ok_or(EditorError::NotSet)?;
    let words = shell_words::split(&raw).map_err(|_| EditorError::BadCommand(raw.clone()))?;
    if words.is_empty() {
        return Err(EditorError::BadCommand(raw));
    }
    Ok(words)
}

/// How an editor is asked to show the two files.
fn editor_args(program: &str, current: &Path, proposed: &Path) -> Vec<PathBuf> {
    let name = Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let both = vec![current.to_path_buf(), proposed.to_path_buf()];
    match name.as_str() {
        "vim" | "nvim" | "vi" | "gvim" | "mvim" => {
            let mut args = vec![PathBuf::from("-d")];
            args.extend(both);
            args
        }
        "code" | "code-insiders" | "codium" | "cursor" | "windsurf" => {
            let mut args = vec![PathBuf::from("--wait"), PathBuf::from("--diff")];
            args.extend(both);
            args
        }
        _ => vec![proposed.to_path_buf()],
    }
}

fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

/// Opens the editor on `original` and `proposed` for `file_name`; returns the edited
/// proposal. Blocks until the editor exits (call it from the REPL thread only, with
/// the terminal in its normal mode).
pub fn edit_proposal(
    file_name: &str,
    original: &str,
    proposed: &str,
) -> Result<String, EditorError> {
    let command = editor_command()?;
    let dir = tempfile::Builder::new()
        .prefix("troupe-modify-")
        .tempdir()
        .map_err(EditorError::TempFiles)?;
    let safe_name: String = file_name
        .chars()
        .map(|c| if c == '/' || c == '\\' { '_' } else { c })
        .collect();
    let current_path = dir.path().join(format!("current-{safe_name}"));
    let proposed_path = dir.path().join(format!("proposed-{safe_name}"));
    write_private(&current_path, original).map_err(EditorError::TempFiles)?;
    write_private(&proposed_path, proposed).map_err(EditorError::TempFiles)?;
    let program = command[0].clone();
    let status = Command::new(&program)
        .args(&command[1..])
        .args(editor_args(&program, &current_path, &proposed_path))
        .status()
        .map_err(|source| EditorError::Start {
            program: program.clone(),
            source,
        })?;
    if !status.success() {
        return Err(EditorError::Failed {
            program,
            status: status.to_string(),
        });
    }
    let edited = std::fs::read_to_string(&proposed_path).map_err(EditorError::ReadBack)?;
    drop(dir);
    Ok(edited)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vim_gets_a_diff_code_waits_and_others_get_the_proposal() {
        let (c, p) = (Path::new("/t/c"), Path::new("/t/p"));
        assert_eq!(editor_args("/usr/bin/nvim", c, p), [Path::new("-d"), c, p]);
        assert_eq!(
            editor_args("code", c, p),
            [Path::new("--wait"), Path::new("--diff"), c, p]
        );
        assert_eq!(editor_args("nano", c, p), [p]);
    }
}
