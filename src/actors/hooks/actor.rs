//! The Hooks actor: owns the session's hook definitions (and which are enabled), runs
//! the ones an event matches and merges their answers. Runs never block the actor:
//! each is a spawned future; processes are killed on timeout or cancellation.

use std::collections::HashSet;
use std::sync::Arc;

use actix::prelude::*;
use serde_json::{json, Map, Value};

use super::output::{merge, parse, HookOutput, HookVerdict};
use super::runner::{self, HookEnv, RunResult};
use crate::protocol::hooks::HookEvent;
use crate::protocol::hooks::HookInfo;
use crate::protocol::EventSink;
use crate::protocol::{ListHooks, RunHooks, SetHookEnabled, UiEvent};
use crate::settings::hooks::{HookDef, HookOrigin};

/// The Hooks actor.
pub struct Hooks {
    defs: Vec<(Arc<HookDef>, bool)>,
    env: Arc<HookEnv>,
    events: EventSink,
}

impl Hooks {
    pub fn new(
        defs: Vec<HookDef>,
        disabled: &HashSet<String>,
        env: HookEnv,
        events: EventSink,
    ) -> Self {
        let defs = defs
            .into_iter()
            .map(|d| {
                let on = !disabled.contains(&d.name) && !disabled.contains(&d.command);
                (Arc::new(d), on)
            })
            .collect();
        Self {
            defs,
            env: Arc::new(env),
            events,
        }
    }

    fn matching(&self, event: HookEvent, target: Option<&str>) -> Vec<Arc<HookDef>> {
        self.defs
            .iter()
            .filter(|(d, on)| *on && d.event == event && matches(d, target))
            .map(|(d, _)| d.clone())
            .collect()
    }
}

/// gemini-cli's matching: tool events test the matcher as an unanchored regex (an
/// invalid one compares exactly); session events compare exactly; others match all.
fn matches(def: &HookDef, target: Option<&str>) -> bool {
    let m = def.matcher.as_str();
    if m.is_empty() || m == "*" {
        return true;
    }
    let Some(target) = target else { return true };
    if def.event.is_tool_event() {
        return match regex::Regex::new(m) {
            Ok(re) => re.is_match(target),
            Err(_) => m == target,
        };
    }
    if def.event.matches_exactly() {
        return m == target;
    }
    true
}

impl Actor for Hooks {
    type Context = Context<Self>;
}

impl Handler<RunHooks> for Hooks {
    type Result = ResponseFuture<HookVerdict>;

    fn handle(&mut self, msg: RunHooks, _: &mut Self::Context) -> Self::Result {
        let defs = self.matching(msg.event, msg.target.as_deref());
        if defs.is_empty() {
            return Box::pin(async { HookVerdict::default() });
        }
        let env = self.env.clone();
        let events = self.events.clone();
        let mut input = match msg.fields {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        input.insert("session_id".into(), json!(env.session_id));
        input.insert("transcript_path".into(), json!(""));
        input.insert("cwd".into(), json!(env.cwd.display().to_string()));
        input.insert("hook_event_name".into(), json!(msg.event.as_str()));
        input.insert(
            "timestamp".into(),
            json!(crate::engine::text::iso8601(std::time::SystemTime::now())),
        );
        let event = msg.event;
        let cancel = msg.cancel;
        let span = tracing::info_span!("hooks", event = event.as_str(), count = defs.len());
        Box::pin(tracing::Instrument::instrument(
            async move {
                let sequential = defs.iter().any(|d| d.sequential);
                let mut outputs = Vec::with_capacity(defs.len());
                let mut failed = Vec::new();
                if sequential {
                    let mut input = Value::Object(input);
                    for def in &defs {
                        let result = runner::run(def, &input, &env, &cancel).await;
                        if let Some(out) = interpret(def, event, result, &events, &mut failed) {
                            carry_forward(&mut input, &out);
                            outputs.push(out);
                        }
                    }
                } else {
                    let input = Value::Object(input);
                    let runs = defs.iter().map(|d| runner::run(d, &input, &env, &cancel));
                    let results = futures::future::join_all(runs).await;
                    for (def, result) in defs.iter().zip(results) {
                        if let Some(out) = interpret(def, event, result, &events, &mut failed) {
                            outputs.push(out);
                        }
                    }
                }
                let mut verdict = merge(&outputs);
                for message in &verdict.system_messages {
                    events.do_send(UiEvent::Warning(message.clone()));
                }
                verdict.failed = failed;
                tracing::info!(decision = ?verdict.decision, stop = verdict.stop.is_some(), "hooks ran");
                verdict
            },
            span,
        ))
    }
}

/// A run's output, or `None` when the hook failed (it then counts as not having run).
fn interpret(
    def: &HookDef,
    event: HookEvent,
    result: RunResult,
    events: &EventSink,
    failed: &mut Vec<String>,
) -> Option<HookOutput> {
    match result {
        RunResult::Failed(error) => {
            tracing::warn!(hook = %def.name, %error, "hook failed");
            events.do_send(UiEvent::Warning(format!(
                "Hook \"{}\" failed for event {}: {error}",
                def.name,
                event.as_str()
            )));
            failed.push(def.name.clone());
            None
        }
        RunResult::Exited {
            code,
            stdout,
            stderr,
        } => {
            if code != 0 {
                tracing::warn!(hook = %def.name, code, "hook exited non-zero");
                events.do_send(UiEvent::Warning(format!(
                    "Hook \"{}\" failed for event {} (exit status {code}).",
                    def.name,
                    event.as_str()
                )));
                failed.push(def.name.clone());
            }
            Some(parse(&stdout, &stderr, code))
        }
    }
}

/// In sequential runs each hook sees what the previous one said: `additionalContext`
/// is added to `prompt`, `tool_input` and `llm_request` are shallow-merged.
fn carry_forward(input: &mut Value, out: &HookOutput) {
    let Some(obj) = input.as_object_mut() else {
        return;
    };
    if let Some(ctx) = out
        .specific
        .get("additionalContext")
        .and_then(Value::as_str)
    {
        if let Some(Value::String(prompt)) = obj.get_mut("prompt") {
            prompt.push_str("\n\n");
            prompt.push_str(ctx);
        }
    }
    for key in ["tool_input", "llm_request"] {
        if let (Some(Value::Object(new)), Some(Value::Object(old))) =
            (out.specific.get(key), obj.get_mut(key))
        {
            for (k, v) in new {
                old.insert(k.clone(), v.clone());
            }
        }
    }
}

impl Handler<ListHooks> for Hooks {
    type Result = MessageResult<ListHooks>;

    fn handle(&mut self, _: ListHooks, _: &mut Self::Context) -> Self::Result {
        MessageResult(
            self.defs
                .iter()
                .map(|(d, on)| HookInfo {
                    event: d.event,
                    name: d.name.clone(),
                    command: d.command.clone(),
                    matcher: d.matcher.clone(),
                    enabled: *on,
                    project: d.origin == HookOrigin::Project,
                    source: d.source.clone(),
                })
                .collect(),
        )
    }
}

impl Handler<SetHookEnabled> for Hooks {
    type Result = usize;

    /// Enables or disables the hooks named `name` (all when `None`); how many changed.
    fn handle(&mut self, msg: SetHookEnabled, _: &mut Self::Context) -> usize {
        let mut changed = 0;
        for (def, on) in self.defs.iter_mut() {
            let hit = msg
                .name
                .as_ref()
                .is_none_or(|n| *n == def.name || *n == def.command);
            if hit && *on != msg.enabled {
                *on = msg.enabled;
                changed += 1;
            }
        }
        changed
    }
}
