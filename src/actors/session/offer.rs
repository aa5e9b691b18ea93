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

/// What the system prompt says while the session is in plan mode (after the rest of
/// it), naming the plans directory; `interactive`: a person approves the plan.
pub(super) fn plan_prompt_section(plans_dir: &std::path::Path, interactive: bool) -> String {
    let approval = match interactive {
        true => "When the user agrees with the approach, call `exit_plan_mode` with the plan's file name: the user then approves the plan formally, and implementation starts only after that.",
        false => "When the plan is complete, call `exit_plan_mode` with the plan's file name: the plan is approved at once and you go on to implement it.",
    };
    format!(
        "# Plan mode\n\nThe session is in plan mode: research and design before anything changes. Read, search and list files freely{}; do not try to run commands or change source files, which plan mode refuses. Write the plan as a Markdown file in the plans directory {}/ with `write_file` (a bare name such as `feature-x.md` lands there). {approval}",
        match interactive {
            true => ", and ask the user with `ask_user` where a choice is theirs",
            false => "",
        },
        plans_dir.display()
    )
}

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
