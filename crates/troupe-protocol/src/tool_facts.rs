//! What the rest of the runtime knows about a tool, as plain data: each tool states its
//! facts on the `Tool` trait, the registry gathers them into a [`ToolFactsTable`], and
//! the layers below the tools (loop detection, the policy's rule matching, checkpoints)
//! and the front ends (ACP's labels) read them from there instead of lists of names.

use std::collections::HashMap;

use crate::ToolKind;

/// What the key of an allow rule (`tool(key)`) names, and so how it covers a call's
/// approval keys ([`crate::engine::policy::key_covers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AllowKey {
    /// A file path: the same path, or one beneath it as a directory.
    #[default]
    Path,
    /// A command prefix: the same command, or a longer one that starts with its words.
    CommandPrefix,
}

/// One tool's facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolFacts {
    /// What the tool does (reads, edits, runs commands, fetches, …): decides the
    /// default approval policy and `mcp serve`'s annotations.
    pub kind: ToolKind,
    /// How an ACP client is told what a call does (`read`, `edit`, `search`, …).
    pub acp_kind: ToolKind,
    /// What an allow rule's key names.
    pub allow_key: AllowKey,
    /// Identical calls in one model answer run once (every copy gets the answer), and
    /// the same call succeeding again right after counts as a repeat.
    pub run_once: bool,
    /// The answer depends only on the files: the same call again, with nothing changed
    /// in between, answers the same (a read again is a repeat).
    pub answer_depends_on_files_only: bool,
    /// The call edits one file, named by this argument: undo of a failed turn,
    /// checkpoints and the small profile's "no edit asked" treat it as an edit.
    pub edited_file_arg: Option<&'static str>,
    /// Optional parameters a compact declaration keeps (the tool's errors ask for them).
    pub compact_keeps: &'static [&'static str],
    /// Offered to subagents only (`complete_task`): a main session neither declares
    /// it nor runs its calls.
    pub subagents_only: bool,
    /// A call runs alone: after every earlier call of its model answer, and before
    /// every later one (gemini-cli's sequential `update_topic`).
    pub runs_alone: bool,
    /// Offered to a main session only (`update_topic`): a subagent neither is offered
    /// it nor runs its calls.
    pub main_session_only: bool,
    /// A boolean parameter that makes a call add its content to the end of the file
    /// instead of replacing it: declared only in a turn whose call of the tool was cut
    /// at the output limit, when the model is asked to write the file in parts.
    pub append_arg: Option<&'static str>,
    /// When the tool is declared to the model: always, or only in or out of plan
    /// mode (gemini-cli's `enter_plan_mode` / `exit_plan_mode`).
    pub offered: Offered,
    /// Declared only when a person answers (gemini-cli's `ask_user`, which a
    /// non-interactive run's policy excludes).
    pub interactive_only: bool,
}

/// In which approval modes a tool is declared to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Offered {
    /// In every mode.
    #[default]
    Always,
    /// In every mode but plan mode.
    OutsidePlanMode,
    /// In plan mode only.
    InPlanMode,
}

impl Offered {
    /// Whether a tool with this fact is declared in `mode`.
    pub fn in_mode(self, mode: crate::ApprovalMode) -> bool {
        let plan = mode == crate::ApprovalMode::Plan;
        match self {
            Offered::Always => true,
            Offered::OutsidePlanMode => !plan,
            Offered::InPlanMode => plan,
        }
    }
}

impl ToolFacts {
    /// The facts of a name no built-in tool has (an MCP tool, an unknown name): it
    /// always runs, is no edit, and its allow rules name paths.
    pub const UNKNOWN: ToolFacts = ToolFacts {
        kind: ToolKind::Other,
        acp_kind: ToolKind::Other,
        allow_key: AllowKey::Path,
        run_once: false,
        answer_depends_on_files_only: false,
        edited_file_arg: None,
        subagents_only: false,
        compact_keeps: &[],
        runs_alone: false,
        main_session_only: false,
        append_arg: None,
        offered: Offered::Always,
        interactive_only: false,
    };

    /// Whether the call edits a file (undo, checkpoints, the small profile).
    pub fn is_edit(&self) -> bool {
        self.edited_file_arg.is_some()
    }
}

impl Default for ToolFacts {
    fn default() -> Self {
        Self::UNKNOWN
    }
}

/// The facts of the built-in tools by name, plus the legacy names that resolve to one
/// of them. A name not in it gets [`ToolFacts::UNKNOWN`].
#[derive(Debug, Clone, Default)]
pub struct ToolFactsTable {
    facts: HashMap<String, ToolFacts>,
    aliases: HashMap<String, String>,
}

impl ToolFactsTable {
    /// Records the facts of the tool called `name`.
    pub fn insert(&mut self, name: impl Into<String>, facts: ToolFacts) {
        self.facts.insert(name.into(), facts);
    }

    /// Records that calls of `old` run the tool `new` (a legacy name).
    pub fn alias(&mut self, old: impl Into<String>, new: impl Into<String>) {
        self.aliases.insert(old.into(), new.into());
    }

    /// The facts of the tool called exactly `name` (a legacy name is not resolved).
    pub fn get(&self, name: &str) -> &ToolFacts {
        self.facts.get(name).unwrap_or(&ToolFacts::UNKNOWN)
    }

    /// The facts of the tool `name` runs, legacy names resolved; `None` for a name no
    /// built-in tool has.
    pub fn resolve(&self, name: &str) -> Option<&ToolFacts> {
        let name = self.aliases.get(name).map(String::as_str).unwrap_or(name);
        self.facts.get(name)
    }

    /// The legacy names whose calls run the tool `name` (`search_file_content` for
    /// `grep_search`).
    pub fn legacy_names(&self, name: &str) -> Vec<&str> {
        self.aliases
            .iter()
            .filter(|(_, new)| *new == name)
            .map(|(old, _)| old.as_str())
            .collect()
    }

    /// The names of the tools whose facts `keep` accepts.
    pub fn names_where(&self, keep: impl Fn(&ToolFacts) -> bool) -> Vec<&str> {
        self.facts
            .iter()
            .filter(|(_, f)| keep(f))
            .map(|(n, _)| n.as_str())
            .collect()
    }
}

impl<S: Into<String>> FromIterator<(S, ToolFacts)> for ToolFactsTable {
    fn from_iter<I: IntoIterator<Item = (S, ToolFacts)>>(iter: I) -> Self {
        let mut table = Self::default();
        for (name, facts) in iter {
            table.insert(name, facts);
        }
        table
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_not_in_the_table_gets_the_unknown_facts() {
        let mut table: ToolFactsTable = [(
            "grep_search",
            ToolFacts {
                kind: ToolKind::Search,
                acp_kind: ToolKind::Search,
                ..ToolFacts::UNKNOWN
            },
        )]
        .into_iter()
        .collect();
        table.alias("search_file_content", "grep_search");
        assert_eq!(table.get("mcp_fx_gather"), &ToolFacts::UNKNOWN);
        assert_eq!(table.get("search_file_content"), &ToolFacts::UNKNOWN);
        assert_eq!(
            table.resolve("search_file_content").map(|f| f.acp_kind),
            Some(ToolKind::Search)
        );
        assert_eq!(table.resolve("nope"), None);
    }
}
