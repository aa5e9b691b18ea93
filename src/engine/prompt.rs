//! The system prompt: a template from `config/` (or a user's file) with the tool list
//! and the environment filled in.

use crate::engine::content::FunctionDeclaration;

/// The built-in template.
pub const DEFAULT_TEMPLATE: &str = include_str!("../../config/system_prompt.md");

/// The values substituted into the template.
pub struct PromptVars<'a> {
    pub tools: &'a [FunctionDeclaration],
    pub date: String,
    pub os: String,
    pub roots: Vec<String>,
}

/// Fills `{tools}`, `{date}`, `{os}` and `{roots}` in `template`.
pub fn render(template: &str, vars: &PromptVars<'_>) -> String {
    let tools = vars
        .tools
        .iter()
        .map(|t| format!("- {}: {}", t.name, first_sentence(&t.description)))
        .collect::<Vec<_>>()
        .join("\n");
    template
        .replace("{tools}", &tools)
        .replace("{date}", &vars.date)
        .replace("{os}", &vars.os)
        .replace("{roots}", &vars.roots.join(", "))
}

fn first_sentence(text: &str) -> &str {
    match text.find(". ") {
        Some(i) => &text[..=i],
        None => text,
    }
}
