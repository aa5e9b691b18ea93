//! The worked example of docs/extending.md, compiled and tested as it is printed there
//! (`tests/suite/extending.rs`): a read-only tool that counts the lines, words and bytes
//! of one workspace file. The test build registers it with the test tools
//! (`TROUPE_TEST_TOOLS=1`); a built-in would be registered in `register_builtin`.

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{Tool, ToolContext};
use crate::protocol::{ToolErrorKind, ToolKind, ToolOutput};

/// The name the model calls (other modules that must spell it use this constant).
pub const NAME: &str = "word_count";

/// Counts the lines, words and bytes of a file.
pub struct WordCount;

/// `word_count`'s parameters, checked against [`WordCount::schema`] before a call runs.
#[derive(Debug, Clone, Deserialize)]
pub struct WordCountParams {
    /// The file, relative to the workspace or absolute inside it.
    pub file_path: String,
}

impl Tool for WordCount {
    type Params = WordCountParams;

    fn name(&self) -> &'static str {
        NAME
    }

    fn display_name(&self) -> &'static str {
        "WordCount"
    }

    /// Reads only: the default policy runs it without asking.
    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    /// The same call with no file changed in between answers the same (a repeat).
    fn answer_depends_on_files_only(&self) -> bool {
        true
    }

    fn description(&self) -> String {
        "Counts the lines, words and bytes of a text file in the workspace.".into()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"file_path": {"type": "string", "description": "The file to count."}},
            "required": ["file_path"]
        })
    }

    fn execute(&self, p: WordCountParams, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let path = ctx.services.workspace.resolve(&p.file_path);
            // The FileSystem actor confines the path to the workspace and its ignore rules.
            match ctx.services.fs.read(path).await {
                Ok(file) => {
                    let text = String::from_utf8_lossy(&file.bytes);
                    let answer = format!(
                        "{}: {} lines, {} words, {} bytes",
                        p.file_path,
                        text.lines().count(),
                        text.split_whitespace().count(),
                        file.bytes.len()
                    );
                    ToolOutput::text(answer.clone(), answer)
                }
                Err(e) => ToolOutput::error(
                    ToolErrorKind::ReadContentFailure,
                    format!("Cannot count {}: {e}", p.file_path),
                    "Read failed",
                ),
            }
        })
    }
}
