//! `troupe extensions new PATH [TEMPLATE]`: a new extension folder, with only its
//! manifest or from one of Troupe's templates (gemini-cli's template names; the files
//! are Troupe's own, each a small working example of one feature); and `troupe
//! extensions validate PATH`, gemini-cli's checks of a folder before it is installed.

use std::path::Path;

use crate::engine::sanitize::one_line;
use crate::frontends::AppError;
use crate::settings::extensions::manifest;

fn usage(message: impl Into<String>) -> AppError {
    AppError::Usage(message.into())
}

/// A template: its name and its files (path, text); `{name}` in a text is the
/// extension's name.
type Template = (&'static str, &'static [(&'static str, &'static str)]);

const TEMPLATES: &[Template] = &[
    (
        "context",
        &[
            ("gemini-extension.json", "{\n  \"name\": \"{name}\",\n  \"version\": \"1.0.0\",\n  \"contextFileName\": \"GEMINI.md\"\n}"),
            ("GEMINI.md", "# {name}\n\nInstructions the model reads at the start of every session go here.\n"),
        ],
    ),
    (
        "custom-commands",
        &[
            ("gemini-extension.json", "{\n  \"name\": \"{name}\",\n  \"version\": \"1.0.0\"\n}"),
            ("commands/files/largest.toml", "description = \"Name the largest files under a folder\"\nprompt = \"\"\"\nThese are the largest files under `{{args}}`:\n\n!{du -a {{args}} | sort -rn | head -20}\n\nSay which of them look like build output that could be ignored.\n\"\"\"\n"),
        ],
    ),
    (
        "exclude-tools",
        &[(
            "gemini-extension.json",
            "{\n  \"name\": \"{name}\",\n  \"version\": \"1.0.0\",\n  \"excludeTools\": [\"run_shell_command(git push)\"]\n}",
        )],
    ),
    (
        "hooks",
        &[
            ("gemini-extension.json", "{\n  \"name\": \"{name}\",\n  \"version\": \"1.0.0\"\n}"),
            ("hooks/hooks.json", "{\n  \"hooks\": {\n    \"SessionStart\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"sh ${extensionPath}${/}scripts${/}session-start.sh\"\n          }\n        ]\n      }\n    ]\n  }\n}"),
            ("scripts/session-start.sh", "#!/bin/sh\n# Runs when a session starts; what it prints on stdout (JSON) can add context.\necho '{\"hookSpecificOutput\": {\"additionalContext\": \"The {name} extension is loaded.\"}}'\n"),
        ],
    ),
    (
        "mcp-server",
        &[
            ("gemini-extension.json", "{\n  \"name\": \"{name}\",\n  \"version\": \"1.0.0\",\n  \"mcpServers\": {\n    \"{name}\": {\n      \"command\": \"python3\",\n      \"args\": [\"${extensionPath}${/}server.py\"],\n      \"cwd\": \"${extensionPath}\"\n    }\n  }\n}"),
            ("server.py", MCP_SERVER_PY),
        ],
    ),
    (
        "policies",
        &[
            ("gemini-extension.json", "{\n  \"name\": \"{name}\",\n  \"version\": \"1.0.0\"\n}"),
            ("policies/policies.toml", "# Extension-tier policy rules: an extension may make Troupe ask or refuse,\n# never allow without asking (`allow` rules are ignored).\n[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"git push\"\ndecision = \"ask_user\"\npriority = 100\n"),
        ],
    ),
    (
        "skills",
        &[
            ("gemini-extension.json", "{\n  \"name\": \"{name}\",\n  \"version\": \"1.0.0\"\n}"),
            ("skills/changelog/SKILL.md", "---\nname: changelog\ndescription: Writes a CHANGELOG entry for the current changes. Use when the user asks for release notes or a changelog line.\n---\n\nRead `git diff --stat` and the diff itself, then write one entry per user-visible\nchange, newest first, in the style the CHANGELOG already uses.\n"),
        ],
    ),
];

/// A stdio MCP server without dependencies: one tool, `word_count`.
const MCP_SERVER_PY: &str = r#"#!/usr/bin/env python3
"""A minimal MCP server on stdio (JSON-RPC, one message per line): one tool."""
import json
import sys

TOOL = {
    "name": "word_count",
    "description": "Counts the words of a text.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}


def answer(request):
    method = request.get("method")
    if method == "initialize":
        return {
            "protocolVersion": request["params"].get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "word-count", "version": "1.0.0"},
        }
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "tools/call":
        text = request["params"].get("arguments", {}).get("text", "")
        return {"content": [{"type": "text", "text": str(len(text.split()))}]}
    return {}


for line in sys.stdin:
    request = json.loads(line)
    if "id" not in request:
        continue
    reply = {"jsonrpc": "2.0", "id": request["id"], "result": answer(request)}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
"#;

/// The template names.
pub fn template_names() -> Vec<&'static str> {
    TEMPLATES.iter().map(|(n, _)| *n).collect()
}

/// The extension name a folder gives: its last component, with characters a name may
/// not hold turned into dashes.
fn name_of(path: &Path) -> String {
    let base = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    base.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Creates the folder `path` (which must not exist) with a manifest, or with the files
/// of `template`.
pub fn create(path: &str, template: Option<&str>) -> Result<i32, AppError> {
    let files = match template {
        None => None,
        Some(t) => Some(
            TEMPLATES
                .iter()
                .find(|(n, _)| *n == t)
                .map(|(_, files)| *files)
                .ok_or_else(|| {
                    AppError::Usage(format!(
                        "Invalid values:\n  Argument: template, Given: \"{t}\", Choices: {}",
                        template_names()
                            .iter()
                            .map(|n| format!("\"{n}\""))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?,
        ),
    };
    let dir = Path::new(path);
    if std::fs::symlink_metadata(dir).is_ok() {
        return Err(AppError::Usage(format!("Path already exists: {path}")));
    }
    std::fs::create_dir_all(dir)?;
    let name = name_of(&crate::settings::skills::absolute(dir));
    match (template, files) {
        (Some(t), Some(files)) => {
            for (rel, text) in files {
                let file = dir.join(rel);
                if let Some(parent) = file.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::write(&file, text.replace("{name}", &name))?;
            }
            println!("Successfully created new extension from template \"{t}\" at {path}.");
        }
        _ => {
            let manifest = serde_json::json!({"name": name, "version": "1.0.0"});
            let text = serde_json::to_string_pretty(&manifest).map_err(std::io::Error::other)?;
            std::fs::write(dir.join("gemini-extension.json"), text)?;
            println!("Successfully created new extension at {path}.");
        }
    }
    println!("You can install this using \"troupe extensions link {path}\" to test it out.");
    Ok(0)
}

/// node-semver's `valid` (a leading `v` or `=` and surrounding spaces allowed).
fn is_semver(version: &str) -> bool {
    let v = version.trim();
    let v = v.strip_prefix('=').unwrap_or(v).trim_start();
    let v = v.strip_prefix('v').unwrap_or(v);
    let (core, _build) = v.split_once('+').unwrap_or((v, ""));
    let (core, pre) = match core.split_once('-') {
        Some((c, p)) => (c, Some(p)),
        None => (core, None),
    };
    let numeric = |p: &str| {
        !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()) && (p == "0" || !p.starts_with('0'))
    };
    let parts: Vec<&str> = core.split('.').collect();
    let ident_ok =
        |p: &str| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    parts.len() == 3
        && parts.iter().all(|p| numeric(p))
        && pre.is_none_or(|p| p.split('.').all(ident_ok))
}

/// `troupe extensions validate PATH`.
pub fn validate(path: &str) -> Result<i32, AppError> {
    let root = crate::settings::skills::absolute(Path::new(path));
    let cwd = std::env::current_dir()?;
    let m = manifest::load(&root, &cwd).map_err(|e| usage(e.to_string()))?;
    let mut errors = Vec::new();
    let mut missing = Vec::new();
    for name in m.context_file_names.iter().flatten() {
        match manifest::context_file_path(name, &root) {
            Err(why) => errors.push(format!("Invalid context file path: \"{name}\". {why}")),
            Ok(p) if !p.exists() => missing.push(name.clone()),
            Ok(_) => {}
        }
    }
    if !missing.is_empty() {
        errors.push(format!(
            "The following context files referenced in gemini-extension.json are missing: {}",
            missing.join(",")
        ));
    }
    if !is_semver(&m.version) {
        eprintln!("Validation warnings:");
        eprintln!(
            "  - Warning: Version '{}' does not appear to be standard semver (e.g., 1.0.0).",
            m.version
        );
    }
    if !errors.is_empty() {
        eprintln!("Validation failed with the following errors:");
        for e in &errors {
            eprintln!("  - {}", one_line(e));
        }
        return Err(usage("Extension validation failed."));
    }
    println!("Extension {path} has been successfully validated.");
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semver_as_node_semver_reads_it() {
        for ok in ["1.0.0", "v1.2.3", "=1.2.3", " 1.2.3-beta.1+b ", "0.0.0"] {
            assert!(is_semver(ok), "{ok}");
        }
        for bad in ["1.0", "01.0.0", "1.0.0.0", "latest", ""] {
            assert!(!is_semver(bad), "{bad}");
        }
    }
}
