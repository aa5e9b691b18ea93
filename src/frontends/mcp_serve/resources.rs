//! `troupe mcp serve`'s resources: the workspace's files (`.gitignore`d,
//! `.geminiignore`d and pruned directories left out, as `glob` does), each as a
//! `file://` URI, read through the session's confined file system — the same checks
//! as `read_file`: inside a workspace root, no blocked segment (`.git`, `.env`, …), a
//! regular file, at most 20 MiB.

use std::path::PathBuf;

use base64::Engine as _;
use rmcp::model::{ListResourcesResult, ReadResourceResult};
use rmcp::ErrorData;
use serde_json::{json, Value};

use crate::platform::filesystem::{Confined, FsWork, OpenMode};
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
/// in base64 when they are not UTF-8.
pub async fn read(services: &Services, uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let not_found = |why: String| ErrorData::resource_not_found(why, Some(json!({"uri": uri})));
    let path = url::Url::parse(uri)
        .ok()
        .filter(|u| u.scheme() == "file")
        .and_then(|u| u.to_file_path().ok())
        .ok_or_else(|| not_found(format!("{uri} is not a file:// URI of a workspace file")))?;
    let read = services
        .fs
        .read(path.clone())
        .await
        .map_err(|e| not_found(format!("{uri}: {e}")))?;
    let mime = mime_of(&path);
    let content = match String::from_utf8(read.bytes) {
        Ok(text) => json!({"uri": uri, "mimeType": mime, "text": text}),
        Err(e) => json!({"uri": uri, "mimeType": mime,
            "blob": base64::engine::general_purpose::STANDARD.encode(e.into_bytes())}),
    };
    serde_json::from_value(json!({ "contents": [content] }))
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

/// The listing of [`workspace_files`], on the FileSystem pool.
struct WorkspaceFiles;

impl FsWork for WorkspaceFiles {
    type Output = Vec<(PathBuf, String, u64)>;
    fn perform(self, ws: &Confined) -> Self::Output {
        workspace_files(ws)
    }
}

/// Every listable workspace file (path, name relative to its root, size), sorted by
/// name, at most [`MAX_LISTED`]. Runs on the file system's pool.
fn workspace_files(ws: &Confined) -> Vec<(PathBuf, String, u64)> {
    let mut rules = IgnoreRules::new(FilterOptions::default());
    let mut out = Vec::new();
    for root in ws.roots() {
        let Some(files) = crate::tools::file_walk::walk_files(&root, None) else {
            continue;
        };
        let mut files = files;
        files.sort_by(|a, b| a.rel.cmp(&b.rel));
        for file in files {
            if out.len() >= MAX_LISTED {
                return out;
            }
            if rules.is_ignored(&root, &file.path, false) {
                continue;
            }
            // Opened beneath its root, as a read would be (a blocked segment, or a
            // link leading out, is left out).
            let Ok(opened) = ws.open(&file.path, OpenMode::Handle) else {
                continue;
            };
            let size = opened.file.metadata().map(|m| m.len()).unwrap_or(0);
            out.push((file.path, file.rel, size));
        }
    }
    out
}

fn uri_of(path: &std::path::Path) -> String {
    url::Url::from_file_path(path)
        .map(String::from)
        .unwrap_or_else(|_| format!("file://{}", path.display()))
}

fn mime_of(path: &std::path::Path) -> String {
    mime_guess::from_path(path)
        .first()
        .map(|m| m.essence_str().to_string())
        .unwrap_or_else(|| "text/plain".to_string())
}
