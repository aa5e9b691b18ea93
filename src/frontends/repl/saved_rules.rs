//! "Always allow" on disk: the rules with origin `saved` are written to the user's
//! config file as `approval.allowed`, keeping the rest of the file (comments included)
//! as it was. The file is replaced atomically.

use std::path::{Path, PathBuf};

use toml_edit::{Array, DocumentMut, Item, Table};

use crate::actors::session::SAVED_ORIGIN;
use crate::engine::policy::format_rule;
use crate::protocol::AllowRule;

/// Why the rules could not be saved.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot parse {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path} has `approval` set to something other than a table")]
    NotATable { path: PathBuf },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The `approval.allowed` strings of the saved rules, in order.
pub fn saved_rule_texts(rules: &[AllowRule]) -> Vec<String> {
    rules
        .iter()
        .filter(|r| r.origin == SAVED_ORIGIN)
        .map(|r| format_rule(&r.tool, r.key.as_deref()))
        .collect()
}

/// The saved rules went from `before` to `after` in this session: the config file at
/// `path` gets the added ones and loses the revoked ones, and keeps every other rule it
/// holds (one another process saved, or one a `-c` flag or a project file overrode for
/// this run).
pub fn update_allowed(path: &Path, before: &[String], after: &[String]) -> Result<(), SaveError> {
    let mut allowed = allowed_in(path)?;
    allowed.retain(|rule| after.contains(rule) || !before.contains(rule));
    for rule in after {
        if !allowed.contains(rule) {
            allowed.push(rule.clone());
        }
    }
    save_allowed(path, &allowed)
}

/// The `approval.allowed` strings the config file at `path` holds now.
fn allowed_in(path: &Path) -> Result<Vec<String>, SaveError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(SaveError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let doc: DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| SaveError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    Ok(doc
        .get("approval")
        .and_then(|a| a.get("allowed"))
        .and_then(Item::as_array)
        .map(|rules| {
            rules
                .iter()
                .filter_map(|r| r.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default())
}

/// Writes `allowed` as `approval.allowed` into the config file at `path`.
pub fn save_allowed(path: &Path, allowed: &[String]) -> Result<(), SaveError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => {
            return Err(SaveError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let mut doc: DocumentMut =
        text.parse()
            .map_err(|e: toml_edit::TomlError| SaveError::Parse {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
    let approval = doc
        .entry("approval")
        .or_insert_with(|| Item::Table(Table::new()));
    let Some(table) = approval.as_table_like_mut() else {
        return Err(SaveError::NotATable {
            path: path.to_path_buf(),
        });
    };
    let array: Array = allowed.iter().map(String::as_str).collect();
    table.insert("allowed", toml_edit::value(array));
    let write_err = |source| SaveError::Write {
        path: path.to_path_buf(),
        source,
    };
    // The one atomic write every writer uses (mode kept, fsynced, renamed in place).
    crate::platform::filesystem::atomic_write::write_owned_path(
        path,
        doc.to_string().as_bytes(),
        &crate::platform::filesystem::WriteExpect::Any,
    )
    .map_err(|e| write_err(std::io::Error::other(e.to_string())))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_update_keeps_the_rules_this_session_did_not_load() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "[approval]\nallowed = [\"glob\", \"read_file\"]\n").unwrap();
        // The session had loaded only `read_file` as saved (say), revoked it, and saved
        // `replace`: `glob`, which it never loaded, stays.
        update_allowed(&path, &["read_file".into()], &["replace".into()]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("allowed = [\"glob\", \"replace\"]"), "{text}");
    }

    #[test]
    fn keeps_the_rest_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "# mine\n[model]\nmax_turns = 7 # keep\n").unwrap();
        save_allowed(&path, &["replace(/w/a.rs)".into()]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("# mine\n[model]\nmax_turns = 7 # keep\n"),
            "{text}"
        );
        assert!(
            text.contains("[approval]\nallowed = [\"replace(/w/a.rs)\"]"),
            "{text}"
        );
        save_allowed(&path, &[]).unwrap();
        assert!(std::fs::read_to_string(&path)
            .unwrap()
            .contains("allowed = []"));
    }
}
