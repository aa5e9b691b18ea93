//! What trusting a folder would turn on, item by item, for the trust prompt: the
//! project settings file and each MCP server command line and hook command in it (or
//! in `.gemini/settings.json`), each custom command of `.gemini/commands` and
//! `.troupe/commands`, context files that import others, and a `.env` file (which
//! Troupe never loads, but gemini-cli does in a folder it trusts).

use std::path::{Path, PathBuf};

/// Items of one kind listed before the rest is counted (`… and 12 more`).
const SHOWN_PER_KIND: usize = 20;

/// What in `workspace` would change Troupe's behaviour if the folder were trusted, one
/// line per finding (empty: nothing to ask about). The lines quote repository files:
/// print them through the sanitiser.
pub fn discover(workspace: &Path, context_file_names: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    let project = workspace.join(".troupe");
    let config = project.join("config.toml");
    if config.is_file() {
        found.push("project settings (.troupe/config.toml)".to_string());
        capped(&mut found, mcp_servers(&config));
    }
    for (name, what) in [
        ("mcp.toml", "project MCP servers (.troupe/mcp.toml)"),
        ("hooks", "project hooks (.troupe/hooks)"),
        ("hooks.toml", "project hooks (.troupe/hooks.toml)"),
    ] {
        if project.join(name).exists() {
            found.push(what.to_string());
        }
    }
    if workspace.join(".gemini").join("settings.json").is_file() {
        found.push("gemini-cli project settings and hooks (.gemini/settings.json)".to_string());
    }
    capped(&mut found, hooks(workspace));
    capped(&mut found, commands(workspace));
    capped(&mut found, skills(workspace));
    for name in context_file_names {
        let path = workspace.join(name);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if text.lines().any(|l| {
            l.split_whitespace()
                .any(|w| w.starts_with('@') && w.len() > 1)
        }) {
            found.push(format!("a context file with @ imports ({name})"));
        }
    }
    for name in [".env", ".gemini/.env"] {
        if workspace.join(name).is_file() {
            found.push(format!(
                "{name}: Troupe never loads it (gemini-cli does, in a folder gemini-cli trusts)"
            ));
        }
    }
    found
}

/// Adds `items`, the first [`SHOWN_PER_KIND`] of them, and a count of the others.
fn capped(found: &mut Vec<String>, items: Vec<String>) {
    let more = items.len().saturating_sub(SHOWN_PER_KIND);
    found.extend(items.into_iter().take(SHOWN_PER_KIND));
    if more > 0 {
        found.push(format!("… and {more} more"));
    }
}

/// `MCP server "name" runs: command args…` (or `connects to: URL`) for each server of
/// the project settings file.
fn mcp_servers(config: &Path) -> Vec<String> {
    let servers = crate::settings::mcp::untrusted_project_servers(config, &[]);
    servers
        .iter()
        .map(|s| match &s.entry.url {
            Some(url) if s.entry.command.is_none() => {
                let mut line = format!(
                    "MCP server \"{}\" connects to: {}",
                    s.name,
                    crate::engine::sanitize::hosts::ascii_hosts(url)
                );
                for host in crate::engine::sanitize::hosts::idn_hosts(url) {
                    line.push_str(&format!(" (host written as {})", host.written));
                }
                line
            }
            _ => format!("MCP server \"{}\" runs: {}", s.name, s.target()),
        })
        .collect()
}

/// `hook <Event> runs: command (file)` for each hook the workspace's own files define.
fn hooks(workspace: &Path) -> Vec<String> {
    let sources = crate::settings::hooks::HookSources::standard(workspace);
    crate::settings::hooks::load(&sources)
        .defs
        .into_iter()
        .filter(|d| d.origin == crate::settings::hooks::HookOrigin::Project)
        .map(|d| {
            let file = Path::new(&d.source)
                .strip_prefix(workspace)
                .map(Path::to_path_buf)
                .unwrap_or_else(|_| PathBuf::from(&d.source));
            format!(
                "hook {} runs: {} ({})",
                d.event.as_str(),
                d.command,
                file.display()
            )
        })
        .collect()
}

/// `custom command /name (file)` for each `.toml` under the workspace's command folders.
fn commands(workspace: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for rel in [".gemini/commands", ".troupe/commands"] {
        let dir = workspace.join(rel);
        let mut files = Vec::new();
        collect_toml(&dir, &mut files, 0);
        files.sort();
        for file in files {
            let Ok(name) = file.strip_prefix(&dir) else {
                continue;
            };
            let name: Vec<String> = name
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().replace(':', "_"))
                .collect();
            out.push(format!(
                "custom command /{} ({rel}/{})",
                name.join(":"),
                file.strip_prefix(&dir).unwrap_or(&file).display()
            ));
        }
    }
    out
}

/// `agent skill "name" (.gemini/skills/name/SKILL.md)` for each skill of the
/// workspace's skill folders.
fn skills(workspace: &Path) -> Vec<String> {
    crate::settings::skills::skill_dirs(workspace)
        .into_iter()
        .filter(|(_, project)| *project)
        .flat_map(|(dir, _)| crate::settings::skills::load_dir(&dir, true))
        .map(|s| {
            let file = s.location.strip_prefix(workspace).unwrap_or(&s.location);
            format!("agent skill \"{}\" ({})", s.name, file.display())
        })
        .collect()
}

/// The `.toml` files under `dir`, a few levels deep at most.
fn collect_toml(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    if depth > 8 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            collect_toml(&path, out, depth + 1);
        } else if path.extension().is_some_and(|e| e == "toml") {
            out.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_names_what_a_folder_holds() {
        let dir = tempfile::tempdir().unwrap();
        let names = vec!["AGENTS.md".to_string()];
        assert!(discover(dir.path(), &names).is_empty());
        std::fs::write(dir.path().join("AGENTS.md"), "plain text\n").unwrap();
        assert!(discover(dir.path(), &names).is_empty());
        std::fs::write(dir.path().join("AGENTS.md"), "see @docs/more.md\n").unwrap();
        std::fs::create_dir_all(dir.path().join(".troupe")).unwrap();
        std::fs::write(dir.path().join(".troupe/config.toml"), "").unwrap();
        assert_eq!(discover(dir.path(), &names).len(), 2);
    }

    #[test]
    fn servers_hooks_commands_and_env_are_listed_one_by_one() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::create_dir_all(ws.join(".troupe/commands/git")).unwrap();
        std::fs::create_dir_all(ws.join(".gemini/commands")).unwrap();
        std::fs::write(
            ws.join(".troupe/config.toml"),
            "[mcp_servers.ev]\ncommand = \"node\"\nargs = [\"ev.js\", \"--x\"]\n[[hooks.BeforeTool]]\ncommand = \"./audit.sh\"\n",
        )
        .unwrap();
        std::fs::write(
            ws.join(".troupe/commands/git/commit.toml"),
            "prompt = \"x\"",
        )
        .unwrap();
        std::fs::write(ws.join(".gemini/commands/fix.toml"), "prompt = \"y\"").unwrap();
        std::fs::write(ws.join(".env"), "TOKEN=1\n").unwrap();
        std::fs::create_dir_all(ws.join(".agents/skills/lint")).unwrap();
        std::fs::write(
            ws.join(".agents/skills/lint/SKILL.md"),
            "---\nname: lint\ndescription: Lints.\n---\nRun it.",
        )
        .unwrap();
        let found = discover(ws, &[]);
        assert!(
            found.contains(&"agent skill \"lint\" (.agents/skills/lint/SKILL.md)".to_string()),
            "{found:?}"
        );
        let has = |s: &str| found.iter().any(|f| f.contains(s));
        assert!(has("MCP server \"ev\" runs: node ev.js --x"), "{found:?}");
        assert!(
            has("hook BeforeTool runs: ./audit.sh (.troupe/config.toml)"),
            "{found:?}"
        );
        assert!(
            has("custom command /git:commit (.troupe/commands/git/commit.toml)"),
            "{found:?}"
        );
        assert!(
            has("custom command /fix (.gemini/commands/fix.toml)"),
            "{found:?}"
        );
        assert!(has(".env: Troupe never loads it"), "{found:?}");
    }

    #[test]
    fn a_server_url_with_a_non_ascii_host_is_shown_in_punycode() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::create_dir_all(ws.join(".troupe")).unwrap();
        std::fs::write(
            ws.join(".troupe/config.toml"),
            "[mcp_servers.gh]\nurl = \"https://api.g\u{456}thub.com/mcp\"\n",
        )
        .unwrap();
        let found = discover(ws, &[]);
        assert!(
            found.iter().any(|f| f
                == "MCP server \"gh\" connects to: https://api.xn--gthub-n2e.com/mcp (host written as api.g\u{456}thub.com)"),
            "{found:?}"
        );
    }
}
