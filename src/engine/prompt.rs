//! The system prompt: a template from `config/` (or a user's file) with the tool list,
//! the environment and the context files / memory filled in.

use crate::engine::content::FunctionDeclaration;

/// The built-in template.
pub const DEFAULT_TEMPLATE: &str = include_str!("../../config/system_prompt.md");

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
}

/// Fills `{tools}`, `{date}`, `{os}`, `{roots}`, `{git}` and `{memory}` in `template`.
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
    let filled = template
        .replace("{tools}", &tools)
        .replace("{date}", &vars.date)
        .replace("{os}", &vars.os)
        .replace("{roots}", &vars.roots.join(", "))
        .replace("{git}", git);
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

    fn vars(memory: &str) -> PromptVars<'static> {
        PromptVars {
            tools: &[],
            date: "2026-01-02".into(),
            os: "linux".into(),
            roots: vec!["/w".into()],
            git: false,
            memory: memory.into(),
        }
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
