//! `--record-responses FILE`: a model wrapper that writes every answer the real model
//! gave in the fake-responses JSONL format the scripted model replays, so a real
//! session becomes an offline test. Calls that failed are not written (a retry's
//! successful answer is), so the replay takes the path the session finally took.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::sync::Mutex;

use super::{ModelClient, ModelError, ModelStream, ServerFacts};
use crate::engine::model::{ModelEvent, ModelRequest};

/// A model whose answers are appended to a recording.
pub struct RecordingModel {
    inner: Arc<dyn ModelClient>,
    path: Arc<PathBuf>,
    lock: Arc<Mutex<()>>,
}

impl RecordingModel {
    /// Creates (or empties) the recording file.
    pub fn create(inner: Arc<dyn ModelClient>, path: &Path) -> Result<Self, ModelError> {
        std::fs::write(path, "").map_err(|e| {
            ModelError::Config(format!(
                "cannot write the recording {}: {e}",
                path.display()
            ))
        })?;
        Ok(Self {
            inner,
            path: Arc::new(path.to_path_buf()),
            lock: Arc::new(Mutex::new(())),
        })
    }
}

/// One Gemini chunk holding `parts`.
fn chunk(parts: Vec<Value>) -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]})
}

fn part(event: &ModelEvent) -> Option<Value> {
    match event {
        ModelEvent::Text(t) => Some(json!({"text": t})),
        ModelEvent::Thought(t) => Some(json!({"text": t, "thought": true})),
        ModelEvent::FunctionCall {
            call,
            thought_signature,
        } => {
            let mut p = json!({"functionCall": call});
            if let Some(sig) = thought_signature {
                p["thoughtSignature"] = json!(sig);
            }
            Some(p)
        }
        ModelEvent::Usage(_) | ModelEvent::Finished(_) => None,
    }
}

/// Adds the finish reason and the last usage to the final chunk.
fn close(chunks: &mut Vec<Value>, events: &[ModelEvent]) {
    if chunks.is_empty() {
        chunks.push(chunk(Vec::new()));
    }
    let Some(last) = chunks.last_mut() else {
        return;
    };
    for event in events {
        match event {
            ModelEvent::Finished(reason) => last["candidates"][0]["finishReason"] = json!(reason),
            ModelEvent::Usage(u) => last["usageMetadata"] = json!(u),
            _ => {}
        }
    }
}

/// The chunks that replay `events`: one per streamed part.
pub fn stream_chunks(events: &[ModelEvent]) -> Vec<Value> {
    let mut chunks: Vec<Value> = events
        .iter()
        .filter_map(part)
        .map(|p| chunk(vec![p]))
        .collect();
    close(&mut chunks, events);
    chunks
}

/// The single response that replays a utility call.
pub fn generate_response(events: &[ModelEvent]) -> Value {
    let mut chunks = vec![chunk(events.iter().filter_map(part).collect())];
    close(&mut chunks, events);
    chunks.remove(0)
}

async fn append(path: &Path, lock: &Mutex<()>, line: Value) {
    let _guard = lock.lock().await;
    let file = tokio::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .await;
    let result = match file {
        Ok(mut f) => f.write_all(format!("{line}\n").as_bytes()).await,
        Err(e) => Err(e),
    };
    if let Err(e) = result {
        tracing::warn!(error = %e, path = %path.display(), "cannot append to the recording");
    }
}

impl ModelClient for RecordingModel {
    fn provider(&self) -> &str {
        self.inner.provider()
    }

    fn default_model(&self) -> BoxFuture<'static, Result<String, ModelError>> {
        self.inner.default_model()
    }

    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ModelError>> {
        self.inner.list_models()
    }

    fn discover(&self, model: &str) -> BoxFuture<'static, Result<ServerFacts, ModelError>> {
        self.inner.discover(model)
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        let mut inner = self.inner.stream(request);
        let (path, lock) = (self.path.clone(), self.lock.clone());
        Box::pin(async_stream::stream! {
            let mut seen = Vec::new();
            while let Some(item) = inner.next().await {
                match item {
                    Ok(event) => {
                        seen.push(event.clone());
                        yield Ok(event);
                    }
                    Err(e) => {
                        yield Err(e);
                        return;
                    }
                }
            }
            let line = json!({"method": "generateContentStream", "response": stream_chunks(&seen)});
            append(&path, &lock, line).await;
        })
    }

    fn generate(
        &self,
        request: ModelRequest,
    ) -> BoxFuture<'static, Result<Vec<ModelEvent>, ModelError>> {
        let inner = self.inner.generate(request);
        let (path, lock) = (self.path.clone(), self.lock.clone());
        Box::pin(async move {
            let events = inner.await?;
            let line = json!({"method": "generateContent", "response": generate_response(&events)});
            append(&path, &lock, line).await;
            Ok(events)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::gemini_chunk_events;
    use crate::protocol::content::{FunctionCall, Usage};

    #[test]
    fn recorded_chunks_replay_the_same_events() {
        let events = vec![
            ModelEvent::Thought("hmm".into()),
            ModelEvent::Text("I will ".into()),
            ModelEvent::Text("read.".into()),
            ModelEvent::FunctionCall {
                call: FunctionCall {
                    id: Some("c1".into()),
                    name: "read_file".into(),
                    args: json!({"file_path": "a"}),
                },
                thought_signature: Some("sig".into()),
            },
            ModelEvent::Finished("STOP".into()),
            ModelEvent::Usage(Usage {
                prompt_token_count: 5,
                ..Usage::default()
            }),
        ];
        let replayed: Vec<ModelEvent> = stream_chunks(&events)
            .iter()
            .flat_map(|c| gemini_chunk_events(c).unwrap())
            .collect();
        assert_eq!(replayed, events);
        let one = gemini_chunk_events(&generate_response(&events)).unwrap();
        assert_eq!(one, events);
    }
}
