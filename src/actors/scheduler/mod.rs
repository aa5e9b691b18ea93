//! The Scheduler actor: takes a model turn's function calls and takes each through
//! validating → awaiting_approval → scheduled → executing → success | error |
//! cancelled. Calls that are allowed start at once; calls that touch a path another
//! call of the batch writes wait for it (call order); answers come back in call order,
//! one per call, whatever happened.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use tokio_util::sync::CancellationToken;

use crate::engine::responses::error_parts;
use crate::protocol::content::{CallArgs, FunctionCall};
use crate::protocol::EventSink;
use crate::protocol::{
    AllowRule, CallEvents, CallStatus, CallTimeline, CompletedCall, GetPolicy, RevokeAllowRule,
    Schedule, SetPolicyMode, ToolError, ToolErrorKind, UiEvent,
};
use crate::tools::registry::{Invocation, ToolHandle};
use crate::tools::{Services, ToolRegistry};

mod approval;
mod budget;
mod conflicts;
mod delivery;
mod events;
mod hooks;
mod mode;
mod policy_files;
mod run;

use approval::Approval;
pub use approval::{PolicyCell, PolicyGuard, PolicyState, SharedPolicy};
use conflicts::{ConflictTracker, Grouping};
use events::EventQueue;
use run::{Approved, Execution};

/// The Scheduler actor.
pub struct Scheduler {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Arc<ToolRegistry>,
    services: Arc<Services>,
    approver: crate::actors::approvals::Approvals,
    events: Arc<EventQueue>,
    policy: SharedPolicy,
    /// At most this many calls of a batch run at once; the rest wait their turn, in order.
    window: usize,
    /// A subagent's Scheduler runs only the tools its agent is given (the registry is
    /// the tree's); `None`: a main session, which runs every tool but those offered to
    /// subagents only.
    allowed: Option<Arc<crate::tools::invoke_agent::ToolFilter>>,
    /// The subagent whose calls this Scheduler runs (policy rules' `subagent`);
    /// `None` for a main session.
    agent: Option<String>,
}

impl Scheduler {
    pub fn new(
        registry: Arc<ToolRegistry>,
        services: Arc<Services>,
        approver: crate::actors::approvals::Approvals,
        events: EventSink,
        policy: SharedPolicy,
    ) -> Self {
        let window = services.settings.tools.max_in_flight.max(1);
        Self {
            inner: Arc::new(Inner {
                registry,
                services,
                approver,
                events: EventQueue::new(events),
                policy,
                window,
                allowed: None,
                agent: None,
            }),
        }
    }

    /// A subagent's Scheduler: only the tools named in `allowed` run; any other call
    /// is answered as a tool that does not exist.
    pub fn limited_to(mut self, allowed: Arc<crate::tools::invoke_agent::ToolFilter>) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.allowed = Some(allowed);
        }
        self
    }

    /// The Scheduler of the subagent `name`: policy rules with `subagent = name` apply
    /// to its calls.
    pub fn for_agent(mut self, name: &str) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.agent = Some(name.to_string());
        }
        self
    }
}

impl Actor for Scheduler {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(1024);
    }
}

impl Handler<CallEvents> for Scheduler {
    type Result = ();

    fn handle(&mut self, msg: CallEvents, _: &mut Self::Context) {
        self.inner.events.set_call_progress(msg.call_progress);
    }
}

impl Handler<SetPolicyMode> for Scheduler {
    type Result = ();

    fn handle(&mut self, msg: SetPolicyMode, _: &mut Self::Context) {
        self.inner.policy.set_mode(msg.0);
    }
}

impl Handler<GetPolicy> for Scheduler {
    type Result = MessageResult<GetPolicy>;

    fn handle(&mut self, _: GetPolicy, _: &mut Self::Context) -> Self::Result {
        MessageResult(self.inner.policy.snapshot())
    }
}

impl Handler<RevokeAllowRule> for Scheduler {
    type Result = Option<AllowRule>;

    fn handle(&mut self, msg: RevokeAllowRule, _: &mut Self::Context) -> Self::Result {
        let mut state = self.inner.policy.lock();
        let n = msg.0;
        (n >= 1 && n <= state.rules.len()).then(|| state.rules.remove(n - 1))
    }
}

impl Handler<Schedule> for Scheduler {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, msg: Schedule, _: &mut Self::Context) -> Self::Result {
        let inner = self.inner.clone();
        Box::pin(async move { inner.run_batch(msg).await })
    }
}

enum Slot {
    Done(Arc<CompletedCall>),
    /// The call's task is detached, so its memory goes as soon as it finishes (a
    /// `JoinHandle` would keep every finished task's cell until the batch ends); the
    /// answer, or the panic that ended the task, comes back on the channel.
    Running(
        tokio::sync::oneshot::Receiver<Result<Arc<CompletedCall>, String>>,
        RunningCall,
    ),
}

/// What the slot of a running call keeps to answer it if its task dies: the call as
/// the model made it and the arguments it runs with (both shared, so a slot waiting
/// its turn holds two pointers, not a copy of the call's names and timeline).
struct RunningCall {
    call: Arc<FunctionCall>,
    args: CallArgs,
}

impl RunningCall {
    fn info(self) -> CallInfo {
        CallInfo {
            id: self.call.id.clone().unwrap_or_default(),
            name: self.call.name.clone(),
            args: self.args,
            timeline: CallTimeline::default(),
            hook_modified: false,
            modified_args: None,
        }
    }
}

/// The dispatched calls' slots, in call order, on their way to delivery.
struct SlotSink {
    sink: tokio::sync::mpsc::UnboundedSender<Slot>,
    /// Slots sent so far (the index of the next call).
    len: usize,
    /// Counts the calls answered (a slot that comes answered is one).
    outstanding: Arc<delivery::Outstanding>,
}

impl SlotSink {
    fn push(&mut self, slot: Slot) {
        self.len += 1;
        if matches!(slot, Slot::Done(_)) {
            self.outstanding.answered_one();
        }
        // Delivery runs as long as the batch; if it is gone, so is the batch.
        let _ = self.sink.send(slot);
    }
}

/// One call as the Scheduler tracks it; the arguments are shared, never copied.
struct CallInfo {
    id: String,
    name: String,
    args: CallArgs,
    timeline: CallTimeline,
    /// A BeforeTool hook replaced the arguments.
    hook_modified: bool,
    /// The arguments as the user modified them while approving (what runs).
    modified_args: Option<serde_json::Value>,
}

impl Inner {
    fn emit(&self, event: UiEvent) {
        self.events.push(event);
    }

    /// Tells the front ends the call moved on (only for states they show: approval
    /// and execution; the others are kept in the call's timeline).
    fn status(&self, call: &CallInfo, status: CallStatus) {
        if !self.events.call_progress() {
            return;
        }
        self.emit(UiEvent::ToolCallStatus {
            call_id: call.id.clone(),
            name: call.name.clone(),
            status,
        });
    }

    fn finish(&self, mut completed: CompletedCall) -> Arc<CompletedCall> {
        completed.timeline.done = Some(Instant::now());
        let completed = Arc::new(completed);
        self.emit(UiEvent::ToolCallCompleted(completed.clone()));
        completed
    }

    fn failed(&self, call: &CallInfo, kind: ToolErrorKind, message: String) -> Arc<CompletedCall> {
        self.finish(CompletedCall {
            call_id: call.id.clone(),
            name: call.name.clone(),
            args: call.args.clone(),
            status: CallStatus::Error,
            response_parts: error_parts(&call.name, &call.id, &message),
            display: message.clone(),
            error: Some(ToolError { message, kind }),
            duration: Duration::ZERO,
            data: None,
            timeline: call.timeline.clone(),
        })
    }

    fn cancelled(&self, call: &CallInfo, reason: &str) -> Arc<CompletedCall> {
        let message = format!("[Operation Cancelled] Reason: {reason}");
        self.finish(CompletedCall {
            call_id: call.id.clone(),
            name: call.name.clone(),
            args: call.args.clone(),
            status: CallStatus::Cancelled,
            response_parts: error_parts(&call.name, &call.id, &message),
            display: reason.to_string(),
            error: Some(ToolError {
                message,
                kind: ToolErrorKind::Cancelled,
            }),
            duration: Duration::ZERO,
            data: None,
            timeline: call.timeline.clone(),
        })
    }

    /// Runs a batch: the calls are dispatched in order while, at the same time, the
    /// finished ones are handed on in call order. A finished call waits only for the
    /// calls before it, not for the whole batch, so the Chat can move its answer into
    /// the history (and drop the rest of it) while later calls still run.
    async fn run_batch(self: Arc<Self>, batch: Schedule) {
        let Schedule {
            calls,
            cancel,
            answers,
            ..
        } = batch;
        let (slots, settled) = tokio::sync::mpsc::unbounded_channel();
        let outstanding = delivery::Outstanding::new(calls.len());
        let deliver = self.deliver(settled, &answers, &outstanding, calls.len());
        let dispatch = self
            .clone()
            .dispatch(calls, cancel, slots, outstanding.clone());
        futures::join!(dispatch, deliver);
        // Every event of the batch reaches the front end before the Chat hears that
        // the batch is over (`answers` closes when this returns).
        self.events.flush_batch_end();
        drop(answers);
    }

    /// Takes each call of the batch through validation, hooks and approval, in call
    /// order, and starts it (at most `window` at once); every call's slot goes to
    /// `slots`, in call order.
    async fn dispatch(
        self: Arc<Self>,
        calls: Vec<Arc<FunctionCall>>,
        cancel: CancellationToken,
        slots: tokio::sync::mpsc::UnboundedSender<Slot>,
        outstanding: Arc<delivery::Outstanding>,
    ) {
        let mut batch = BatchDispatch {
            slots: SlotSink {
                sink: slots,
                len: 0,
                outstanding,
            },
            conflicts: ConflictTracker::default(),
            window: Arc::new(tokio::sync::Semaphore::new(self.window)),
            started: 0,
        };
        let mut stop_reason: Option<&'static str> = None;
        for model_call in calls {
            let mut call = self.requested(&model_call);
            if let Some(reason) = stop_reason {
                batch.slots.push(Slot::Done(self.cancelled(&call, reason)));
                continue;
            }
            if cancel.is_cancelled() {
                batch
                    .slots
                    .push(Slot::Done(self.cancelled(&call, "Operation cancelled")));
                continue;
            }
            let (tool, invocation) = match self.validate(&call) {
                Ok(validated) => validated,
                Err(completed) => {
                    batch.slots.push(Slot::Done(completed));
                    continue;
                }
            };
            let (invocation, force_ask) = match self
                .before_tool(&tool, invocation, &mut call, &cancel)
                .await
            {
                hooks::BeforeTool::Run {
                    invocation,
                    force_ask,
                } => (invocation, force_ask),
                hooks::BeforeTool::Done(completed) => {
                    batch.slots.push(Slot::Done(completed));
                    if cancel.is_cancelled() {
                        stop_reason = Some("Agent execution stopped by hook");
                    }
                    continue;
                }
            };
            match self
                .approve(&tool, invocation, &mut call, &cancel, force_ask)
                .await
            {
                Approval::Run(invocation, original_hash, prepared, sandbox) => {
                    let approved = Approved {
                        invocation,
                        original_hash,
                        prepared,
                        sandbox,
                        answer: None,
                    };
                    self.start(&mut batch, call, model_call, tool, approved, &cancel)
                        .await;
                }
                Approval::Answered(invocation, answer, prepared) => {
                    let approved = Approved {
                        invocation,
                        original_hash: None,
                        prepared,
                        sandbox: None,
                        answer: Some(answer),
                    };
                    self.start(&mut batch, call, model_call, tool, approved, &cancel)
                        .await;
                }
                Approval::Refused(completed) => batch.slots.push(Slot::Done(completed)),
                Approval::UserCancelled(completed) => {
                    batch.slots.push(Slot::Done(completed));
                    stop_reason = Some("User cancelled operation");
                }
            }
        }
        self.events.flush();
    }

    /// The call as the Scheduler tracks it, validating from now on; the front ends
    /// hear it was requested.
    fn requested(&self, model_call: &Arc<FunctionCall>) -> CallInfo {
        let call = CallInfo {
            id: model_call.id.clone().unwrap_or_default(),
            name: model_call.name.clone(),
            args: CallArgs::of(model_call.clone()),
            timeline: CallTimeline {
                validating: Some(Instant::now()),
                ..CallTimeline::default()
            },
            hook_modified: false,
            modified_args: None,
        };
        if self.events.call_progress() {
            self.emit(UiEvent::ToolCallRequested {
                call_id: call.id.clone(),
                name: call.name.clone(),
                args: call.args.clone(),
            });
            // Sent now, not at the next yield: the front end announces the call
            // before the call's own work (an edit's confirmation reads the file, in
            // an ACP session through the editor) can reach the client.
            self.events.flush();
        }
        call
    }

    /// Validation: the call's tool and what it would run, or the call's answer when
    /// the tool is unknown, the arguments are invalid or the tool panicked on them.
    fn validate(&self, call: &CallInfo) -> Result<Validated, Arc<CompletedCall>> {
        let offered = match &self.allowed {
            Some(allowed) => allowed.allows(&call.name),
            None => !self.registry.facts().get(&call.name).subagents_only,
        };
        let Some(tool) = self.registry.get(&call.name).filter(|_| offered) else {
            let msg = match (offered, &self.allowed) {
                (true, _) => self.registry.not_found_message(&call.name),
                // gemini-cli's words for a subagent's call of a tool it was not given.
                (false, Some(_)) => format!(
                    "Unauthorized tool call: '{}' is not available to this agent.",
                    call.name
                ),
                (false, None) => format!("Tool \"{}\" not found.", call.name),
            };
            return Err(self.failed(call, ToolErrorKind::ToolNotRegistered, msg));
        };
        // A panic while validating fails this call only.
        let prepared = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            tool.prepare(&call.args, &self.services)
        }));
        match prepared {
            Ok(Ok(invocation)) => Ok((tool, invocation)),
            Err(payload) => Err(self.failed(
                call,
                ToolErrorKind::UnhandledException,
                format!(
                    "Internal error while validating the call: the tool panicked ({})",
                    panic_text(payload.as_ref())
                ),
            )),
            Ok(Err(msg)) => Err(self.failed(call, ToolErrorKind::InvalidToolParams, msg)),
        }
    }

    /// Starts an approved call: registers what it touches, waits for room in the
    /// window, and spawns its task; its slot goes to the batch's slots.
    async fn start(
        self: &Arc<Self>,
        batch: &mut BatchDispatch,
        mut call: CallInfo,
        model_call: Arc<FunctionCall>,
        tool: Arc<dyn ToolHandle>,
        approved: Approved,
        cancel: &CancellationToken,
    ) {
        let touched = approved.invocation.touched();
        let (tx, deps) = batch.conflicts.add(
            batch.slots.len,
            &touched.reads,
            &touched.writes,
            Grouping::of(tool.as_ref(), &call.args),
        );
        // The window: a call starts only when one of the calls in flight
        // has finished (closed only if the batch is dropped).
        let Ok(permit) = batch.window.clone().acquire_owned().await else {
            batch
                .slots
                .push(Slot::Done(self.cancelled(&call, "Operation cancelled")));
            return;
        };
        call.timeline.scheduled = Some(Instant::now());
        let running = RunningCall {
            call: model_call,
            args: call.args.clone(),
        };
        let run = self.clone().execute(Box::new(Execution {
            call,
            tool,
            approved,
            deps,
            cancel: cancel.clone(),
            done: tx,
        }));
        let (answer, answered) = tokio::sync::oneshot::channel();
        // A combinator, not an `async` block around `run`: a block would
        // keep the captured future and the future it awaits, two copies
        // of the call's state for as long as it is in flight.
        let task = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(run));
        let outstanding = batch.slots.outstanding.clone();
        actix::spawn(futures::FutureExt::map(task, move |completed| {
            drop(permit);
            let _ = answer.send(completed.map_err(|p| panic_text(p.as_ref())));
            outstanding.answered_one();
        }));
        batch.slots.push(Slot::Running(answered, running));
        batch.started += 1;
        // Tool actors may share this thread (tools.tool_threads = 0): every
        // few calls, let them start the calls already sent, so a large batch
        // runs while it is dispatched instead of queueing whole first.
        if batch.started.is_multiple_of(DISPATCH_BURST) {
            tokio::task::yield_now().await;
        }
    }
}

/// A validated call: its tool and what it runs.
type Validated = (Arc<dyn ToolHandle>, Box<dyn Invocation>);

/// What dispatching a batch keeps from one call to the next.
struct BatchDispatch {
    slots: SlotSink,
    conflicts: ConflictTracker,
    /// The permits of the calls in flight (at most `window`).
    window: Arc<tokio::sync::Semaphore>,
    /// Calls started so far.
    started: usize,
}

/// Calls the dispatcher starts before it yields to the tasks of its thread.
const DISPATCH_BURST: usize = 16;

pub(crate) use crate::engine::text::panic_text;
