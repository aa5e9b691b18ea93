//! The scripted model: replays a gemini-cli `--fake-responses` file. Each non-empty line
//! is `{"method": "...", "response": ...}`; lines are consumed strictly in order, one per
//! model call, so the same file drives gemini-cli and Troupe.

use std::path::Path;
use std::sync::Mutex;

use futures::future::BoxFuture;
use futures::stream;
use serde_json::Value;

use super::script_lines::{response_value, stream_events, typed_stream_events, LineShape, Shape};
use super::{ModelClient, ModelError, ModelStream};
use crate::engine::model::{gemini_chunk_events, ModelEvent, ModelRequest};

const STREAM: &str = "generateContentStream";
const GENERATE: &str = "generateContent";

/// One line of a script: a stream answer read into its events, or any other line
/// checked and kept as text until it is used.
#[derive(Debug, Clone)]
struct ScriptLine {
    line_no: usize,
    method: String,
    body: Body,
}

#[derive(Debug, Clone)]
enum Body {
    Events(Vec<ModelEvent>),
    Text(String),
}

impl Body {
    fn text(&self) -> &str {
        match self {
            Body::Text(text) => text,
            Body::Events(_) => "",
        }
    }
}

/// A model that answers from a script instead of the network.
#[derive(Debug)]
pub struct ScriptedModel {
    source: String,
    /// What the model is called (`-o json` stats, the banner, `/model`, `/stats`).
    name: String,
    lines: Mutex<(Vec<ScriptLine>, usize)>,
}

impl ScriptedModel {
    /// Reads and checks a script file; a malformed line is an error naming it.
    pub fn from_file(path: &Path) -> Result<Self, ModelError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ModelError::Script(format!("cannot read {}: {e}", path.display())))?;
        let model = Self::from_text(&path.display().to_string(), &text)?;
        Ok(model.named(format!("scripted: {}", path.display())))
    }

    /// Names the model ([`ModelClient::default_model`]); a script read from a file is
    /// `scripted: FILE`, any other `scripted`.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Parses a script held in memory; `source` names it in messages. Every line is
    /// checked here (JSON syntax, method, the shape of the response); a stream answer
    /// is read into its events, any other line when it is used.
    pub fn from_text(source: &str, text: &str) -> Result<Self, ModelError> {
        let mut lines = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line_no = i + 1;
            if raw.trim().is_empty() {
                continue;
            }
            if let Some(events) = typed_stream_events(raw) {
                lines.push(ScriptLine {
                    line_no,
                    method: STREAM.to_string(),
                    body: Body::Events(events),
                });
                continue;
            }
            let bad = |why: String| ModelError::Script(format!("{source}:{line_no}: {why}"));
            let shape = match serde_json::from_str::<LineShape>(raw) {
                Ok(shape) if raw.trim_start().starts_with('{') && shape.response.is_some() => shape,
                // Not an object, a field of an unexpected type, a key given twice or a
                // `null` response: the general reading decides, as `JSON.parse` would
                // (the last of two keys wins), and words the error.
                _ => {
                    let value: Value = serde_json::from_str(raw)
                        .map_err(|e| bad(format!("malformed JSON: {e}")))?;
                    LineShape {
                        method: value
                            .get("method")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                        response: value.get("response").map(|r| match r.is_array() {
                            true => Shape::Array,
                            false => Shape::Other,
                        }),
                    }
                }
            };
            let method = shape
                .method
                .ok_or_else(|| bad("missing \"method\"".into()))?;
            let response = shape
                .response
                .ok_or_else(|| bad("missing \"response\"".into()))?;
            match method.as_str() {
                STREAM if response != Shape::Array => {
                    return Err(bad(format!(
                        "a {STREAM} response must be an array of chunks"
                    )))
                }
                STREAM | GENERATE | "countTokens" | "embedContent" => {}
                other => return Err(bad(format!("unknown method \"{other}\""))),
            }
            lines.push(ScriptLine {
                line_no,
                method,
                body: Body::Text(raw.to_string()),
            });
        }
        Ok(Self {
            source: source.to_string(),
            name: "scripted".to_string(),
            lines: Mutex::new((lines, 0)),
        })
    }

    /// Takes the next line, which must be of `method`. gemini-cli's model-router lines
    /// (`generateContent` answers carrying `model_choice`) are skipped: Troupe has no
    /// router, and skipping them lets gemini-cli's own fixtures drive it.
    fn next(&self, method: &str, request: &ModelRequest) -> Result<ScriptLine, ModelError> {
        let mut guard = self
            .lines
            .lock()
            .map_err(|_| ModelError::Script("script state poisoned".into()))?;
        let (lines, cursor) = &mut *guard;
        while let Some(line) = lines.get(*cursor) {
            if method == STREAM && line.method == GENERATE && is_router_line(line.body.text()) {
                *cursor += 1;
                continue;
            }
            break;
        }
        let Some(line) = lines.get_mut(*cursor) else {
            let last = lines.last().map(|l| l.line_no).unwrap_or(0);
            let summary = request
                .contents
                .last()
                .map(|c| serde_json::to_string(c).unwrap_or_default())
                .unwrap_or_default();
            return Err(ModelError::Script(format!(
                "No more mock responses for {method}: {} ended after line {last}, got request:\n{}",
                self.source,
                truncate(&summary, 2000)
            )));
        };
        if line.method != method {
            return Err(ModelError::Script(format!(
                "Unexpected response type, next response was for {} but expected {method} ({}:{})",
                line.method, self.source, line.line_no
            )));
        }
        *cursor += 1;
        // Each line answers one call: it is taken, not copied.
        Ok(ScriptLine {
            line_no: line.line_no,
            method: line.method.clone(),
            body: std::mem::replace(&mut line.body, Body::Text(String::new())),
        })
    }

    /// How many lines have been consumed.
    pub fn consumed(&self) -> usize {
        self.lines.lock().map(|g| g.1).unwrap_or(0)
    }
}

fn is_router_line(line: &str) -> bool {
    response_value(line)
        .unwrap_or_default()
        .pointer("/candidates/0/content/parts/0/text")
        .and_then(Value::as_str)
        .and_then(|t| serde_json::from_str::<Value>(t).ok())
        .is_some_and(|v| v.get("model_choice").is_some())
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

fn line_events(source: &str, line: &ScriptLine) -> Result<Vec<ModelEvent>, ModelError> {
    let located = |e: String| ModelError::Script(format!("{source}:{}: {e}", line.line_no));
    let response = response_value(line.body.text()).map_err(located)?;
    gemini_chunk_events(&response).map_err(located)
}

impl ModelClient for ScriptedModel {
    fn provider(&self) -> &str {
        "scripted"
    }

    /// A script stands in for no real model: it is named for what it is.
    fn default_model(&self) -> BoxFuture<'static, Result<String, ModelError>> {
        let name = self.name.clone();
        Box::pin(async move { Ok(name) })
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        let line = match self.next(STREAM, &request) {
            Ok(line) => line,
            Err(e) => return Box::pin(stream::iter(vec![Err(e)])),
        };
        let items: Vec<Result<ModelEvent, ModelError>> = match line.body {
            Body::Events(events) => events.into_iter().map(Ok).collect(),
            // The general reading ends at its first error: it is located here.
            Body::Text(text) => stream_events(&text)
                .into_iter()
                .map(|event| {
                    event.map_err(|e| {
                        ModelError::Script(format!("{}:{}: {e}", self.source, line.line_no))
                    })
                })
                .collect(),
        };
        Box::pin(stream::iter(items))
    }

    fn generate(
        &self,
        request: ModelRequest,
    ) -> BoxFuture<'static, Result<Vec<ModelEvent>, ModelError>> {
        let result = self
            .next(GENERATE, &request)
            .and_then(|line| line_events(&self.source, &line));
        Box::pin(async move { result })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    fn req() -> ModelRequest {
        ModelRequest::new("m", vec![])
    }

    #[tokio::test]
    async fn replays_in_order_and_reports_exhaustion() {
        let script = r#"{"method":"generateContent","response":{"candidates":[{"content":{"parts":[{"text":"{\"reasoning\":\"x\",\"model_choice\":\"flash\"}"}]}}]}}
{"method":"generateContentStream","response":[{"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}]}]}
"#;
        let model = ScriptedModel::from_text("s.jsonl", script).unwrap();
        let events: Vec<_> = model.stream(req()).collect().await;
        assert_eq!(events[0].as_ref().unwrap(), &ModelEvent::Text("hi".into()));
        let events: Vec<_> = model.stream(req()).collect().await;
        let err = events[0].as_ref().unwrap_err().to_string();
        assert!(
            err.contains("No more mock responses for generateContentStream"),
            "{err}"
        );
        assert!(err.contains("ended after line 2"), "{err}");
    }

    #[test]
    fn malformed_line_is_named() {
        let err = ScriptedModel::from_text(
            "s.jsonl",
            "{\"method\":\"generateContentStream\",\"response\":[]}\nnot json\n",
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("scripted model: s.jsonl:2: malformed JSON"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_key_given_twice_is_read_as_json_parse_reads_it_the_last_one_wins() {
        let chunk =
            r#"[{"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}]}]"#;
        let last_is_array =
            format!(r#"{{"method":"generateContentStream","response":"x","response":{chunk}}}"#);
        let model = ScriptedModel::from_text("s.jsonl", &last_is_array).unwrap();
        let events: Vec<_> = model.stream(req()).collect().await;
        assert_eq!(events[0].as_ref().unwrap(), &ModelEvent::Text("hi".into()));
        let last_is_text =
            format!(r#"{{"method":"generateContentStream","response":{chunk},"response":"x"}}"#);
        let err = ScriptedModel::from_text("s.jsonl", &last_is_text).unwrap_err();
        assert!(
            err.to_string().contains("must be an array of chunks"),
            "{err}"
        );
    }
}
