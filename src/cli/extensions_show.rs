//! What `troupe extensions list`, `troupe -l` and `troupe config` show of the
//! installed extensions: gemini-cli 0.61's lines (`toOutputString`, "Installed
//! extensions:") where scripts read them.

use std::path::Path;

use crate::engine::sanitize::one_line;
use crate::frontends::AppError;
use crate::settings::extensions::{self, Extension};

use super::extensions::installed;

/// `-l/--list-extensions`: gemini-cli's list of every installed extension, then exit.
pub fn list_flag() -> Result<i32, AppError> {
    let cwd = std::env::current_dir()?;
    println!("Installed extensions:");
    for ext in installed(&cwd) {
        println!("- {}", ext.name);
    }
    Ok(0)
}

/// gemini-cli's `toOutputString` of one extension (without colour).
pub fn describe(ext: &Extension) -> String {
    let mut lines = vec![
        format!(
            "{} {} ({})",
            if ext.active { "\u{2713}" } else { "\u{2717}" },
            ext.name,
            ext.version
        ),
        format!(" ID: {}", ext.id),
        format!(" name: {}", extensions::hash(&ext.name)),
        format!(" Path: {}", ext.path.display()),
    ];
    if let Some(install) = &ext.install {
        lines.push(format!(
            " Source: {} (Type: {})",
            install.source, install.kind
        ));
        if let Some(r) = &install.r#ref {
            lines.push(format!(" Ref: {r}"));
        }
        if let Some(tag) = &install.release_tag {
            lines.push(format!(" Release tag: {tag}"));
        }
    }
    lines.push(format!(" Enabled (User): {}", ext.user_enabled));
    lines.push(format!(" Enabled (Workspace): {}", ext.active));
    let mut section = |title: &str, items: Vec<String>| {
        if !items.is_empty() {
            lines.push(format!(" {title}:"));
            lines.extend(items.into_iter().map(|i| format!("  {i}")));
        }
    };
    section(
        "Context files",
        ext.context_files
            .iter()
            .map(|f| f.display().to_string())
            .collect(),
    );
    if ext.manifest.raw.get("mcpServers").is_some() {
        lines.push(" MCP servers:".to_string());
        lines.extend(
            ext.manifest
                .mcp_servers
                .iter()
                .map(|(n, _)| format!("  {n}")),
        );
    }
    if ext.manifest.raw.get("excludeTools").is_some() {
        lines.push(" Excluded tools:".to_string());
        lines.extend(ext.manifest.exclude_tools.iter().map(|t| format!("  {t}")));
    }
    let skills = crate::settings::skills::load_dir(&ext.dir("skills"), false);
    if !skills.is_empty() {
        lines.push(" Agent skills:".to_string());
        lines.extend(
            skills
                .iter()
                .map(|s| format!("  {}: {}", s.name, s.description)),
        );
    }
    lines.join("\n")
}

/// `troupe extensions list`.
pub(super) fn list(cwd: &Path) -> Result<i32, AppError> {
    let all = installed(cwd);
    if all.is_empty() {
        println!("No extensions installed.");
        return Ok(0);
    }
    let shown: Vec<String> = all.iter().map(describe).collect();
    println!("{}", shown.join("\n\n"));
    Ok(0)
}

/// The extensions as `effective.extensions` of `troupe config --json`.
pub fn config_json(loaded: &extensions::LoadedExtensions) -> serde_json::Value {
    let all: Vec<serde_json::Value> = loaded
        .all
        .iter()
        .map(|e| {
            serde_json::json!({
                "name": e.name,
                "version": e.version,
                "enabled": e.active,
                "path": e.path.display().to_string(),
                "mcp_servers": e.manifest.mcp_servers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
                "context_files": e.context_files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>(),
                "exclude_tools": e.manifest.exclude_tools,
            })
        })
        .collect();
    serde_json::json!({
        "dir": extensions::extensions_dir().display().to_string(),
        "installed": all,
        "warnings": loaded.warnings,
    })
}

/// The `#   extensions …` lines of `troupe config`'s listing.
pub fn config_text(value: &serde_json::Value) -> String {
    let all = value["installed"].as_array().cloned().unwrap_or_default();
    let mut out = format!(
        "#   extensions: {} in {}\n",
        all.len(),
        value["dir"].as_str().unwrap_or("")
    );
    for e in &all {
        let state = match e["enabled"].as_bool() {
            Some(true) => "enabled",
            _ => "disabled here",
        };
        out.push_str(&format!(
            "#     {} {} ({state}): {}\n",
            e["name"].as_str().unwrap_or(""),
            e["version"].as_str().unwrap_or(""),
            e["path"].as_str().unwrap_or("")
        ));
    }
    for w in value["warnings"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "#   extension warning: {}\n",
            one_line(w.as_str().unwrap_or(""))
        ));
    }
    out
}
