//! Hooks as the rest of Troupe sees them: the events, one hook's description, the
//! merged verdict of an event's hooks, and the handle that asks the Hooks actor.

use actix::prelude::*;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{ListHooks, RunHooks, SetHookEnabled};

/// The points of a session where hooks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HookEvent {
    SessionStart,
    SessionEnd,
    BeforeAgent,
    AfterAgent,
    BeforeModel,
    AfterModel,
    BeforeToolSelection,
    BeforeTool,
    AfterTool,
    PreCompress,
    Notification,
}

impl HookEvent {
    pub const ALL: [HookEvent; 11] = [
        HookEvent::SessionStart,
        HookEvent::SessionEnd,
        HookEvent::BeforeAgent,
        HookEvent::AfterAgent,
        HookEvent::BeforeModel,
        HookEvent::AfterModel,
        HookEvent::BeforeToolSelection,
        HookEvent::BeforeTool,
        HookEvent::AfterTool,
        HookEvent::PreCompress,
        HookEvent::Notification,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::BeforeAgent => "BeforeAgent",
            HookEvent::AfterAgent => "AfterAgent",
            HookEvent::BeforeModel => "BeforeModel",
            HookEvent::AfterModel => "AfterModel",
            HookEvent::BeforeToolSelection => "BeforeToolSelection",
            HookEvent::BeforeTool => "BeforeTool",
            HookEvent::AfterTool => "AfterTool",
            HookEvent::PreCompress => "PreCompress",
            HookEvent::Notification => "Notification",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// Tool events match their matcher as a regex on the tool name.
    pub fn is_tool_event(self) -> bool {
        matches!(self, HookEvent::BeforeTool | HookEvent::AfterTool)
    }

    /// These match their matcher exactly against the source / reason / trigger.
    pub fn matches_exactly(self) -> bool {
        matches!(
            self,
            HookEvent::SessionStart | HookEvent::SessionEnd | HookEvent::PreCompress
        )
    }
}

/// One hook as `/hooks` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct HookInfo {
    pub event: HookEvent,
    pub name: String,
    pub command: String,
    pub matcher: String,
    pub enabled: bool,
    pub project: bool,
    pub source: String,
}

/// A hook's decision, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Decision {
    #[default]
    Allow,
    Ask,
    Deny,
}

/// Several hooks' answers for one event, merged.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookVerdict {
    pub stop: Option<String>,
    pub decision: Decision,
    /// The reasons of the strongest decision, joined with `\n`.
    pub reason: Option<String>,
    pub system_messages: Vec<String>,
    /// Every `additionalContext`, `<` and `>` escaped, joined with `\n`.
    pub additional_context: Option<String>,
    /// `hookSpecificOutput.tool_input`: replaces a tool call's arguments.
    pub tool_input: Option<Value>,
    /// `hookSpecificOutput.llm_response` (BeforeModel: a synthetic reply; AfterModel:
    /// the replacement of the response).
    pub llm_response: Option<Value>,
    /// `hookSpecificOutput.llm_request` (BeforeModel: the modified request).
    pub llm_request: Option<Value>,
    /// `hookSpecificOutput.toolConfig` (BeforeToolSelection).
    pub tool_config: Option<Value>,
    pub clear_context: bool,
    /// Hooks that failed (crashed, timed out, non-zero exit), by name.
    pub failed: Vec<String>,
}

impl HookVerdict {
    pub fn denied(&self) -> bool {
        self.decision == Decision::Deny
    }

    /// The reason to show for a deny or stop.
    pub fn reason_text(&self) -> String {
        self.reason.clone().unwrap_or_default()
    }
}

/// A cheap handle on the session's hooks; does nothing when none are configured.
#[derive(Clone, Default)]
pub struct HookClient {
    addr: Option<HookRecipients>,
}

impl HookClient {
    /// No hooks: every call answers "allow" at once.
    pub fn none() -> Self {
        Self { addr: None }
    }

    pub fn addr(&self) -> Option<&HookRecipients> {
        self.addr.as_ref()
    }

    pub fn is_active(&self) -> bool {
        self.addr.is_some()
    }

    /// Runs the hooks of `event` matching `target` with `fields` added to the common
    /// input; the merged answer (allow when nothing ran).
    pub async fn fire(
        &self,
        event: HookEvent,
        target: Option<String>,
        fields: Value,
        cancel: CancellationToken,
    ) -> HookVerdict {
        let Some(addr) = &self.addr else {
            return HookVerdict::default();
        };
        addr.run
            .send(RunHooks {
                event,
                target,
                fields,
                cancel,
            })
            .await
            .unwrap_or_default()
    }
}

impl HookClient {
    /// The session's hooks (`/hooks`); none when no hook is configured.
    pub async fn list(&self) -> Vec<HookInfo> {
        match &self.addr {
            Some(addr) => addr.list.send(ListHooks).await.unwrap_or_default(),
            None => Vec::new(),
        }
    }

    /// Enables or disables hook `name` (every hook when `None`); how many changed.
    pub async fn set_enabled(&self, name: Option<String>, enabled: bool) -> usize {
        match &self.addr {
            Some(addr) => addr
                .set_enabled
                .send(SetHookEnabled { name, enabled })
                .await
                .unwrap_or_default(),
            None => 0,
        }
    }
}

/// The Hooks actor's mailboxes, as recipients of the protocol's hook messages.
#[derive(Clone)]
pub struct HookRecipients {
    pub run: Recipient<RunHooks>,
    pub list: Recipient<ListHooks>,
    pub set_enabled: Recipient<SetHookEnabled>,
}

impl HookClient {
    /// A client of the Hooks actor behind `recipients`.
    pub fn new(recipients: HookRecipients) -> Self {
        Self {
            addr: Some(recipients),
        }
    }
}
