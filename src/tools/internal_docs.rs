//! `get_internal_docs {path?}`: the documentation Troupe carries in its binary (the
//! README and `docs/*.md`), for the `cli_help` agent. Without a path it lists the
//! documents; with one it answers that document. Offered to subagents only.

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{Tool, ToolContext};
use crate::protocol::{ToolErrorKind, ToolKind, ToolOutput};

/// The tool's name, as gemini-cli 0.61's `cli_help` agent is given it.
pub const GET_INTERNAL_DOCS: &str = "get_internal_docs";

/// The documents, by the path the model asks for.
pub const DOCS: &[(&str, &str)] = &[
    ("README.md", include_str!("../../README.md")),
    ("docs/acp.md", include_str!("../../docs/acp.md")),
    ("docs/agents.md", include_str!("../../docs/agents.md")),
    (
        "docs/architecture.md",
        include_str!("../../docs/architecture.md"),
    ),
    (
        "docs/differences-from-gemini-cli.md",
        include_str!("../../docs/differences-from-gemini-cli.md"),
    ),
    ("docs/extending.md", include_str!("../../docs/extending.md")),
    ("docs/hooks.md", include_str!("../../docs/hooks.md")),
    (
        "docs/interactive.md",
        include_str!("../../docs/interactive.md"),
    ),
    ("docs/mcp.md", include_str!("../../docs/mcp.md")),
    ("docs/models.md", include_str!("../../docs/models.md")),
    ("docs/security.md", include_str!("../../docs/security.md")),
    ("docs/sessions.md", include_str!("../../docs/sessions.md")),
    ("docs/skills.md", include_str!("../../docs/skills.md")),
];

/// The `get_internal_docs` tool.
pub struct GetInternalDocs;

#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    #[serde(default)]
    pub path: Option<String>,
}

impl Tool for GetInternalDocs {
    type Params = Params;

    fn name(&self) -> &'static str {
        GET_INTERNAL_DOCS
    }

    fn display_name(&self) -> &'static str {
        "Internal Docs"
    }

    /// gemini-cli 0.61 writes this core tool's declaration out per model family, without
    /// `wait_for_previous` (a call may still set it).
    fn declares_wait_for_previous(&self) -> bool {
        false
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn subagents_only(&self) -> bool {
        true
    }

    fn description(&self) -> String {
        "Reads Troupe's own documentation. Without `path`, lists the documents; with `path` (as listed), returns that document.".into()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "A document's path as the listing gives it, e.g. docs/agents.md."}
            }
        })
    }

    fn execute(&self, p: Params, _ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let out = match p.path.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
            None => {
                let list: Vec<&str> = DOCS.iter().map(|(path, _)| *path).collect();
                let text = format!("Available documentation files:\n{}", list.join("\n"));
                ToolOutput::text(text, format!("Listed {} documents", list.len()))
            }
            Some(path) => match DOCS.iter().find(|(p, _)| *p == path) {
                Some((_, text)) => {
                    ToolOutput::text(*text, format!("Successfully read documentation: {path}"))
                }
                None => {
                    let msg = format!("No such document: {path}. Call get_internal_docs without a path to list them.");
                    ToolOutput::error(ToolErrorKind::FileNotFound, msg.clone(), msg)
                }
            },
        };
        Box::pin(async move { out })
    }
}
