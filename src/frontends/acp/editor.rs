//! The client editor's file system (`fs/read_text_file`, `fs/write_text_file`) as
//! Troupe's [`EditorFiles`]: reads see unsaved buffers, writes land in the editor.
//! A client "not found" (JSON-RPC -32002) means the file is absent, so new files are
//! created through the client (gemini-cli fails there).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use agent_client_protocol::v1::schema::{ReadTextFileRequest, WriteTextFileRequest};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;
use futures::future::BoxFuture;
use serde_json::json;

use crate::actors::session::HandledEvents;
use crate::platform::filesystem::editor::{EditorError, EditorFiles};

/// The session's events the front end must have passed on before an `fs/*` request
/// goes out (set once the session has started).
pub type EventOrder = Arc<OnceLock<HandledEvents>>;

/// The client's files for one session.
pub struct ClientFiles {
    cx: ConnectionTo<Client>,
    session_id: Arc<Mutex<String>>,
    reads: bool,
    writes: bool,
    /// A request waits for the front end to send what the session told it before (a
    /// call's `tool_call` comes before the call's own requests).
    order: EventOrder,
}

impl ClientFiles {
    pub fn new(
        cx: ConnectionTo<Client>,
        session_id: Arc<Mutex<String>>,
        (reads, writes): (bool, bool),
        order: EventOrder,
    ) -> Self {
        Self {
            cx,
            session_id,
            reads,
            writes,
            order,
        }
    }

    fn session(&self) -> String {
        self.session_id
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default()
    }
}

fn editor_error(e: agent_client_protocol::Error) -> EditorError {
    let value = serde_json::to_value(&e).unwrap_or_default();
    let code = value.get("code").and_then(|c| c.as_i64());
    let message = value
        .get("message")
        .and_then(|m| m.as_str())
        .unwrap_or("")
        .to_string();
    if code == Some(-32002) || message.to_ascii_lowercase().contains("not found") {
        EditorError::NotFound
    } else {
        EditorError::Failed(format!("the editor refused: {message} ({e:?})"))
    }
}

impl EditorFiles for ClientFiles {
    fn reads(&self) -> bool {
        self.reads
    }

    fn writes(&self) -> bool {
        self.writes
    }

    fn read(&self, path: PathBuf) -> BoxFuture<'static, Result<String, EditorError>> {
        let cx = self.cx.clone();
        let params = json!({"sessionId": self.session(), "path": path.display().to_string()});
        let order = self.order.get().cloned();
        Box::pin(async move {
            if let Some(order) = order {
                order.caught_up().await;
            }
            let request: ReadTextFileRequest =
                serde_json::from_value(params).map_err(|e| EditorError::Failed(e.to_string()))?;
            let answer = cx
                .send_request(request)
                .block_task()
                .await
                .map_err(editor_error)?;
            let answer = serde_json::to_value(&answer).unwrap_or_default();
            Ok(answer["content"].as_str().unwrap_or("").to_string())
        })
    }

    fn write(&self, path: PathBuf, text: String) -> BoxFuture<'static, Result<(), EditorError>> {
        let cx = self.cx.clone();
        let params = json!({"sessionId": self.session(), "path": path.display().to_string(), "content": text});
        let order = self.order.get().cloned();
        Box::pin(async move {
            if let Some(order) = order {
                order.caught_up().await;
            }
            let request: WriteTextFileRequest =
                serde_json::from_value(params).map_err(|e| EditorError::Failed(e.to_string()))?;
            cx.send_request(request)
                .block_task()
                .await
                .map_err(editor_error)?;
            Ok(())
        })
    }
}
