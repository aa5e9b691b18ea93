//! The built-in tools' facts, as `register_builtin` gathers them, are exactly what the
//! lists of names they replaced said (loop detection's run-once and read lists, the
//! command-keyed tools, the edits, ACP's kinds, the compact declarations' kept
//! parameters), and a name no tool has gets the unknown facts.

use std::time::Duration;

use super::registry::{register_builtin, ToolArbiters, ToolRegistry};
use crate::protocol::{AllowKey, ToolFacts, ToolKind};

fn builtin() -> ToolRegistry {
    let mut registry = ToolRegistry::new(Duration::from_secs(5), 1, ToolArbiters::Own(vec![]));
    register_builtin(&mut registry);
    registry
}

fn sorted(mut names: Vec<&str>) -> Vec<&str> {
    names.sort_unstable();
    names
}

#[actix::test]
async fn the_builtin_facts_say_what_the_lists_of_names_said() {
    let registry = builtin();
    let facts = registry.facts();
    assert_eq!(
        sorted(facts.names_where(|f| f.run_once)),
        [
            "get_internal_docs",
            "glob",
            "grep_search",
            "list_background_processes",
            "list_directory",
            "read_background_output",
            "read_file",
            "read_many_files",
            "replace",
            "run_shell_command",
            "save_memory",
            "web_fetch",
            "write_file",
            "write_todos",
        ]
    );
    assert_eq!(
        sorted(facts.names_where(|f| f.answer_depends_on_files_only)),
        [
            "glob",
            "grep_search",
            "list_directory",
            "read_file",
            "read_many_files"
        ]
    );
    assert_eq!(
        sorted(facts.names_where(|f| f.subagents_only)),
        ["complete_task", "get_internal_docs"]
    );
    assert_eq!(
        sorted(facts.names_where(|f| f.allow_key == AllowKey::CommandPrefix)),
        ["run_shell_command"]
    );
    assert_eq!(
        sorted(facts.names_where(|f| f.edited_file_arg == Some("file_path"))),
        ["replace", "write_file"]
    );
    assert_eq!(
        sorted(facts.names_where(ToolFacts::is_edit)),
        ["replace", "write_file"]
    );
    assert_eq!(
        sorted(facts.names_where(|f| !f.compact_keeps.is_empty())),
        ["replace"]
    );
    assert_eq!(facts.get("replace").compact_keeps, ["allow_multiple"]);
    let acp = |name: &str| facts.resolve(name).map(|f| f.acp_kind.as_str());
    for (name, kind) in [
        ("read_file", "read"),
        ("read_many_files", "read"),
        ("write_file", "edit"),
        ("replace", "edit"),
        ("glob", "search"),
        ("grep_search", "search"),
        ("search_file_content", "search"),
        ("list_directory", "search"),
        ("run_shell_command", "execute"),
        ("web_fetch", "fetch"),
        ("write_todos", "think"),
        ("save_memory", "think"),
        ("list_background_processes", "other"),
        ("read_background_output", "other"),
    ] {
        assert_eq!(acp(name), Some(kind), "{name}");
    }
    // Every registered tool's facts are its handle's.
    for tool in registry.tools() {
        assert_eq!(facts.get(tool.name()), &tool.facts(), "{}", tool.name());
        assert_eq!(tool.facts().kind, tool.kind(), "{}", tool.name());
    }
}

#[actix::test]
async fn a_name_no_tool_has_and_a_legacy_name_get_the_unknown_facts() {
    let registry = builtin();
    let facts = registry.facts();
    assert_eq!(facts.get("mcp_fx_gather"), &ToolFacts::UNKNOWN);
    // Loop detection and the policy see a legacy name as today: not a known tool.
    assert_eq!(facts.get("search_file_content"), &ToolFacts::UNKNOWN);
    assert_eq!(facts.resolve("google_web_search"), None);
}

#[actix::test]
async fn a_tool_left_out_by_the_settings_keeps_its_facts() {
    let mut registry = builtin();
    registry.retain(|name| name != "glob");
    assert!(registry.get("glob").is_none());
    assert!(registry.facts().get("glob").run_once);
}

#[cfg(feature = "test-hooks")]
#[actix::test]
async fn the_test_note_tool_states_facts_unlike_the_defaults() {
    use super::Tool;
    let facts = super::test_note::TestNote.facts();
    assert_eq!(
        facts,
        ToolFacts {
            kind: ToolKind::Edit,
            acp_kind: ToolKind::Move,
            allow_key: AllowKey::CommandPrefix,
            run_once: false,
            answer_depends_on_files_only: false,
            edited_file_arg: None,
            compact_keeps: &[],
            subagents_only: false,
            runs_alone: false,
            main_session_only: false,
            append_arg: None,
            offered: crate::protocol::Offered::Always,
            interactive_only: false,
        }
    );
}

/// ACP's kind names are the kinds' wire names.
#[test]
fn a_kind_names_itself_as_its_wire_name() {
    use ToolKind::*;
    for kind in [
        Read, Edit, Delete, Move, Search, Execute, Think, Fetch, Other,
    ] {
        assert_eq!(
            serde_json::to_value(kind).ok(),
            Some(serde_json::Value::from(kind.as_str()))
        );
    }
}
