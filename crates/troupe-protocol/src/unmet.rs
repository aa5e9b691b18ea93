//! What a completed turn did not do of what its prompt asked (`model.check_outcome`).

use serde::{Deserialize, Serialize};

/// What a turn that completed did not do of what its prompt asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unmet {
    /// The prompt asks for a change and no file of the workspace changed.
    NoChange,
    /// The prompt asks for the tests to be run and no test command ran.
    TestsNotRun,
    /// A tool call was required and the model answered without one, twice.
    NoToolCall,
}

impl Unmet {
    /// The status a result gives it (stream-json `status`, batch `status`).
    pub fn status(self) -> &'static str {
        match self {
            Unmet::NoChange => "no_change",
            Unmet::TestsNotRun => "tests_not_run",
            Unmet::NoToolCall => "no_tool_call",
        }
    }

    /// The error type `-o json` gives it.
    pub fn error_type(self) -> &'static str {
        match self {
            Unmet::NoChange => "NoChange",
            Unmet::TestsNotRun => "TestsNotRun",
            Unmet::NoToolCall => "NoToolCall",
        }
    }
}
