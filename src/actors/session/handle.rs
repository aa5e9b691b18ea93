//! [`SessionHandle`]: the one way to drive a session. Ops go in ([`SessionHandle::submit`],
//! or [`SessionHandle::request`] for an op whose answer the caller awaits), events come
//! out ([`SessionHandle::next_event`]). Front ends, the bench and (later) a parent
//! agent hold a handle and nothing else of the session.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use actix::prelude::*;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::{oneshot, Mutex};
use tokio_util::sync::CancellationToken;

use super::build::Outlets;
use super::{Session, SessionError, SessionOptions, TrajectoryFile};
use crate::actors::approvals::Approvals;
use crate::platform::filesystem::FsClient;
use crate::platform::workspace::Workspace;
use crate::protocol::{
    ApprovalMode, CompressHistory, Event, EventSink, GetHistory, GetPolicy, Memory, Op, OpError,
    OpId, OpReply, PolicySnapshot, RevokeAllowRule, SeedHistory, SetHistory, SetModelName,
    SetPolicyMode, ToolSummary, UserInput, UserParts,
};
use crate::settings::Settings;

/// The op id of the marker that ends a session's event stream (never an op's: ids
/// start at 1); [`SessionHandle::next_event`] answers `None` for it.
const END_MARKER: OpId = OpId(0);

/// What an op answers: a result, or why it was not taken.
pub type OpResult = Result<OpReply, OpError>;

/// A running session, driven by ops and watched through its events.
///
/// Cheap to share (`Arc<SessionHandle>`): ops may be submitted from any thread, the
/// events are read by one reader at a time. Async ops run on the actix arbiter the
/// session was started on, so that arbiter must not be blocked waiting for them
/// ([`SessionHandle::request_blocking`] is for threads outside it, such as the REPL's
/// line editor).
pub struct SessionHandle {
    session: Arc<Session>,
    events: Mutex<UnboundedReceiver<Event>>,
    sink: EventSink,
    next_op: AtomicU64,
    /// The arbiter the session was started on, where async ops run.
    home: ArbiterHandle,
    /// Cancelled once the session has ended.
    ended: CancellationToken,
    /// The end marker has been read: the event stream is over.
    stream_over: AtomicBool,
    /// `--trajectory FILE`: the run kept as an ATIF trajectory.
    trajectory: OnceLock<TrajectoryFile>,
    /// How far the reader of the events has handled them.
    count: super::event_order::EventCount,
}

/// Where an op's answer goes.
enum Answer {
    /// On the event stream, as [`Event::OpDone`].
    Stream(OpId, EventSink),
    /// To the caller of [`SessionHandle::request`].
    Caller(oneshot::Sender<OpResult>),
}

impl Answer {
    fn send(self, result: OpResult) {
        match self {
            Answer::Stream(op, sink) => sink.send_event(Event::OpDone { op, result }),
            Answer::Caller(tx) => {
                let _ = tx.send(result);
            }
        }
    }
}

impl SessionHandle {
    /// Starts a session (every actor, MCP discovery when asked, SessionStart) and
    /// returns its handle. Must run inside an actix `System`; the session's async ops
    /// run on the current arbiter. Its first event is `UiEvent::SessionStarted`.
    pub async fn start(options: SessionOptions) -> Result<SessionHandle, SessionError> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let sink = EventSink::new(tx);
        let outlets = Outlets {
            events: sink.clone(),
            approvals: Approvals::new(sink.clone()),
        };
        let trajectory = options.trajectory.clone();
        let session = Session::start(options, outlets).await?;
        let handle = SessionHandle::from_parts(session, sink, rx);
        if let Some(path) = trajectory {
            handle.record_trajectory(&path);
        }
        Ok(handle)
    }

    /// The handle of a started session whose events go to `sink` and come out of
    /// `events`; its async ops run on the current arbiter.
    pub(super) fn from_parts(
        session: Session,
        sink: EventSink,
        events: UnboundedReceiver<Event>,
    ) -> SessionHandle {
        SessionHandle {
            session: Arc::new(session),
            events: Mutex::new(events),
            sink,
            next_op: AtomicU64::new(1),
            home: Arbiter::current(),
            ended: CancellationToken::new(),
            stream_over: AtomicBool::new(false),
            trajectory: OnceLock::new(),
            count: super::event_order::EventCount::new(),
        }
    }

    /// Submits `op`; its answer comes on the event stream as [`Event::OpDone`] with
    /// the id returned. Ops are taken in the order they are submitted.
    pub fn submit(&self, op: Op) -> OpId {
        let id = OpId(self.next_op.fetch_add(1, Ordering::Relaxed));
        self.serve(op, Answer::Stream(id, self.sink.clone()));
        id
    }

    /// Submits `op` and waits for its answer, which does not go on the event stream.
    pub async fn request(&self, op: Op) -> OpResult {
        let name = op.name();
        let (tx, rx) = oneshot::channel();
        self.serve(op, Answer::Caller(tx));
        rx.await.unwrap_or(Err(OpError::Ended { op: name }))
    }

    /// [`SessionHandle::request`] for a thread outside the session's runtime (the
    /// REPL's line editor): blocks this thread, never an arbiter. Must not be called
    /// on the arbiter the session was started on.
    pub fn request_blocking(&self, op: Op) -> OpResult {
        let name = op.name();
        let (tx, rx) = oneshot::channel();
        self.serve(op, Answer::Caller(tx));
        rx.blocking_recv()
            .unwrap_or(Err(OpError::Ended { op: name }))
    }

    /// The next event; `None` once the session has ended and every event before its
    /// end was read.
    pub async fn next_event(&self) -> Option<Event> {
        let mut events = self.events.lock().await;
        if self.stream_over.load(Ordering::Acquire) {
            return None;
        }
        self.count.asking();
        // One wait on the channel alone: the session's end comes as a marker on it,
        // after every event sent before the end.
        match events.recv().await {
            Some(Event::OpDone { op: END_MARKER, .. }) | None => {
                self.stream_over.store(true, Ordering::Release);
                self.count.over();
                None
            }
            Some(event) => {
                self.count.took();
                if let Some(trajectory) = self.trajectory.get() {
                    if trajectory.observe(&event) {
                        // Written before the turn's end is handed out: whoever sees
                        // the end can read the turn in the file.
                        let _ = trajectory.write().await;
                    }
                }
                Some(event)
            }
        }
    }

    /// A waiter on the reader of [`SessionHandle::next_event`]: it returns once every
    /// event sent before it was called has been handled.
    pub fn handled_events(&self) -> super::event_order::HandledEvents {
        self.count.waiter(&self.sink)
    }

    /// Keeps the run as an ATIF trajectory in `path` from now on (call it before the
    /// first prompt; a second call is ignored): the file is rewritten whenever a turn
    /// ends, with every event read through [`SessionHandle::next_event`].
    pub fn record_trajectory(&self, path: &std::path::Path) {
        let _ = self.trajectory.set(TrajectoryFile::new(path));
    }

    /// The trajectory being kept, if one is ([`SessionHandle::record_trajectory`]).
    pub fn trajectory(&self) -> Option<&TrajectoryFile> {
        self.trajectory.get()
    }

    /// Ends the session (see [`Op::Shutdown`]) and waits until it has ended.
    pub async fn shutdown(&self, reason: crate::protocol::EndReason) {
        let _ = self
            .request(Op::Shutdown {
                reason,
                after: crate::protocol::ProcessAfter::GoesOn,
            })
            .await;
    }

    /// [`SessionHandle::shutdown`] for a caller whose process exits right after (a
    /// `-p` run): the session's idle threads are left to the exit.
    pub async fn shutdown_before_exit(&self, reason: crate::protocol::EndReason) {
        let _ = self
            .request(Op::Shutdown {
                reason,
                after: crate::protocol::ProcessAfter::Exits,
            })
            .await;
    }

    /// The session's id (its file's name, `--resume`'s argument).
    pub fn session_id(&self) -> &str {
        &self.session.session_id
    }

    /// The approval policy as it stands now.
    pub fn policy(&self) -> PolicySnapshot {
        self.session.published_policy.borrow().clone()
    }

    /// The approval mode as it stands now.
    pub fn approval_mode(&self) -> ApprovalMode {
        self.session.published_policy.borrow().mode
    }

    /// The session's settings.
    pub fn settings(&self) -> &Arc<Settings> {
        &self.session.services.settings
    }

    /// The session's workspace and its roots.
    pub fn workspace(&self) -> &Arc<Workspace> {
        &self.session.services.workspace
    }

    /// The session's confined file access (for a front end's `@` references).
    pub fn files(&self) -> &FsClient {
        &self.session.services.fs
    }

    /// The services the session's tools share, for work a front end does on the
    /// session's behalf (custom commands, `@` references, a `!` line).
    pub fn services(&self) -> &Arc<crate::tools::Services> {
        &self.session.services
    }

    /// The session's MCP servers; `None` when none is configured.
    pub fn mcp(&self) -> Option<&Arc<crate::mcp::McpHub>> {
        self.session.mcp.as_ref()
    }

    /// The tools offered to the model now, as a front end lists them.
    pub fn tools(&self) -> Vec<ToolSummary> {
        self.session
            .registry
            .tools()
            .iter()
            .map(|tool| ToolSummary {
                name: tool.name().to_string(),
                kind: format!("{:?}", tool.kind()).to_lowercase(),
                description: tool.description(),
            })
            .collect()
    }

    /// The facts of the session's tools (how a front end labels and treats their
    /// calls: ACP's kind of each).
    pub fn tool_facts(&self) -> Arc<crate::protocol::ToolFactsTable> {
        self.session.tool_facts()
    }

    // ---- REPL
    /// Whether the session still takes turns: false once its Chat actor has stopped
    /// (torn down by a panic), or the session has ended.
    pub fn is_running(&self) -> bool {
        self.session.chat.connected() && !self.ended.is_cancelled()
    }

    /// Takes `op`, answering it on `answer` (at once, or when its async part is done).
    /// Messages to an actor are queued here, in submission order; only the wait for
    /// their answers runs later.
    fn serve(&self, op: Op, answer: Answer) {
        let session = &self.session;
        let name = op.name();
        fn done(_: ()) -> OpResult {
            Ok(OpReply::Done)
        }
        match op {
            Op::UserTurn { text, parts } if parts.is_empty() => {
                self.ask(&session.chat, UserInput { text }, answer, name, |r| {
                    r.and_then(done)
                })
            }
            Op::UserTurn { text, parts } => self.ask(
                &session.chat,
                UserParts { text, parts },
                answer,
                name,
                |r| r.and_then(done),
            ),
            Op::Cancel => {
                session.chat.do_send(crate::protocol::CancelTurn);
                answer.send(Ok(OpReply::Done));
            }
            Op::Decide { id, decision } => {
                answer.send(session.approvals.decide(id, decision).and_then(done));
            }
            Op::SetApprovalMode(mode) => {
                self.ask(&session.scheduler, SetPolicyMode(mode), answer, name, done)
            }
            Op::GetPolicy => self.ask(&session.scheduler, GetPolicy, answer, name, |p| {
                Ok(OpReply::Policy(p))
            }),
            Op::RevokeRule(n) => self.ask(
                &session.scheduler,
                RevokeAllowRule(n),
                answer,
                name,
                move |r| r.map(OpReply::Rule).ok_or(OpError::NoSuchRule(n)),
            ),
            Op::AddWorkspaceRoot { path } => {
                let fs = session.services.fs.clone();
                self.finish(answer, async move {
                    Ok(OpReply::Root(fs.add_root(path).await?))
                });
            }
            Op::SetModel(model) => {
                session.chat.do_send(SetModelName(model));
                answer.send(Ok(OpReply::Done));
            }
            Op::SetMaxTurns(limit) => {
                session
                    .chat
                    .do_send(crate::protocol::SetMaxTurns(limit.max(1)));
                answer.send(Ok(OpReply::Done));
            }
            Op::Compress { force } => self.ask(
                &session.chat,
                CompressHistory { force },
                answer,
                name,
                |c| Ok(OpReply::Compression(c)),
            ),
            Op::Memory { refresh } => {
                self.ask(&session.chat, Memory { refresh }, answer, name, |m| {
                    Ok(OpReply::Memory(m))
                })
            }
            Op::GetHistory => self.ask(&session.chat, GetHistory, answer, name, |h| {
                Ok(OpReply::History(h))
            }),
            Op::SetHistory(history) => {
                // An empty history (`/clear`) starts the conversation over.
                let restarted = history.is_empty().then(|| session.registry.clone());
                self.ask(&session.chat, SetHistory(history), answer, name, move |r| {
                    let reply = r.and_then(done);
                    if let (Ok(_), Some(registry)) = (&reply, restarted) {
                        registry.conversation_restarted();
                    }
                    reply
                })
            }
            Op::SeedHistory(history) => {
                self.ask(&session.chat, SeedHistory(history), answer, name, |r| {
                    r.and_then(done)
                })
            }
            op @ (Op::ListTools
            | Op::ListHooks
            | Op::SetHookEnabled { .. }
            | Op::ListToolDeclarations) => self.serve_listing(op, answer),
            Op::RunCalls { calls, cancel } => self.run_calls(calls, cancel, answer),
            Op::ListAgents => {
                let rows = session
                    .agents
                    .as_ref()
                    .map(|t| t.rows())
                    .unwrap_or_default();
                answer.send(Ok(OpReply::Agents(rows)));
            }
            Op::CancelAgent(n) => {
                let stopped = session.agents.as_ref().is_some_and(|t| t.cancel(n));
                answer.send(match stopped {
                    true => Ok(OpReply::Done),
                    false => Err(OpError::NoSuchAgent(n)),
                });
            }
            op @ Op::SwitchSession { .. } => self.switch_session(op, answer), // ---- REPL
            Op::Shutdown { reason, after } => {
                let (session, ended) = (self.session.clone(), self.ended.clone());
                let sink = self.sink.clone();
                self.home.spawn(async move {
                    session.end(reason, after).await;
                    answer.send(Ok(OpReply::Done));
                    ended.cancel();
                    sink.send_event(Event::OpDone {
                        op: END_MARKER,
                        result: Ok(OpReply::Done),
                    });
                });
            }
        }
    }

    /// The ops that list what the session has (tools, declarations, hooks) or switch
    /// a hook.
    fn serve_listing(&self, op: Op, answer: Answer) {
        let session = &self.session;
        match op {
            Op::ListTools => answer.send(Ok(OpReply::Tools(self.tools()))),
            Op::ListHooks => {
                let hooks = session.hooks.clone();
                self.finish(
                    answer,
                    async move { Ok(OpReply::Hooks(hooks.list().await)) },
                );
            }
            Op::SetHookEnabled { name, enabled } => {
                let hooks = session.hooks.clone();
                self.finish(answer, async move {
                    Ok(OpReply::Count(hooks.set_enabled(name, enabled).await))
                });
            }
            // ---- mcp serve
            Op::ListToolDeclarations => {
                let declarations = self.session.registry.tools().iter();
                let declarations = declarations.map(|t| (t.declaration(), t.kind())).collect();
                answer.send(Ok(OpReply::Declarations(declarations)));
            }
            // Never: serve() sends only the ops above here.
            other => answer.send(Err(OpError::Ended { op: other.name() })),
        }
    }

    /// Sends `msg` to `actor` now and answers with `reply` of its answer once it comes
    /// (an actor gone answers [`OpError::Ended`]).
    fn ask<A, M>(
        &self,
        actor: &Addr<A>,
        msg: M,
        answer: Answer,
        op: &'static str,
        reply: impl FnOnce(M::Result) -> OpResult + Send + 'static,
    ) where
        A: Handler<M>,
        A::Context: actix::dev::ToEnvelope<A, M>,
        M: actix::Message + Send + 'static,
        M::Result: Send,
    {
        let asked = actor.send(msg);
        self.finish(answer, async move {
            asked
                .await
                .map_err(|_| OpError::Ended { op })
                .and_then(reply)
        });
    }

    /// Runs `calls` as one batch of the Scheduler outside a model turn and answers
    /// every call's result, in call order.
    fn run_calls(
        &self,
        calls: Vec<Arc<crate::protocol::content::FunctionCall>>,
        cancel: CancellationToken,
        answer: Answer,
    ) {
        let (answers, mut answered) = tokio::sync::mpsc::unbounded_channel();
        let count = calls.len();
        let batch = crate::protocol::Schedule {
            turn: 0,
            calls,
            cancel,
            answers,
        };
        let asked = self.session.scheduler.send(batch);
        self.finish(answer, async move {
            asked
                .await
                .map_err(|_| OpError::Ended { op: "run_calls" })?;
            let mut done = Vec::with_capacity(count);
            while let Some(call) = answered.recv().await {
                done.push(call);
            }
            Ok(OpReply::Calls(done))
        });
    }

    // ---- REPL
    /// Points the recorder at another session file ([`Op::SwitchSession`]).
    fn switch_session(&self, op: Op, answer: Answer) {
        let Op::SwitchSession {
            file,
            session_id,
            existing,
            repairs,
            lock,
        } = op
        else {
            return answer.send(Err(OpError::Unavailable {
                op: "switch_session",
                why: "not a session switch".into(),
            }));
        };
        let Some(recorder) = &self.session.recorder else {
            return answer.send(Err(OpError::Unavailable {
                op: "switch_session",
                why: "sessions are not recorded".into(),
            }));
        };
        // The op shares the lock only to stay `Clone`: a clone of the descriptor holds
        // the same lock.
        let lock = match Arc::try_unwrap(lock).or_else(|shared| shared.try_clone()) {
            Ok(lock) => lock,
            Err(e) => {
                return answer.send(Err(OpError::Unavailable {
                    op: "switch_session",
                    why: format!("cannot hold the session's lock: {e}"),
                }))
            }
        };
        let switch = crate::protocol::SwitchSession {
            file,
            session_id,
            existing,
            repairs,
            lock,
        };
        // Another session's conversation: the topic of this one is over.
        let registry = self.session.registry.clone();
        self.ask(recorder, switch, answer, "switch_session", move |()| {
            registry.conversation_restarted();
            Ok(OpReply::Done)
        });
    }

    /// Answers on `answer` once `work` is done, on the session's arbiter.
    fn finish(
        &self,
        answer: Answer,
        work: impl std::future::Future<Output = OpResult> + Send + 'static,
    ) {
        self.home.spawn(async move { answer.send(work.await) });
    }
}
