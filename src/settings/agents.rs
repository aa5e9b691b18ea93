//! Agent files: gemini-cli's subagent definitions, a Markdown file whose YAML front
//! matter says what the agent is (`name`, `description`, `tools`, `model`,
//! `temperature`, `max_turns`, `timeout_mins`, `kind`) and whose body is its system
//! prompt. Read from `~/.gemini/agents`, `~/.troupe/agents` (user) and the workspace's
//! `.gemini/agents`, `.troupe/agents` (project, only in a trusted folder); a later
//! file of the same name wins (project over user, `.troupe` over `.gemini`).

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// gemini-cli's defaults for an agent file.
pub const DEFAULT_MAX_TURNS: u32 = 30;
pub const DEFAULT_TIMEOUT_MINS: f64 = 10.0;

/// An agent as a file defines it.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentFile {
    pub name: String,
    pub display_name: Option<String>,
    pub description: String,
    /// Tool names, `*` (all), `mcp_*` (every MCP tool), `mcp_<server>_*`; `None`: all
    /// of the parent's tools.
    pub tools: Option<Vec<String>>,
    /// `None` or `inherit`: the parent's model.
    pub model: Option<String>,
    pub temperature: Option<f64>,
    pub max_turns: u32,
    pub timeout_mins: f64,
    /// The system prompt (the file's body).
    pub prompt: String,
    pub path: PathBuf,
    /// Read from the workspace (trusted folders only) rather than the user's home.
    pub project: bool,
}

/// Why an agent file was not loaded (gemini-cli's words where it has them).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AgentFileError {
    #[error("Failed to load agent from {}: Invalid agent definition: Missing mandatory YAML frontmatter. Agent Markdown files MUST start with YAML frontmatter enclosed in triple-dashes \"---\" (e.g., ---\nname: my-agent\n---).", .0.display())]
    NoFrontMatter(PathBuf),
    #[error("Failed to load agent from {}: YAML frontmatter parsing failed: {message}", path.display())]
    Yaml { path: PathBuf, message: String },
    #[error("Failed to load agent from {}: Validation failed: Agent Definition:\n{message}", path.display())]
    Invalid { path: PathBuf, message: String },
    #[error("Failed to load agent from {}: remote agents (kind: remote, A2A) are not supported by Troupe", .0.display())]
    Remote(PathBuf),
    #[error("Failed to load agent from {}: Validation failed: Agent Definition:\nname: Name must be a valid slug", path.display())]
    BadName { path: PathBuf, name: String },
    #[error("Failed to load agent from {}: Could not read file: {message}", path.display())]
    Read { path: PathBuf, message: String },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FrontMatter {
    name: String,
    description: String,
    #[serde(default)]
    display_name: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    tools: Option<Vec<String>>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    temperature: Option<f64>,
    #[serde(default)]
    max_turns: Option<u32>,
    #[serde(default)]
    timeout_mins: Option<f64>,
}

/// Parses one agent file's text.
pub fn parse(path: &Path, text: &str, project: bool) -> Result<AgentFile, AgentFileError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or_else(|| AgentFileError::NoFrontMatter(path.to_path_buf()))?;
    let (yaml, body) = split_front_matter(rest)
        .ok_or_else(|| AgentFileError::NoFrontMatter(path.to_path_buf()))?;
    let value: yaml_serde::Value =
        yaml_serde::from_str(yaml).map_err(|e| AgentFileError::Yaml {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    let front: FrontMatter =
        yaml_serde::from_value(value).map_err(|e| AgentFileError::Invalid {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    if front.kind.as_deref().is_some_and(|k| k == "remote") {
        return Err(AgentFileError::Remote(path.to_path_buf()));
    }
    if let Some(kind) = front.kind.as_deref().filter(|k| *k != "local") {
        return Err(AgentFileError::Invalid {
            path: path.to_path_buf(),
            message: format!("kind must be \"local\", not {kind:?}"),
        });
    }
    // gemini-cli's slug: lower-case letters, digits, '-' and '_'.
    let name_ok = !front.name.is_empty()
        && front
            .name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !name_ok {
        return Err(AgentFileError::BadName {
            path: path.to_path_buf(),
            name: front.name,
        });
    }
    Ok(AgentFile {
        name: front.name,
        display_name: front.display_name,
        description: front.description,
        tools: front.tools,
        model: front.model.filter(|m| !m.is_empty() && m != "inherit"),
        temperature: front.temperature,
        max_turns: front.max_turns.unwrap_or(DEFAULT_MAX_TURNS),
        timeout_mins: front.timeout_mins.unwrap_or(DEFAULT_TIMEOUT_MINS),
        prompt: body.trim().to_string(),
        path: path.to_path_buf(),
        project,
    })
}

/// The YAML between the opening and the closing `---` line, and the body after it.
fn split_front_matter(rest: &str) -> Option<(&str, &str)> {
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

/// The directories agent files are read from, weakest first, each with whether it is
/// a project one.
pub fn agent_dirs(workspace: &Path) -> Vec<(PathBuf, bool)> {
    let gemini_home = std::env::var_os("GEMINI_CLI_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(crate::settings::home_dir);
    vec![
        (gemini_home.join(".gemini").join("agents"), false),
        (crate::settings::troupe_home().join("agents"), false),
        (workspace.join(".gemini").join("agents"), true),
        (workspace.join(".troupe").join("agents"), true),
    ]
}

/// What loading the agent files found: the agents (a later one replaces an earlier
/// one of the same name) and the files that could not be used, each with why.
#[derive(Debug, Default)]
pub struct LoadedAgents {
    pub agents: Vec<AgentFile>,
    pub errors: Vec<AgentFileError>,
    /// Project agent files left out because the folder is not trusted.
    pub untrusted: Vec<PathBuf>,
}

/// Reads every `*.md` of the agent directories of `workspace` (project ones only when
/// `trusted`), then of the enabled extensions' `agents/` folders (gemini-cli registers
/// extension agents after the user's and the project's).
pub fn load(workspace: &Path, trusted: bool, extension_dirs: &[PathBuf]) -> LoadedAgents {
    let mut out = LoadedAgents::default();
    let mut dirs = agent_dirs(workspace);
    dirs.extend(extension_dirs.iter().map(|d| (d.clone(), false)));
    for (dir, project) in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
            // gemini-cli leaves out files whose name starts with `_`.
            .filter(|p| {
                !p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('_'))
            })
            .collect();
        files.sort();
        for path in files {
            if project && !trusted {
                out.untrusted.push(path);
                continue;
            }
            let parsed = std::fs::read_to_string(&path)
                .map_err(|e| AgentFileError::Read {
                    path: path.clone(),
                    message: e.to_string(),
                })
                .and_then(|text| parse(&path, &text, project));
            match parsed {
                Ok(agent) => {
                    out.agents.retain(|a| a.name != agent.name);
                    out.agents.push(agent);
                }
                Err(e) => out.errors.push(e),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_gives_its_front_matter_and_body_with_gemini_defaults() {
        let text = "---\nname: reviewer\ndescription: Reviews diffs.\ntools:\n  - read_file\n  - mcp_*\nmodel: inherit\n---\nYou review code.\n";
        let agent = parse(Path::new("/a/reviewer.md"), text, true).unwrap();
        assert_eq!(agent.name, "reviewer");
        assert_eq!(
            agent.tools.as_deref(),
            Some(&["read_file".to_string(), "mcp_*".to_string()][..])
        );
        assert_eq!(agent.model, None);
        assert_eq!((agent.max_turns, agent.timeout_mins), (30, 10.0));
        assert_eq!(agent.prompt, "You review code.");
        assert!(agent.project);
    }

    #[test]
    fn remote_agents_bad_names_and_missing_front_matter_are_reported() {
        let p = Path::new("/a/x.md");
        let remote = "---\nname: far\ndescription: d\nkind: remote\n---\n";
        assert_eq!(
            parse(p, remote, false),
            Err(AgentFileError::Remote(p.into()))
        );
        let bad = "---\nname: two words\ndescription: d\n---\n";
        assert!(matches!(
            parse(p, bad, false),
            Err(AgentFileError::BadName { .. })
        ));
        assert_eq!(
            parse(p, "# no", false),
            Err(AgentFileError::NoFrontMatter(p.into()))
        );
        let unknown = "---\nname: a\ndescription: d\ncolour: red\n---\n";
        assert!(matches!(
            parse(p, unknown, false),
            Err(AgentFileError::Invalid { .. })
        ));
    }
}
