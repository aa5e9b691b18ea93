//! The tools' declarations as the model is offered them: those of a session with a
//! person answering or not (`ask_user` needs one), and those outside and in plan mode
//! (`enter_plan_mode` outside it, `exit_plan_mode` in it, and the edit tools told that
//! they write plans only), as gemini-cli 0.61 declares them; and the system prompt
//! that describes them.

use super::{setup, SessionError, SessionOptions};
use crate::engine::prompt::SystemPrompt;
use crate::protocol::content::FunctionDeclaration;
use crate::protocol::ApprovalMode;
use crate::tools::ToolRegistry;

/// The declarations outside plan mode, those in plan mode, and the system prompt.
pub(super) fn offered(
    options: &SessionOptions,
    registry: &ToolRegistry,
    skills: &[crate::settings::skills::Skill],
    plans_dir: &std::path::Path,
) -> Result<
    (
        Vec<FunctionDeclaration>,
        Vec<FunctionDeclaration>,
        SystemPrompt,
    ),
    SessionError,
> {
    let facts = registry.facts();
    let mut all = registry.declarations();
    all.retain(|d| options.interactive || !facts.get(&d.name).interactive_only);
    if options.settings.tools.compact_declarations {
        all = all
            .iter()
            .map(|decl| {
                let keep = facts.get(&decl.name).compact_keeps;
                crate::engine::compact_tools::compact(decl, keep)
            })
            .collect();
    }
    let in_mode = |mode: ApprovalMode| {
        all.iter()
            .filter(|d| facts.get(&d.name).offered.in_mode(mode))
            .cloned()
            .collect::<Vec<_>>()
    };
    let tools = in_mode(ApprovalMode::Default);
    let plan = in_mode(ApprovalMode::Plan)
        .into_iter()
        .map(|mut d| {
            if facts.get(&d.name).is_edit() {
                d.description = format!(
                    "PLAN MODE: only for plans. Write or update plan files (.md) in the plans directory {}/ and nothing else; source files stay unchanged until a plan is approved. {}",
                    plans_dir.display(),
                    d.description
                );
            }
            d
        })
        .collect();
    let prompt = setup::system_prompt(&options.settings, &options.workspace, &tools, skills)?;
    Ok((tools, plan, prompt))
}
