//! The search behind `read_many_files`: the include and exclude patterns, the walk of
//! every root, the project's ignore files, and each matching file read beneath its root.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use tokio_util::sync::CancellationToken;

use super::{Gathered, Params, Skipped, DEFAULT_EXCLUDES, MAX_TOTAL_BYTES};
use crate::engine::file_kind;
use crate::platform::filesystem::{Confined, FsError, OpenMode};
use crate::platform::ignore_rules::IgnoreRules;
use crate::protocol::content::Part;
use crate::protocol::LlmContent;
use crate::tools::file_reader::{process_open_file, LineWindow, Processed};
use crate::tools::file_walk::{glob_matcher, walk_files};

fn glob_set(patterns: &[String]) -> Result<GlobSet, String> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let pattern = pattern.trim_end_matches('/');
        let glob = GlobBuilder::new(pattern)
            .case_insensitive(true)
            .literal_separator(true)
            .build()
            .map_err(|e| e.to_string())?;
        builder.add(glob);
        // A directory pattern (`temp/`, `**/dist`) also covers what is inside.
        if !pattern.ends_with("**") {
            let inner = GlobBuilder::new(&format!("{pattern}/**"))
                .case_insensitive(true)
                .literal_separator(true)
                .build()
                .map_err(|e| e.to_string())?;
            builder.add(inner);
        }
    }
    builder.build().map_err(|e| e.to_string())
}

/// The include patterns for one root: existing files literally, existing directories
/// as everything below them, anything else as a glob.
fn include_matchers(root: &Path, include: &[String]) -> Result<Vec<globset::GlobMatcher>, String> {
    let mut out = Vec::new();
    for raw in include {
        let normalized = raw.replace('\\', "/");
        let normalized = normalized.strip_prefix("./").unwrap_or(&normalized);
        let full = root.join(normalized);
        let pattern = if full.is_file() {
            globset::escape(normalized)
        } else if full.is_dir() {
            format!("{}/**", globset::escape(normalized.trim_end_matches('/')))
        } else {
            normalized.to_string()
        };
        out.push(glob_matcher(&pattern, false)?);
    }
    Ok(out)
}

pub(super) fn gather(
    ws: &Confined,
    p: &Params,
    cancel: &CancellationToken,
) -> Result<Gathered, String> {
    let mut skipped: Vec<Skipped> = Vec::new();
    let files = matching_files(ws, p, cancel, &mut skipped)?;
    let mut text = String::new();
    let mut texts: Vec<(PathBuf, String)> = Vec::new();
    let mut media: Vec<Part> = Vec::new();
    let mut read: Vec<String> = Vec::new();
    for path in &files {
        let (rel, processed) = match read_matching_file(ws, path, &p.include) {
            Ok(read) => read,
            Err(skip) => {
                skipped.push(skip);
                continue;
            }
        };
        match processed.output.llm_content {
            LlmContent::Text(content) => {
                let mut block = format!("--- {} ---\n\n", path.display());
                if processed.truncated {
                    block.push_str("[WARNING: This file was truncated. To view the full content, use the 'read_file' tool on this specific file.]\n\n");
                }
                block.push_str(&content);
                block.push_str("\n\n");
                let file_text = content;
                if text.len() + block.len() > MAX_TOTAL_BYTES {
                    skipped.push(Skipped {
                        path: rel,
                        reason: format!(
                            "total size limit of {} MB for one call reached",
                            MAX_TOTAL_BYTES / (1024 * 1024)
                        ),
                    });
                    continue;
                }
                text.push_str(&block);
                texts.push((path.clone(), file_text));
            }
            LlmContent::Parts(parts) => media.extend(parts),
        }
        read.push(rel);
    }
    Ok(Gathered {
        text,
        files: texts,
        media,
        read,
        skipped,
    })
}

/// The files of every root the include patterns match and the exclude patterns do
/// not, in path order; those the project's ignore files leave out are counted in
/// `skipped`.
fn matching_files(
    ws: &Confined,
    p: &Params,
    cancel: &CancellationToken,
    skipped: &mut Vec<Skipped>,
) -> Result<BTreeSet<PathBuf>, String> {
    let mut excludes: Vec<String> = Vec::new();
    if p.use_default_excludes {
        excludes.extend(DEFAULT_EXCLUDES.iter().map(|s| s.to_string()));
    }
    excludes.extend(p.exclude.iter().cloned());
    let exclude_set = glob_set(&excludes)?;
    let options = p.file_filtering_options.unwrap_or_default().resolve();
    let mut rules = IgnoreRules::new(options);
    let mut files: BTreeSet<PathBuf> = BTreeSet::new();
    let mut ignored = 0usize;
    for root in &ws.roots() {
        let matchers = include_matchers(root, &p.include)?;
        let Some(walked) = walk_files(root, Some(cancel)) else {
            return Err("the search was cancelled".into());
        };
        for file in walked {
            if !matchers.iter().any(|m| m.is_match(&file.rel)) || exclude_set.is_match(&file.rel) {
                continue;
            }
            if rules.is_ignored(root, &file.path, false) {
                ignored += 1;
                continue;
            }
            files.insert(file.path);
        }
    }
    if ignored > 0 {
        skipped.push(Skipped {
            path: format!("{ignored} file(s)"),
            reason: "ignored by project ignore files".into(),
        });
    }
    Ok(files)
}

/// One matching file opened beneath its root and read, with the name it is shown
/// by; `Err`: why it is skipped (outside the workspace, unreadable, media not asked
/// for by name).
fn read_matching_file(
    ws: &Confined,
    path: &Path,
    include: &[String],
) -> Result<(String, Processed), Skipped> {
    let rel = ws.display_relative(path);
    // Opened once, beneath its root: what is checked is what is read.
    let opened = match ws.open(path, OpenMode::Read) {
        Ok(opened) => opened,
        Err(FsError::Path(_)) => {
            return Err(Skipped {
                path: path.display().to_string(),
                reason: "Security: Path not in workspace".into(),
            });
        }
        Err(e) => {
            return Err(Skipped {
                path: rel,
                reason: format!("Read error: {e}"),
            });
        }
    };
    let head = read_head(&opened.file);
    let kind = file_kind::detect(path, &head);
    if kind.is_media() && !explicitly_requested(path, include) {
        return Err(Skipped {
            path: rel,
            reason:
                "asset file (image/pdf/audio) was not explicitly requested by name or extension"
                    .into(),
        });
    }
    let processed = process_open_file(&opened.real_path, &rel, LineWindow::Default, opened.file);
    if let Some(error) = &processed.output.error {
        return Err(Skipped {
            path: rel,
            reason: format!("Read error: {}", error.message),
        });
    }
    Ok((rel, processed))
}

/// The first 4 KiB, read at offset 0 without moving the file's position.
fn read_head(file: &std::fs::File) -> Vec<u8> {
    use std::os::unix::fs::FileExt;
    let mut head = vec![0u8; 4096];
    let n = file.read_at(&mut head, 0).unwrap_or(0);
    head.truncate(n);
    head
}

/// A media file is read only when a pattern names its extension or its name.
fn explicitly_requested(path: &Path, include: &[String]) -> bool {
    let ext = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy().to_lowercase()))
        .unwrap_or_default();
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    include.iter().any(|pattern| {
        (!ext.is_empty() && pattern.to_lowercase().contains(&ext))
            || (!stem.is_empty() && pattern.contains(&stem))
    })
}
