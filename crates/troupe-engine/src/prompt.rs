//! The system prompt: a template from `config/` (or a user's file) with the tool list,
//! the environment and the context files / memory filled in.

use crate::protocol::content::FunctionDeclaration;

/// The built-in template.
pub const DEFAULT_TEMPLATE: &str = include_str!("../../../config/system_prompt.md");

/// The short built-in template (`model.prompt_style = "short"`, the small profile):
/// a few rules and the active tools, for models with a small context window.
pub const SHORT_TEMPLATE: &str = include_str!("../../../config/system_prompt_short.md");

/// Keeps the lines of `template` meant for the active tools: a line starting with
/// `{if a,b}` stays only when every named tool is active, one starting with
/// `{unless a}` only when none is; markers may follow each other (all must hold), and
/// are removed. So the prompt never describes a tool that `tools.core` or
/// `tools.exclude` took away.
pub fn select_tool_lines(template: &str, tools: &[FunctionDeclaration]) -> String {
    let active = |name: &str| tools.iter().any(|t| t.name == name.trim());
    let mut out = String::with_capacity(template.len());
    for line in template.split_inclusive('\n') {
        let mut kept = Some(line);
        while let Some(text) = kept {
            kept = if let Some(rest) = text.strip_prefix("{if ") {
                rest.split_once('}')
                    .filter(|(names, _)| names.split(',').all(active))
                    .map(|(_, text)| text)
            } else if let Some(rest) = text.strip_prefix("{unless ") {
                rest.split_once('}')
                    .filter(|(names, _)| !names.split(',').any(active))
                    .map(|(_, text)| text)
            } else {
                break;
            };
        }
        out.push_str(kept.unwrap_or(""));
    }
    out
}

/// The values substituted into the template.
pub struct PromptVars<'a> {
    pub tools: &'a [FunctionDeclaration],
    pub date: String,
    pub os: String,
    pub roots: Vec<String>,
    /// Whether the primary workspace root is inside a git repository.
    pub git: bool,
    /// The context files and memory (already formatted); empty when there are none.
    pub memory: String,
    /// The "Available Agent Skills" section (already formatted); empty when there are
    /// no skills.
    pub skills: String,
}

/// Fills `{tools}` (a line per tool: its name and first sentence), `{tool_names}`
/// (the names, comma-separated), `{date}`, `{os}`, `{roots}`, `{git}`, `{skills}` and `{memory}` in
/// `template`.
/// A template without `{memory}` gets the memory appended after a `---` rule, so a
/// custom prompt file still carries the user's context files.
pub fn render(template: &str, vars: &PromptVars<'_>) -> String {
    let tools = vars
        .tools
        .iter()
        .map(|t| format!("- {}: {}", t.name, first_sentence(&t.description)))
        .collect::<Vec<_>>()
        .join("\n");
    let git = if vars.git {
        "yes: the workspace is a git repository. Check `git status` and `git diff` before committing, and never push or rewrite history unless asked."
    } else {
        "no"
    };
    let memory_block = if vars.memory.trim().is_empty() {
        String::new()
    } else {
        format!("# Context files and memory\n\n{}", vars.memory)
    };
    let names = (vars.tools.iter())
        .map(|t| t.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let template = &select_tool_lines(template, vars.tools);
    let filled = template
        .replace("{tools}", &tools)
        .replace("{tool_names}", &names)
        .replace("{date}", &vars.date)
        .replace("{os}", &vars.os)
        .replace("{roots}", &vars.roots.join(", "))
        .replace("{git}", git)
        .replace("{skills}", &vars.skills);
    if template.contains("{memory}") {
        return filled.replace("{memory}", &memory_block);
    }
    if memory_block.is_empty() {
        return filled;
    }
    format!("{}\n\n---\n\n{memory_block}", filled.trim_end())
}

/// A session's system prompt before the context files are known: the template and the
/// environment, rendered again whenever the context files are re-read.
#[derive(Debug, Clone)]
pub struct SystemPrompt {
    pub template: String,
    pub tools: Vec<FunctionDeclaration>,
    pub date: String,
    pub os: String,
    pub roots: Vec<String>,
    pub git: bool,
    /// The skills section (`{skills}`); empty without skills.
    pub skills: String,
}

impl SystemPrompt {
    /// The prompt with `memory` (the formatted context files) filled in.
    pub fn render(&self, memory: &str) -> String {
        render(
            &self.template,
            &PromptVars {
                tools: &self.tools,
                date: self.date.clone(),
                os: self.os.clone(),
                roots: self.roots.clone(),
                git: self.git,
                memory: memory.to_string(),
                skills: self.skills.clone(),
            },
        )
    }
}

fn first_sentence(text: &str) -> &str {
    match text.find(". ") {
        Some(i) => &text[..=i],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_that_follow_each_other_must_all_hold() {
        let decl = |name: &str| FunctionDeclaration {
            name: name.into(),
            description: String::new(),
            parameters_json_schema: serde_json::json!({}),
        };
        let template = "{if w}{unless r}whole\n{if w,r}both\nplain\n";
        assert_eq!(select_tool_lines(template, &[decl("w")]), "whole\nplain\n");
        assert_eq!(
            select_tool_lines(template, &[decl("w"), decl("r")]),
            "both\nplain\n"
        );
        assert_eq!(select_tool_lines(template, &[]), "plain\n");
    }

    fn vars(memory: &str) -> PromptVars<'static> {
        PromptVars {
            tools: &[],
            date: "2026-01-02".into(),
            os: "linux".into(),
            roots: vec!["/w".into()],
            git: false,
            memory: memory.into(),
            skills: String::new(),
        }
    }

    fn tool(name: &str) -> FunctionDeclaration {
        FunctionDeclaration {
            name: name.into(),
            description: format!("Does {name}. More words."),
            parameters_json_schema: serde_json::json!({}),
        }
    }

    #[test]
    fn the_prompt_describes_only_active_tools() {
        let core = [tool("read_file"), tool("replace")];
        let mut v = vars("");
        v.tools = &core;
        let full = render(DEFAULT_TEMPLATE, &v);
        for absent in ["run_shell_command", "write_todos", "save_memory"] {
            assert!(!full.contains(absent), "{absent} described:\n{full}");
        }
        assert!(full.contains("2. **Plan:** a short plan.\n"));
        assert!(full.contains("- read_file: Does read_file."));
        let short = render(SHORT_TEMPLATE, &v);
        assert!(short.contains("call `replace`") && !short.contains("run_shell_command"));
        assert!(short.len() < 1200, "{}", short.len());
        let all = [tool("run_shell_command"), tool("write_todos")];
        v.tools = &all;
        let full = render(DEFAULT_TEMPLATE, &v);
        assert!(full.contains("keep it in `write_todos`") && full.contains("runs `bash -c`"));
        assert!(!full.contains("{if") && !full.contains("{unless"));
    }

    #[test]
    fn memory_goes_in_place_or_at_the_end() {
        assert_eq!(
            render("A {date} {memory} B", &vars("m")),
            "A 2026-01-02 # Context files and memory\n\nm B"
        );
        assert_eq!(
            render("Custom {os}\n", &vars("m")),
            "Custom linux\n\n---\n\n# Context files and memory\n\nm"
        );
        assert_eq!(render("Custom {git}", &vars("")), "Custom no");
        let default = render(DEFAULT_TEMPLATE, &vars("fact"));
        assert!(default.contains("- Workspace roots: /w"));
        assert!(default.trim_end().ends_with("fact"));
    }
}
