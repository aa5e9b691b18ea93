//! `troupe hooks migrate --from-claude`: converts Claude Code hooks
//! (`.claude/settings.local.json`, else `.claude/settings.json`) to gemini-cli's format
//! and writes them to the workspace's `.gemini/settings.json` (which Troupe reads), as
//! gemini-cli 0.61 does, with three differences: Claude's `timeout` (seconds) becomes
//! milliseconds, so a 60-second hook is not cut off after 60 ms; an event Troupe has no
//! equivalent for (`SubagentStop`, …) is left out with a note instead of being written
//! for Troupe to refuse; and Claude's tool names in matchers become Troupe's real tool
//! names (`Grep` → `grep_search`, `mcp__server__tool` → `mcp_server_tool`, …).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::protocol::hooks::HookEvent;
use crate::tools::{
    glob, grep, list_directory, read_file, replace, shell, web_fetch, write_file, write_todos,
};

/// Why a migration could not be done.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error("No Claude Code settings found in .claude directory. Expected settings.json or settings.local.json")]
    NoClaudeSettings,
    #[error("cannot read {path}: {message}")]
    Read { path: String, message: String },
    #[error("cannot write {path}: {message}")]
    Write { path: String, message: String },
}

/// Claude Code's events and their true equivalents. Claude's `SubagentStop` (and any
/// other event) has none: gemini-cli 0.61 and Troupe fire no hook when a subagent
/// stops.
const EVENTS: [(&str, &str); 8] = [
    ("PreToolUse", "BeforeTool"),
    ("PostToolUse", "AfterTool"),
    ("UserPromptSubmit", "BeforeAgent"),
    ("Stop", "AfterAgent"),
    ("SessionStart", "SessionStart"),
    ("SessionEnd", "SessionEnd"),
    ("PreCompact", "PreCompress"),
    ("Notification", "Notification"),
];

/// Claude Code's tool names and Troupe's.
const TOOLS: [(&str, &str); 11] = [
    ("MultiEdit", replace::NAME),
    ("Edit", replace::NAME),
    ("Bash", shell::NAME),
    ("Read", read_file::NAME),
    ("Write", write_file::NAME),
    ("Glob", glob::NAME),
    ("Grep", grep::NAME),
    ("LS", list_directory::NAME),
    ("WebFetch", web_fetch::NAME),
    ("WebSearch", "google_web_search"),
    ("TodoWrite", write_todos::NAME),
];

/// Troupe's name for a Claude Code event: its equivalent, or the name itself when it is
/// already one of Troupe's (gemini-cli's) events.
fn event_name(claude: &str) -> Option<String> {
    EVENTS
        .iter()
        .find(|(c, _)| *c == claude)
        .map(|(_, g)| g.to_string())
        .or_else(|| HookEvent::parse(claude).map(|e| e.as_str().to_string()))
}

/// A matcher with Claude's tool names replaced by Troupe's, wherever they stand as
/// whole words (`Edit|Write` → `replace|write_file`), and Claude's MCP tool names
/// (`mcp__server__tool`, `mcp__server__.*`) by gemini-cli's (`mcp_server_tool`).
fn transform_matcher(matcher: &str) -> String {
    let names: Vec<&str> = TOOLS.iter().map(|(claude, _)| *claude).collect();
    let Ok(tools) = regex::Regex::new(&format!(r"\b(?:{})\b", names.join("|"))) else {
        return matcher.to_string();
    };
    let out = tools.replace_all(matcher, |caps: &regex::Captures| {
        TOOLS
            .iter()
            .find(|(claude, _)| *claude == &caps[0])
            .map(|(_, troupe)| troupe.to_string())
            .unwrap_or_else(|| caps[0].to_string())
    });
    // `mcp__server__tool`: the server's part ends at the next `__`; a bare
    // `mcp__server` (every tool of the server) keeps only its prefix changed.
    let Ok(mcp) = regex::Regex::new(r"\bmcp__([^\s|()]*?)__") else {
        return out.into_owned();
    };
    let out = mcp.replace_all(&out, "mcp_${1}_");
    dedupe_alternatives(&out.replace("mcp__", "mcp_"))
}

/// `a|a|b` → `a|b`, in the whole matcher and in each group (`^(a|a)$` → `^(a)$`): two
/// of Claude's names can become one of Troupe's (`Edit|MultiEdit` → `replace`).
fn dedupe_alternatives(pattern: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                current.push(c);
                current.extend(chars.next());
            }
            '(' => {
                let mut depth = 1;
                let mut inner = String::new();
                for c in chars.by_ref() {
                    depth += match c {
                        '(' => 1,
                        ')' => -1,
                        _ => 0,
                    };
                    if depth == 0 {
                        break;
                    }
                    inner.push(c);
                }
                current.push('(');
                current.push_str(&dedupe_alternatives(&inner));
                current.push(')');
            }
            '|' => parts.push(std::mem::take(&mut current)),
            _ => current.push(c),
        }
    }
    parts.push(current);
    let mut kept: Vec<String> = Vec::new();
    for part in parts {
        if !kept.contains(&part) {
            kept.push(part);
        }
    }
    kept.join("|")
}

fn migrate_hook(hook: &Value) -> Value {
    let Some(obj) = hook.as_object() else {
        return hook.clone();
    };
    let mut out = Map::new();
    if let Some(cmd) = obj.get("command") {
        out.insert(
            "command".into(),
            match cmd.as_str() {
                Some(s) => Value::String(s.replace("$CLAUDE_PROJECT_DIR", "$GEMINI_PROJECT_DIR")),
                None => cmd.clone(),
            },
        );
    }
    if obj.get("type").and_then(Value::as_str) == Some("command") {
        out.insert("type".into(), "command".into());
    }
    if let Some(secs) = obj.get("timeout").and_then(Value::as_f64) {
        out.insert(
            "timeout".into(),
            Value::from((secs * 1000.0).round() as u64),
        );
    }
    Value::Object(out)
}

/// What a Claude Code settings document becomes.
#[derive(Debug, Default, PartialEq)]
pub struct Converted {
    /// The gemini-cli `hooks` object.
    pub hooks: Map<String, Value>,
    /// One line per event left out.
    pub notes: Vec<String>,
}

/// The gemini-cli `hooks` object for a Claude Code settings document, without the
/// events Troupe has no equivalent for (each named in a note).
pub fn convert(claude: &Value) -> Converted {
    let mut out = Converted::default();
    let Some(hooks) = claude.get("hooks").and_then(Value::as_object) else {
        return out;
    };
    for (event, defs) in hooks {
        let Some(defs) = defs.as_array() else {
            continue;
        };
        let Some(name) = event_name(event) else {
            let why = if event.starts_with("Subagent") {
                "gemini-cli and Troupe fire no hook when a subagent stops"
            } else {
                "Troupe has no such event"
            };
            out.notes.push(format!(
                "Skipped the {event} hook(s): no equivalent ({why})."
            ));
            continue;
        };
        let migrated: Vec<Value> = defs
            .iter()
            .map(|def| {
                let Some(def) = def.as_object() else {
                    return def.clone();
                };
                let mut m = Map::new();
                if let Some(matcher) = def.get("matcher").and_then(Value::as_str) {
                    m.insert("matcher".into(), transform_matcher(matcher).into());
                }
                if let Some(seq) = def.get("sequential") {
                    m.insert("sequential".into(), seq.clone());
                }
                if let Some(list) = def.get("hooks").and_then(Value::as_array) {
                    m.insert(
                        "hooks".into(),
                        Value::Array(list.iter().map(migrate_hook).collect()),
                    );
                }
                Value::Object(m)
            })
            .collect();
        match out.hooks.get_mut(&name).and_then(Value::as_array_mut) {
            Some(known) => known.extend(migrated),
            None => {
                out.hooks.insert(name, Value::Array(migrated));
            }
        }
    }
    out
}

/// Migrates the hooks of `workspace`; returns the lines to print.
pub fn run(workspace: &Path) -> Result<Vec<String>, MigrateError> {
    let claude_dir = workspace.join(".claude");
    let source = [
        claude_dir.join("settings.local.json"),
        claude_dir.join("settings.json"),
    ]
    .into_iter()
    .find(|p| p.is_file())
    .ok_or(MigrateError::NoClaudeSettings)?;
    let claude = read_json(&source)?;
    let mut lines = vec![format!(
        "Found Claude Code settings in: {}",
        source.display()
    )];
    let Converted {
        hooks: migrated,
        notes,
    } = convert(&claude);
    lines.extend(notes);
    if migrated.is_empty() {
        lines.push("No hooks found in Claude Code settings to migrate.".into());
        return Ok(lines);
    }
    lines.push(format!("Migrating {} hook event(s)...", migrated.len()));
    let target: PathBuf = workspace.join(".gemini").join("settings.json");
    let mut settings = if target.is_file() {
        read_json(&target)?
    } else {
        Value::Object(Map::new())
    };
    let Some(obj) = settings.as_object_mut() else {
        return Err(MigrateError::Read {
            path: target.display().to_string(),
            message: "not a JSON object".into(),
        });
    };
    let mut hooks = obj
        .get("hooks")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    hooks.extend(migrated);
    obj.insert("hooks".into(), Value::Object(hooks));
    let before = crate::settings::trust::pin::file_hash(&target);
    write_json(&target, &settings)?;
    // Troupe's own write: the trust pin follows it (when the file was as trusted).
    crate::frontends::trust::pin_own_write(workspace, &target, before.as_deref());
    lines.push("✓ Hooks successfully migrated to .gemini/settings.json".into());
    lines.push(
        "\nMigration complete! Please review the migrated hooks in .gemini/settings.json".into(),
    );
    Ok(lines)
}

fn read_json(path: &Path) -> Result<Value, MigrateError> {
    let err = |message: String| MigrateError::Read {
        path: path.display().to_string(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    serde_json::from_str(&text).map_err(|e| err(e.to_string()))
}

/// Written next to the target and renamed over it: never half a file.
fn write_json(path: &Path, value: &Value) -> Result<(), MigrateError> {
    let err = |message: String| MigrateError::Write {
        path: path.display().to_string(),
        message,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| err(e.to_string()))?;
    let text = serde_json::to_string_pretty(value).map_err(|e| err(e.to_string()))?;
    use crate::platform::filesystem::owned_file::{replace_private, ReplaceError};
    replace_private(path, format!("{text}\n").as_bytes()).map_err(|e| match e {
        // As `tempfile`'s persist error said it.
        ReplaceError::Rename(e) => err(format!("failed to persist temporary file: {e}")),
        other => err(other.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn converts_events_tools_dirs_and_timeouts() {
        let claude = json!({"hooks": {"PreToolUse": [{"matcher": "Edit|Write", "hooks": [
            {"type": "command", "command": "$CLAUDE_PROJECT_DIR/check.sh", "timeout": 30}]}]}});
        let out = convert(&claude);
        assert!(out.notes.is_empty());
        assert_eq!(
            Value::Object(out.hooks),
            json!({"BeforeTool": [{"matcher": "replace|write_file", "hooks": [
                {"command": "$GEMINI_PROJECT_DIR/check.sh", "type": "command", "timeout": 30000}]}]})
        );
    }

    #[test]
    fn claude_tool_names_become_troupes() {
        for (claude, troupe) in [
            ("Grep", "grep_search"),
            ("Glob|LS", "glob|list_directory"),
            ("Read", "read_file"),
            ("Edit|MultiEdit|Write", "replace|write_file"),
            ("^(Edit|MultiEdit)$", "^(replace)$"),
            (r"Read|\|Read", r"read_file|\|read_file"),
            (
                "^(Bash|WebFetch|WebSearch)$",
                "^(run_shell_command|web_fetch|google_web_search)$",
            ),
            ("mcp__memory__create_entities", "mcp_memory_create_entities"),
            ("mcp__github__.*|Read", "mcp_github_.*|read_file"),
            ("mcp__my_server__a|mcp__b__c", "mcp_my_server_a|mcp_b_c"),
            ("mcp__fs", "mcp_fs"),
            ("NotebookEdit|Readme", "NotebookEdit|Readme"),
            ("*", "*"),
        ] {
            assert_eq!(transform_matcher(claude), troupe, "{claude}");
        }
    }

    #[test]
    fn events_without_an_equivalent_are_left_out_with_a_note() {
        let hook = json!([{"hooks": [{"type": "command", "command": "true"}]}]);
        let claude = json!({"hooks": {"SubagentStop": hook, "Stop": hook, "Bogus": hook,
            "AfterTool": hook}});
        let out = convert(&claude);
        let mut events: Vec<&String> = out.hooks.keys().collect();
        events.sort();
        assert_eq!(events, ["AfterAgent", "AfterTool"]);
        assert_eq!(
            out.notes,
            [
                "Skipped the SubagentStop hook(s): no equivalent (gemini-cli and Troupe fire no hook when a subagent stops).",
                "Skipped the Bogus hook(s): no equivalent (Troupe has no such event)."
            ]
        );
    }
}
