//! `activate_skill {name}`: loads one Agent Skill (see `settings::skills`) into the
//! conversation, as gemini-cli 0.61's `tools/activate-skill.js` does: the declaration
//! names the available skills as an enum, the answer wraps the skill's instructions
//! and the tree of its folder in `<activated_skill>`, and the skill's folder becomes
//! a workspace root (when it is not inside one already) so that the model may read
//! its resources. Asked in every approval mode but yolo (gemini-cli's `write.toml`
//! asks for it, and its non-interactive policy refuses it); an allow rule
//! `activate_skill` lets it run.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

use super::folder_structure::folder_structure;
use super::{PolicyHint, Tool, ToolContext};
use crate::protocol::{ConfirmationDetails, ToolErrorKind, ToolKind, ToolOutput};
use crate::settings::skills::Skill;

/// The tool's name, as gemini-cli 0.61 declares it.
pub const ACTIVATE_SKILL: &str = "activate_skill";

/// The `activate_skill` tool over the session's available (not disabled) skills.
pub struct ActivateSkill {
    pub skills: Arc<Vec<Skill>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    pub name: String,
}

impl ActivateSkill {
    /// gemini-cli's `getSkill`: by name, without regard to case.
    fn find(&self, name: &str) -> Option<&Skill> {
        let lower = name.to_lowercase();
        self.skills.iter().find(|s| s.name.to_lowercase() == lower)
    }
}

/// gemini-cli's `getActivateSkillDeclaration` description for these names.
pub fn description(names: &[&str]) -> String {
    let hint = match names.is_empty() {
        true => String::new(),
        false => format!(
            " (Available: {})",
            names
                .iter()
                .map(|n| format!("'{n}'"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    format!("Activates a specialized agent skill by name{hint}. Returns the skill's instructions wrapped in `<activated_skill>` tags. These provide specialized guidance for the current task. Use this when you identify a task that matches a skill's description. ONLY use names exactly as they appear in the `<available_skills>` section.")
}

/// The error of a name that is no available skill (gemini-cli's `execute`; the enum
/// of the declaration refuses such a name first, so it is said only if a call gets
/// past the schema).
pub fn not_found_message(name: &str, available: &[&str]) -> String {
    format!(
        "Skill \"{name}\" not found. Available skills are: {}",
        available.join(", ")
    )
}

/// The answer the model reads (gemini-cli's `llmContent`).
pub fn activated_text(skill: &Skill, structure: &str) -> String {
    format!(
        "<activated_skill name=\"{}\">\n  <instructions>\n    {}\n  </instructions>\n\n  <available_resources>\n    {structure}\n  </available_resources>\n</activated_skill>",
        skill.name, skill.body
    )
}

/// What the user is shown (gemini-cli's `returnDisplay`).
pub fn activated_display(skill: &Skill, structure: &str) -> String {
    format!(
        "Skill **{}** activated. Resources loaded from `{}`:\n\n{structure}",
        skill.name,
        skill.dir().display()
    )
}

impl Tool for ActivateSkill {
    type Params = Params;

    fn name(&self) -> &'static str {
        ACTIVATE_SKILL
    }

    fn display_name(&self) -> &'static str {
        "Activate Skill"
    }

    /// gemini-cli 0.61 resolves this declaration per model family (its own
    /// `getSchema`), without `wait_for_previous` (a call may still set it).
    fn declares_wait_for_previous(&self) -> bool {
        false
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn description(&self) -> String {
        let names: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
        description(&names)
    }

    /// zod-to-json-schema's output for gemini-cli's `z.object({name: z.enum(names)})`.
    fn schema(&self) -> Value {
        let names: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
        let name = match names.is_empty() {
            true => json!({"type": "string", "description": "No skills are currently available."}),
            false => {
                json!({"type": "string", "enum": names, "description": "The name of the skill to activate."})
            }
        };
        json!({
            "type": "object",
            "properties": {"name": name},
            "required": ["name"],
            "additionalProperties": false,
            "$schema": "http://json-schema.org/draft-07/schema#"
        })
    }

    /// gemini-cli asks before a skill that is not built in (and Troupe has none built
    /// in); refused in plan mode, where gemini-cli asks.
    fn policy_hint(&self, _params: &Params) -> Option<PolicyHint> {
        Some(PolicyHint::Ask)
    }

    fn confirmation(
        &self,
        params: &Params,
        _ctx: &ToolContext,
    ) -> BoxFuture<'static, Option<ConfirmationDetails>> {
        let skill = self.find(&params.name).cloned();
        let name = params.name.clone();
        Box::pin(async move {
            let skill = skill?;
            let structure = structure_off_the_arbiter(skill.dir().to_path_buf()).await;
            Some(ConfirmationDetails::Info {
                title: format!("Activate Skill: {name}"),
                prompt: format!(
                    "You are about to enable the specialized agent skill **{name}**.\n\n**Description:**\n{}\n\n**Resources to be shared with the model:**\n{structure}",
                    skill.description,
                ),
            })
        })
    }

    fn execute(&self, params: Params, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let Some(skill) = self.find(&params.name).cloned() else {
            let available: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
            let message = not_found_message(&params.name, &available);
            let display = format!("Error: {message}");
            return Box::pin(async move {
                ToolOutput::error(ToolErrorKind::InvalidToolParams, message, display)
            });
        };
        Box::pin(async move {
            // gemini-cli adds the skill's folder to the workspace, so that its
            // resources can be read.
            let dir = skill.dir().to_path_buf();
            let inside = std::fs::canonicalize(&dir)
                .map(|real| ctx.services.workspace.contains(&real))
                .unwrap_or(false);
            if !inside {
                match ctx.services.fs.add_root(dir.display().to_string()).await {
                    Ok(_) => {}
                    Err(e) => ctx.warn(format!(
                        "The folder of skill \"{}\" could not be added to the workspace: {e}",
                        skill.name
                    )),
                }
            }
            let structure = structure_off_the_arbiter(dir).await;
            ToolOutput::text(
                activated_text(&skill, &structure),
                activated_display(&skill, &structure),
            )
        })
    }
}

/// The skill folder's structure, walked on a blocking thread (up to 200 entries of a
/// configuration folder, which may lie outside the workspace roots).
async fn structure_off_the_arbiter(dir: std::path::PathBuf) -> String {
    let shown = dir.display().to_string();
    tokio::task::spawn_blocking(move || folder_structure(&dir))
        .await
        .unwrap_or_else(|_| {
            format!("Error: Could not read directory \"{shown}\". Check path and permissions.")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(name: &str) -> Skill {
        Skill {
            name: name.into(),
            description: format!("{name} does things."),
            location: std::path::PathBuf::from(format!("/s/{name}/SKILL.md")),
            body: "Do it.".into(),
            project: false,
            disabled: false,
        }
    }

    /// The declaration gemini-cli 0.61 produces for the names `pdf-tools` and `b:c`
    /// (`getActivateSkillDeclaration`, printed under Node from its `dist/`).
    #[test]
    fn the_declaration_is_gemini_clis() {
        let tool = ActivateSkill {
            skills: Arc::new(vec![skill("pdf-tools"), skill("b:c")]),
        };
        let decl = crate::tools::declaration_of(&tool);
        let expected: Value = serde_json::from_str(r#"{"name":"activate_skill","description":"Activates a specialized agent skill by name (Available: 'pdf-tools', 'b:c'). Returns the skill's instructions wrapped in `<activated_skill>` tags. These provide specialized guidance for the current task. Use this when you identify a task that matches a skill's description. ONLY use names exactly as they appear in the `<available_skills>` section.","parametersJsonSchema":{"type":"object","properties":{"name":{"type":"string","enum":["pdf-tools","b:c"],"description":"The name of the skill to activate."}},"required":["name"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}}"#).unwrap();
        assert_eq!(decl.name, expected["name"]);
        assert_eq!(decl.description, expected["description"]);
        assert_eq!(
            decl.parameters_json_schema,
            expected["parametersJsonSchema"]
        );
        // gemini-cli's schema validation refuses a name outside the enum.
        assert_eq!(
            crate::engine::schema::validate(&tool.schema(), &json!({"name": "nope"})),
            Err("params/name must be equal to one of the allowed values".to_string())
        );
        assert_eq!(
            tool.find("PDF-Tools").map(|s| s.name.as_str()),
            Some("pdf-tools")
        );
        // gemini-cli's `execute` for a name no skill has (printed under Node).
        assert_eq!(
            not_found_message("nope", &["pdf-tools"]),
            "Skill \"nope\" not found. Available skills are: pdf-tools"
        );
    }
}
