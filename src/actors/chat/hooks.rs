//! Where the Chat actor's turn loop calls the hooks (BeforeAgent, BeforeModel,
//! BeforeToolSelection, AfterModel, AfterAgent, PreCompress) and how their verdicts
//! change the turn. Every call is skipped at no cost when the session has no hooks.

use actix::prelude::*;
use serde_json::{json, Value};

use super::model_call::CallFailure;
use super::Chat;
use crate::actors::hooks::{HookClient, HookEvent, HookVerdict};
use crate::engine::history::TurnAssembler;
use crate::engine::loop_detection::LoopKind;
use crate::engine::model::{ModelEvent, ModelRequest};
use crate::protocol::content::{Content, Part, Role};
use crate::protocol::{TurnOutcome, UiEvent};

/// gemini-cli's `llm_request`: the model, one message per content that has text (its
/// text parts joined), the sampling config.
pub fn llm_request(request: &ModelRequest) -> Value {
    let messages: Vec<Value> = request
        .contents
        .iter()
        .filter(|c| !c.text().is_empty())
        .map(|c| {
            let role = if c.role == Role::Model {
                "model"
            } else {
                "user"
            };
            json!({"role": role, "content": c.text()})
        })
        .collect();
    json!({
        "model": request.model,
        "messages": messages,
        "config": {
            "temperature": request.temperature,
            "maxOutputTokens": request.max_output_tokens,
            "topP": request.top_p,
            "topK": request.top_k,
        },
    })
}

/// A BeforeModel hook's `llm_request` applied as gemini-cli 0.61 does
/// (`fromHookLLMRequest`): `model` replaces the model; message *i* replaces the text
/// of the *i*-th content that has text (its calls, responses and data kept, in order);
/// messages beyond those become new contents; a `config` sets temperature,
/// maxOutputTokens, topP and topK (an absent one is unset).
pub fn apply_llm_request(request: &mut ModelRequest, hook: &Value) {
    if let Some(model) = hook
        .get("model")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
    {
        request.model = model.to_string();
    }
    if let Some(messages) = hook.get("messages").and_then(Value::as_array) {
        let text_of = |m: &Value| match m.get("content") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let role_of = |m: &Value| {
            if m.get("role").and_then(Value::as_str) == Some("model") {
                Role::Model
            } else {
                Role::User
            }
        };
        let mut next = messages.iter();
        let contents = std::sync::Arc::make_mut(&mut request.contents);
        for content in contents.iter_mut() {
            if content.text().is_empty() {
                continue;
            }
            let Some(message) = next.next() else { break };
            let mut parts = vec![Part::text(text_of(message))];
            parts.extend(content.parts.drain(..).filter(|p| p.text.is_none()));
            content.parts = parts;
            content.role = role_of(message);
        }
        for message in next {
            contents.push(Content {
                role: role_of(message),
                parts: vec![Part::text(text_of(message))],
            });
        }
    }
    if let Some(config) = hook.get("config").filter(|c| c.is_object()) {
        let number = |k: &str| config.get(k).and_then(Value::as_f64);
        request.temperature = number("temperature");
        request.top_p = number("topP");
        request.top_k = number("topK").map(|v| v.max(0.0) as u32);
        request.max_output_tokens = number("maxOutputTokens").map(|v| v.max(0.0) as u32);
    }
}

/// An AfterModel hook's `llm_response` with parts, as the model turn it stands for
/// (gemini-cli's `getModifiedResponse`: the first candidate's parts, as text).
fn replacement(response: &Value) -> Option<Content> {
    // Each part is a string (or a `{text}` object); the replacement is their text.
    let parts = response
        .pointer("/candidates/0/content/parts")?
        .as_array()
        .filter(|p| !p.is_empty())?;
    let parts: Vec<Part> = parts
        .iter()
        .filter_map(|p| p.as_str().or_else(|| p.get("text").and_then(Value::as_str)))
        .map(Part::text)
        .collect();
    (!parts.is_empty()).then_some(Content {
        role: Role::Model,
        parts,
    })
}

/// The text of an `llm_response` a hook supplied (`text`, or the candidate's parts).
fn response_text(response: &Value) -> Option<String> {
    if let Some(t) = response.get("text").and_then(Value::as_str) {
        return Some(t.to_string());
    }
    let parts = response
        .pointer("/candidates/0/content/parts")?
        .as_array()?;
    Some(
        parts
            .iter()
            .filter_map(|p| p.as_str().or_else(|| p.get("text").and_then(Value::as_str)))
            .collect(),
    )
}

fn stopped(verdict: &HookVerdict) -> Option<String> {
    verdict
        .stop
        .as_ref()
        .map(|r| format!("Agent execution stopped by hook: {r}"))
}

/// Runs PreCompress (`manual` when forced, else `auto`); advisory only.
pub async fn pre_compress(hooks: &HookClient, force: bool) {
    if !hooks.is_active() {
        return;
    }
    let trigger = if force { "manual" } else { "auto" };
    hooks
        .fire(
            HookEvent::PreCompress,
            Some(trigger.into()),
            json!({"trigger": trigger}),
            Default::default(),
        )
        .await;
}

impl Chat {
    fn turn_cancel(&self) -> tokio_util::sync::CancellationToken {
        self.turn
            .as_ref()
            .map(|t| t.cancel.clone())
            .unwrap_or_default()
    }

    /// BeforeAgent, then the prompt goes in: a stop or deny ends the turn before the
    /// model is called; `additionalContext` is added to the prompt.
    pub(super) fn before_agent(&mut self, text: String, ctx: &mut Context<Self>) {
        let hooks = self.config.hooks.clone();
        let cancel = self.turn_cancel();
        let fields = json!({"prompt": text});
        ctx.spawn(
            async move {
                hooks
                    .fire(HookEvent::BeforeAgent, None, fields, cancel)
                    .await
            }
            .into_actor(self)
            .map(move |verdict, act, ctx| {
                if let Some(message) = stopped(&verdict) {
                    return act.finish(TurnOutcome::Failed { message });
                }
                if verdict.denied() {
                    let message = format!("Agent execution blocked: {}", verdict.reason_text());
                    act.emit(UiEvent::Warning(message.clone()));
                    return act.finish(TurnOutcome::Failed { message });
                }
                act.add_prompt(text, verdict.additional_context, ctx);
            }),
        );
    }

    /// The user content of a prompt, with the hooks' context as its own part.
    pub(super) fn prompt_content(text: String, hook_context: Option<String>) -> Content {
        let mut content = Content::user_text(text);
        if let Some(c) = hook_context {
            content
                .parts
                .push(Part::text(format!("<hook_context>{c}</hook_context>")));
        }
        content
    }

    /// BeforeModel and BeforeToolSelection, then the model call.
    pub(super) fn request_model_hooked(&mut self, request: ModelRequest, ctx: &mut Context<Self>) {
        let hooks = self.config.hooks.clone();
        let cancel = self.turn_cancel();
        let llm = llm_request(&request);
        let checks = async move {
            let before = hooks
                .fire(
                    HookEvent::BeforeModel,
                    None,
                    json!({"llm_request": llm}),
                    cancel.clone(),
                )
                .await;
            if before.stop.is_some() || before.denied() {
                return (before, HookVerdict::default());
            }
            let selection = hooks
                .fire(
                    HookEvent::BeforeToolSelection,
                    None,
                    json!({"llm_request": llm}),
                    cancel,
                )
                .await;
            (before, selection)
        };
        ctx.spawn(
            checks
                .into_actor(self)
                .map(move |(before, selection), act, ctx| {
                    if let Some(message) = stopped(&before) {
                        return act.fail(message);
                    }
                    if before.denied() {
                        if let Some(text) = before.llm_response.as_ref().and_then(response_text) {
                            act.emit(UiEvent::TextDelta(text.clone()));
                            act.history.push(Content::model_text(text.clone()));
                            return act.finish(TurnOutcome::Completed { response: text });
                        }
                        let reason = before.reason_text();
                        return act.fail(format!("Model call blocked by hook: {reason}"));
                    }
                    let mut request = request;
                    if let Some(changed) = &before.llm_request {
                        apply_llm_request(&mut request, changed);
                    }
                    apply_tool_config(&mut request, selection.tool_config.as_ref());
                    act.send_request(request, ctx);
                }),
        );
    }

    /// AfterModel on a finished response (once per response, not per chunk): a stop
    /// or deny ends the turn before any call of the response runs.
    pub(super) fn after_model(
        &mut self,
        result: Result<(TurnAssembler, Option<LoopKind>), CallFailure>,
        ctx: &mut Context<Self>,
    ) {
        let assembled = match result {
            Ok((a, None)) if self.config.hooks.is_active() => a,
            other => return self.on_model_done(other, ctx),
        };
        let hooks = self.config.hooks.clone();
        let cancel = self.turn_cancel();
        let text = assembled.text();
        let fields = json!({
            "llm_request": llm_request(&self.request()),
            "llm_response": {
                "text": text,
                "candidates": [{"content": {"role": "model", "parts": [text]}, "finishReason": "STOP", "index": 0}],
            },
        });
        ctx.spawn(
            async move {
                hooks
                    .fire(HookEvent::AfterModel, None, fields, cancel)
                    .await
            }
            .into_actor(self)
            .map(move |verdict, act, ctx| {
                if let Some(message) = stopped(&verdict) {
                    return act.fail(message);
                }
                if verdict.denied() {
                    let reason = verdict.reason_text();
                    return act.fail(format!("Model response blocked by hook: {reason}"));
                }
                if let Some(content) = verdict.llm_response.as_ref().and_then(replacement) {
                    // The hook's answer stands for the model's: its text is shown and
                    // recorded, and the original's calls do not run.
                    act.emit(UiEvent::Notice(
                        "An AfterModel hook replaced the model's answer.".into(),
                    ));
                    let text = content.text();
                    act.emit(UiEvent::TextDelta(text.clone()));
                    let mut replaced = TurnAssembler::default();
                    replaced.finish_reason = assembled.finish_reason.clone();
                    replaced.usage = assembled.usage;
                    replaced.push(&ModelEvent::Text(text));
                    return act.on_model_done(Ok((replaced, None)), ctx);
                }
                act.on_model_done(Ok((assembled, None)), ctx);
            }),
        );
    }

    /// AfterAgent when the model answered without calling a tool: a deny sends its
    /// reason back to the model as a new prompt (once); a stop ends the run.
    pub(super) fn complete_turn(&mut self, response: String, ctx: &mut Context<Self>) {
        let Some(turn) = self.turn.as_ref() else {
            return;
        };
        if !self.config.hooks.is_active() {
            return self.finish(TurnOutcome::Completed { response });
        }
        let prompt = self
            .history
            .get(turn.start_len)
            .map(Content::text)
            .unwrap_or_default();
        let stop_hook_active = turn.stop_hook_active;
        let all_text: Vec<String> = self.history[turn.start_len.min(self.history.len())..]
            .iter()
            .filter(|c| c.role == Role::Model)
            .map(Content::text)
            .filter(|t| !t.is_empty())
            .collect();
        let fields = json!({
            "prompt": prompt,
            "prompt_response": all_text.join("\n"),
            "stop_hook_active": stop_hook_active,
        });
        let hooks = self.config.hooks.clone();
        let cancel = self.turn_cancel();
        ctx.spawn(
            async move {
                hooks
                    .fire(HookEvent::AfterAgent, None, fields, cancel)
                    .await
            }
            .into_actor(self)
            .map(move |verdict, act, ctx| {
                if let Some(message) = stopped(&verdict) {
                    act.emit(UiEvent::Warning(message));
                } else if verdict.denied() && !stop_hook_active {
                    if let Some(turn) = act.turn.as_mut() {
                        turn.stop_hook_active = true;
                        turn.after_function_response = false;
                    }
                    act.history.push(Content::user_text(verdict.reason_text()));
                    return act.request_model(ctx);
                }
                act.finish(TurnOutcome::Completed { response });
                if verdict.clear_context {
                    act.history.clear();
                    act.sent.get_mut().reset();
                }
            }),
        );
    }
}

/// BeforeToolSelection's `toolConfig`: mode `NONE` sends no tools; allowed function
/// names keep only those.
fn apply_tool_config(request: &mut ModelRequest, config: Option<&Value>) {
    let Some(config) = config else { return };
    if config.get("mode").and_then(Value::as_str) == Some("NONE") {
        request.tools = Default::default();
        return;
    }
    if let Some(names) = config.get("allowedFunctionNames").and_then(Value::as_array) {
        let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
        if !names.is_empty() {
            std::sync::Arc::make_mut(&mut request.tools)
                .retain(|t| names.contains(&t.name.as_str()));
        }
    }
}
