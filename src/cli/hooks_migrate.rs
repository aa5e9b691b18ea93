//! `troupe hooks migrate --from-claude`: converts Claude Code hooks
//! (`.claude/settings.local.json`, else `.claude/settings.json`) to gemini-cli's format
//! and writes them to the workspace's `.gemini/settings.json` (which Troupe reads), as
//! gemini-cli 0.61 does. Unlike gemini-cli, Claude's `timeout` (seconds) becomes
//! milliseconds, so a 60-second hook is not cut off after 60 ms.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

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

const EVENTS: [(&str, &str); 9] = [
    ("PreToolUse", "BeforeTool"),
    ("PostToolUse", "AfterTool"),
    ("UserPromptSubmit", "BeforeAgent"),
    ("Stop", "AfterAgent"),
    ("SubAgentStop", "AfterAgent"),
    ("SessionStart", "SessionStart"),
    ("SessionEnd", "SessionEnd"),
    ("PreCompact", "PreCompress"),
    ("Notification", "Notification"),
];

const TOOLS: [(&str, &str); 7] = [
    ("Edit", "replace"),
    ("Bash", "run_shell_command"),
    ("Read", "read_file"),
    ("Write", "write_file"),
    ("Glob", "glob"),
    ("Grep", "grep"),
    ("LS", "ls"),
];

fn transform_matcher(matcher: &str) -> String {
    let mut out = matcher.to_string();
    for (claude, gemini) in TOOLS {
        if let Ok(re) = regex::Regex::new(&format!(r"\b{claude}\b")) {
            out = re.replace_all(&out, gemini).into_owned();
        }
    }
    out
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

/// The gemini-cli `hooks` object for a Claude Code settings document.
pub fn convert(claude: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    let Some(hooks) = claude.get("hooks").and_then(Value::as_object) else {
        return out;
    };
    for (event, defs) in hooks {
        let Some(defs) = defs.as_array() else {
            continue;
        };
        let name = EVENTS
            .iter()
            .find(|(c, _)| c == event)
            .map(|(_, g)| g.to_string())
            .unwrap_or_else(|| event.clone());
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
        out.insert(name, Value::Array(migrated));
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
    let migrated = convert(&claude);
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
    write_json(&target, &settings)?;
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
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| err(e.to_string()))?;
    std::io::Write::write_all(&mut tmp, format!("{text}\n").as_bytes())
        .map_err(|e| err(e.to_string()))?;
    tmp.persist(path).map_err(|e| err(e.to_string()))?;
    Ok(())
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
        assert_eq!(
            Value::Object(out),
            json!({"BeforeTool": [{"matcher": "replace|write_file", "hooks": [
                {"command": "$GEMINI_PROJECT_DIR/check.sh", "type": "command", "timeout": 30000}]}]})
        );
    }
}
