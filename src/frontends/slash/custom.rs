//! Custom slash commands from `.toml` files (gemini-cli's format): `prompt` (required),
//! `description`; `{{args}}` is replaced by what follows the command, `!{…}` by the
//! output of a shell command (asked for first unless in yolo mode), `@{…}` by a
//! workspace file's content. Found in `<troupe home>/commands/`, `~/.gemini/commands/`
//! and, when the folder is trusted, `<workspace>/.gemini/commands/` and
//! `<workspace>/.troupe/commands/` (later ones win), then the enabled extensions'
//! `commands/` (renamed `<extension>.<name>` on a clash); `git/commit.toml` is `/git:commit`.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// A loaded command.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomCommand {
    /// `git:commit` for `git/commit.toml`.
    pub name: String,
    /// For `/help` and completion.
    pub description: String,
    /// The prompt template (`{{args}}`, `!{…}`, `@{…}`).
    pub prompt: String,
    /// Where it was loaded from.
    pub file: PathBuf,
}

#[derive(Deserialize)]
struct CommandFile {
    prompt: String,
    #[serde(default)]
    description: Option<String>,
}

/// The directories searched, weakest first; the workspace's own only when `trusted`
/// (the session's folder trust, `Settings::trusted`).
pub fn command_dirs(
    troupe_home: &Path,
    home: &Path,
    workspace: &Path,
    trusted: bool,
) -> Vec<PathBuf> {
    let mut dirs = vec![
        home.join(".gemini").join("commands"),
        troupe_home.join("commands"),
    ];
    if trusted {
        dirs.push(workspace.join(".gemini").join("commands"));
        dirs.push(workspace.join(".troupe").join("commands"));
    }
    dirs
}

/// Loads every command; a file that cannot be parsed is reported, not loaded.
pub fn load(dirs: &[PathBuf]) -> (Vec<CustomCommand>, Vec<String>) {
    let mut commands: Vec<CustomCommand> = Vec::new();
    let mut problems = Vec::new();
    for dir in dirs {
        let mut files = Vec::new();
        collect_toml(dir, &mut files);
        files.sort();
        for file in files {
            let Some(name) = command_name(dir, &file) else {
                continue;
            };
            let parsed = std::fs::read_to_string(&file)
                .map_err(|e| e.to_string())
                .and_then(|text| toml::from_str::<CommandFile>(&text).map_err(|e| e.to_string()));
            match parsed {
                Ok(parsed) => {
                    let command = CustomCommand {
                        description: parsed
                            .description
                            .unwrap_or_else(|| format!("Custom command from {}", file.display())),
                        name,
                        prompt: parsed.prompt,
                        file,
                    };
                    commands.retain(|c| c.name != command.name);
                    commands.push(command);
                }
                Err(e) => problems.push(format!("{}: {e}", file.display())),
            }
        }
    }
    commands.sort_by(|a, b| a.name.cmp(&b.name));
    (commands, problems)
}

/// The commands of the enabled extensions (their `commands/` folders), with the lowest
/// precedence, as gemini-cli: one whose name a user or project command (or an earlier
/// extension's) already has is renamed `<extension>.<name>`.
pub fn add_extension_commands(
    extensions: &crate::settings::extensions::LoadedExtensions,
    commands: &mut Vec<CustomCommand>,
    problems: &mut Vec<String>,
) {
    for ext in extensions.active() {
        let (found, bad) = load(&[ext.dir("commands")]);
        problems.extend(bad);
        for mut command in found {
            if commands.iter().any(|c| c.name == command.name) {
                command.name = format!("{}.{}", ext.name, command.name);
            }
            if !commands.iter().any(|c| c.name == command.name) {
                commands.push(command);
            }
        }
    }
    commands.sort_by(|a, b| a.name.cmp(&b.name));
}

fn collect_toml(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_toml(&path, out);
        } else if path.extension().is_some_and(|e| e == "toml") {
            out.push(path);
        }
    }
}

/// `git/commit.toml` under `dir` → `git:commit`.
fn command_name(dir: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(dir).ok()?.with_extension("");
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().replace(':', "_"))
        .collect();
    (!parts.is_empty()).then(|| parts.join(":"))
}

/// A piece of a command's prompt after `{{args}}` is filled in.
#[derive(Debug, Clone, PartialEq)]
pub enum Injection {
    /// Text as it is.
    Text(String),
    /// `!{…}`: a shell command whose output goes in its place.
    Shell(String),
    /// `@{…}`: a workspace file whose content goes in its place.
    File(String),
}

/// Fills `{{args}}` (shell-escaped inside `!{…}`, as gemini-cli does) and splits out the
/// `!{…}` and `@{…}` injections (braces may nest). Without `{{args}}`, arguments are
/// appended to the prompt after a blank line with the command that was typed.
pub fn prepare(prompt: &str, invocation: &str, args: &str) -> Vec<Injection> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut rest = prompt;
    while let Some(at) = rest.find(['!', '@']) {
        let (kind, after) = (&rest[at..at + 1], &rest[at + 1..]);
        if !after.starts_with('{') {
            text.push_str(&rest[..at + 1]);
            rest = after;
            continue;
        }
        let Some(end) = closing_brace(&after[1..]) else {
            break;
        };
        text.push_str(&rest[..at]);
        let inner = &after[1..1 + end];
        if !text.is_empty() {
            pieces.push(Injection::Text(
                std::mem::take(&mut text).replace("{{args}}", args),
            ));
        }
        pieces.push(if kind == "!" {
            Injection::Shell(inner.replace("{{args}}", &shell_words::quote(args)))
        } else {
            Injection::File(inner.replace("{{args}}", args).trim().to_string())
        });
        rest = &after[1 + end + 1..];
    }
    text.push_str(rest);
    if !text.is_empty() {
        pieces.push(Injection::Text(text.replace("{{args}}", args)));
    }
    if !prompt.contains("{{args}}") && !args.trim().is_empty() {
        pieces.push(Injection::Text(format!("\n\n{invocation}")));
    }
    pieces
}

/// The index of the `}` closing an already opened brace in `text`.
fn closing_brace(text: &str) -> Option<usize> {
    let mut depth = 1;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use Injection::*;

    #[test]
    fn args_shell_and_file_injections() {
        assert_eq!(
            prepare(
                "Review {{args}}:\n!{git diff {{args}}}\n@{notes.md}",
                "/r a b",
                "a b"
            ),
            vec![
                Text("Review a b:\n".into()),
                Shell("git diff 'a b'".into()),
                Text("\n".into()),
                File("notes.md".into())
            ]
        );
        assert_eq!(
            prepare("Summarise.", "/s more please", "more please"),
            vec![Text("Summarise.".into()), Text("\n\n/s more please".into())]
        );
        assert_eq!(prepare("x@y !z", "/c", ""), vec![Text("x@y !z".into())]);
    }

    #[test]
    fn names_follow_subdirectories() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("git")).unwrap();
        std::fs::write(
            dir.path().join("git/commit.toml"),
            "description = \"Commit\"\nprompt = \"Write a commit message for {{args}}\"\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("bad.toml"), "prompt = ").unwrap();
        let (commands, problems) = load(&[dir.path().to_path_buf()]);
        assert_eq!(commands.len(), 1);
        assert_eq!(commands[0].name, "git:commit");
        assert_eq!(commands[0].description, "Commit");
        assert_eq!(problems.len(), 1);
    }
}
