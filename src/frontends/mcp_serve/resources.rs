//! `troupe mcp serve`'s resources: the workspace's files, each as a `file://` URI,
//! read through the session's confined file system with `read_file`'s checks and
//! reasons: inside a workspace root (a secret the workspace holds, `.env`, `.git`, …,
//! is "sensitive", not "outside"), not excluded by the ignore files `read_file`
//! honours (`.gitignore` in a git repository, `.geminiignore`, `.troupeignore`), a
//! regular file of at most 20 MiB. `resources/list` lists only what `resources/read`
//! serves: every listed file passes the same [`admit`].

use std::path::{Path, PathBuf};

use base64::Engine as _;
use rmcp::model::{ListResourcesResult, ReadResourceResult};
use rmcp::ErrorData;
use serde_json::{json, Value};

use crate::platform::filesystem::{
    read_reported_size, regular_file_meta, Confined, FsError, FsWork, OpenMode, MAX_READ_BYTES,
};
use crate::platform::ignore_rules::{FilterOptions, IgnoreRules};
use crate::tools::Services;

/// Resources in one `resources/list` page.
const PAGE: usize = 1000;

/// Files listed at most (a bigger workspace's other files can still be read by URI).
const MAX_LISTED: usize = 20_000;

/// The page of the workspace's files that starts at `cursor` (an offset, as the
/// previous page's `nextCursor` said).
pub async fn list(
    services: &Services,
    cursor: Option<&str>,
) -> Result<ListResourcesResult, ErrorData> {
    let start = match cursor {
        None => 0,
        Some(c) => c
            .parse::<usize>()
            .map_err(|_| ErrorData::invalid_params(format!("bad cursor `{c}`"), None))?,
    };
    let files = services
        .fs
        .perform(WorkspaceFiles)
        .await
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    let page: Vec<Value> = files
        .iter()
        .skip(start)
        .take(PAGE)
        .map(|(path, rel, size)| {
            json!({
                "uri": uri_of(path),
                "name": rel,
                "mimeType": mime_of(path),
                "size": size,
            })
        })
        .collect();
    let mut result = json!({ "resources": page });
    if start + PAGE < files.len() {
        result["nextCursor"] = json!((start + PAGE).to_string());
    }
    serde_json::from_value(result).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

/// The file `uri` names (a `file://` URI of a workspace file): its text, or its bytes
/// in base64 when they are not UTF-8; refused with `read_file`'s reason.
pub async fn read(services: &Services, uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let not_found = |why: String| ErrorData::resource_not_found(why, Some(json!({"uri": uri})));
    let path = url::Url::parse(uri)
        .ok()
        .filter(|u| u.scheme() == "file")
        .and_then(|u| u.to_file_path().ok())
        .ok_or_else(|| not_found(format!("{uri} is not a file:// URI of a workspace file")))?;
    let bytes = services
        .fs
        .perform(ReadResource(path.clone()))
        .await
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?
        .map_err(|why| not_found(format!("{uri}: {why}")))?;
    let mime = mime_of(&path);
    let content = match String::from_utf8(bytes) {
        Ok(text) => json!({"uri": uri, "mimeType": mime, "text": text}),
        Err(e) => json!({"uri": uri, "mimeType": mime,
            "blob": base64::engine::general_purpose::STANDARD.encode(e.into_bytes())}),
    };
    serde_json::from_value(json!({ "contents": [content] }))
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

/// One resource's bytes, on the FileSystem pool: [`admit`], then the read of the
/// file it opened.
struct ReadResource(PathBuf);

impl FsWork for ReadResource {
    type Output = Result<Vec<u8>, String>;
    fn perform(self, ws: &Confined) -> Self::Output {
        let mut rules = IgnoreRules::new(FilterOptions::default());
        let (mut file, real, size) = admit(ws, &mut rules, &self.0)?;
        read_reported_size(&mut file, size, MAX_READ_BYTES + 1)
            .map_err(|e| format!("Error reading file {}: {e}", real.display()))
    }
}

/// `read_file`'s checks of one path, in its order and with its words: opened
/// beneath its workspace root (a blocked segment refused as sensitive), not ignored,
/// a regular file within the size limit. Answers the open file, its real path and
/// its size.
fn admit(
    ws: &Confined,
    rules: &mut IgnoreRules,
    path: &Path,
) -> Result<(std::fs::File, PathBuf, u64), String> {
    let opened = match ws.open(path, OpenMode::Read) {
        Ok(opened) => opened,
        Err(FsError::Path(_)) if ws.is_sensitive(path) => {
            return Err(format!(
                "Access to sensitive path \"{}\" is blocked: `.git`, `.env`, `node_modules` and `gha-creds-*.json` are never read.",
                path.display()
            ))
        }
        Err(e) => return Err(e.to_string()),
    };
    let real = opened.real_path;
    let is_dir = opened.file.metadata().is_ok_and(|m| m.is_dir());
    if let Some(root) = ws.root_of(&real) {
        if rules.is_ignored(&root, &real, is_dir) {
            return Err(format!(
                "File path '{}' is ignored by configured ignore patterns.",
                real.display()
            ));
        }
    }
    let meta = regular_file_meta(&opened.file, &real).map_err(|e| e.to_string())?;
    if meta.len() > MAX_READ_BYTES {
        let too_large = FsError::TooLarge {
            path: real,
            size: meta.len(),
            limit: MAX_READ_BYTES,
        };
        return Err(too_large.to_string());
    }
    Ok((opened.file, real, meta.len()))
}

/// The listing of [`workspace_files`], on the FileSystem pool.
struct WorkspaceFiles;

impl FsWork for WorkspaceFiles {
    type Output = Vec<(PathBuf, String, u64)>;
    fn perform(self, ws: &Confined) -> Self::Output {
        workspace_files(ws)
    }
}

/// Every workspace file [`admit`] lets `resources/read` serve (path, name relative
/// to its root, size), sorted by name, at most [`MAX_LISTED`]. Runs on the file
/// system's pool.
fn workspace_files(ws: &Confined) -> Vec<(PathBuf, String, u64)> {
    let mut rules = IgnoreRules::new(FilterOptions::default());
    let mut out = Vec::new();
    for root in ws.roots() {
        let Some(mut files) = crate::tools::file_walk::walk_files(&root, None) else {
            continue;
        };
        files.sort_by(|a, b| a.rel.cmp(&b.rel));
        for file in files {
            if out.len() >= MAX_LISTED {
                return out;
            }
            if let Ok((_, _, size)) = admit(ws, &mut rules, &file.path) {
                out.push((file.path, file.rel, size));
            }
        }
    }
    out
}

fn uri_of(path: &Path) -> String {
    url::Url::from_file_path(path)
        .map(String::from)
        .unwrap_or_else(|_| format!("file://{}", path.display()))
}

fn mime_of(path: &Path) -> String {
    mime_guess::from_path(path)
        .first()
        .map(|m| m.essence_str().to_string())
        .unwrap_or_else(|| "text/plain".to_string())
}
