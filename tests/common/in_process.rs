//! Sessions started in the test's own process and driven through their handle.

use std::path::Path;
use std::sync::Arc;

use troupe::actors::session::{SessionHandle, SessionOptions};
use troupe::platform::workspace::Workspace;
use troupe::protocol::{ApprovalMode, Op};
use troupe::providers::ModelClient;
use troupe::settings::Settings;

/// Starts a session in `ws` on `model` (the test tools registered when `test_tools`),
/// unrecorded, with every call's progress shown. Must run inside an actix System.
pub async fn start_session(
    ws: &Path,
    settings: Arc<Settings>,
    model: Arc<dyn ModelClient>,
    mode: ApprovalMode,
    test_tools: bool,
) -> SessionHandle {
    SessionHandle::start(SessionOptions {
        workspace: Arc::new(Workspace::new(ws, &[]).expect("workspace")),
        model_name: settings.model.name.clone(),
        settings,
        model,
        approval_mode: mode,
        request_log: None,
        test_tools,
        editor_files: None,
        plan: None,
        call_progress: true,
        wait_for_mcp: false,
        interactive: false,
        trajectory: None,
    })
    .await
    .expect("session")
}

/// A user turn of `text` alone.
pub fn user_turn(text: &str) -> Op {
    Op::UserTurn {
        text: text.into(),
        parts: Vec::new(),
    }
}
