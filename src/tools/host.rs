//! `ToolActor<T>`: the generic host that gives every tool its own actor on its own
//! arbiter. It runs each call as a future of its own, so calls of one tool overlap; a
//! panic, a timeout or a cancellation ends that call only, and the actor keeps serving.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use futures::future::BoxFuture;
use futures::FutureExt;

use crate::protocol::ToolOutput;
use crate::tools::invoke::{HostOutcome, Invoke};
use crate::tools::Tool;

/// How long a cancelled call may take to wind down and hand back partial output.
pub const CANCEL_GRACE: Duration = Duration::from_millis(250);

/// Hosts one tool. Stateless apart from the tool itself.
pub struct ToolActor<T: Tool> {
    tool: Arc<T>,
    timeout: Duration,
}

impl<T: Tool> ToolActor<T> {
    pub fn new(tool: Arc<T>, timeout: Duration) -> Self {
        Self { tool, timeout }
    }
}

// Its mailbox needs no capacity: every `Invoke` arrives by `do_send`, which actix
// queues whatever the capacity (only `send` and `try_send` wait on it).
impl<T: Tool> Actor for ToolActor<T> {
    type Context = Context<Self>;
}

impl<T: Tool> Handler<Invoke<T>> for ToolActor<T> {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, msg: Invoke<T>, _: &mut Self::Context) -> Self::Result {
        let tool = self.tool.clone();
        let cancel = msg.ctx.cancel.clone();
        let call_id = msg.ctx.call_id.clone();
        let span = tracing::info_span!("tool_call", tool = tool.name(), call_id = %call_id);
        let timeout = self.timeout;
        let committed = msg.ctx.committed_flag();
        let Invoke { params, ctx, reply } = msg;
        let run = run_guarded(
            move || tool.execute(params, ctx),
            cancel,
            timeout,
            committed,
        )
        .instrument_span(span);
        // A combinator, not an `async` block around `run` (which would keep two
        // copies of its state); a caller that stopped waiting no longer needs the
        // outcome.
        Box::pin(futures::FutureExt::map(run, move |outcome| {
            let _ = reply.send(Box::new(outcome));
        }))
    }
}

trait InstrumentSpan: Sized {
    fn instrument_span(self, span: tracing::Span) -> tracing::instrument::Instrumented<Self>;
}

impl<F: std::future::Future> InstrumentSpan for F {
    fn instrument_span(self, span: tracing::Span) -> tracing::instrument::Instrumented<Self> {
        tracing::Instrument::instrument(self, span)
    }
}

/// Starts the tool's future and waits for it, its cancellation or its timeout,
/// turning a panic (while starting or while running) into [`HostOutcome::Panicked`].
/// A call that has `committed` (its write started) when it is cancelled is waited
/// for and reported as what it did, never as cancelled.
///
/// The tool's future is started here, before the returned future is first polled, so
/// what starting it needs (the parameters) is not kept in the guard while it runs.
pub fn run_guarded(
    start: impl FnOnce() -> BoxFuture<'static, ToolOutput>,
    cancel: tokio_util::sync::CancellationToken,
    timeout: Duration,
    committed: Arc<AtomicBool>,
) -> impl std::future::Future<Output = HostOutcome> {
    let started = std::panic::catch_unwind(AssertUnwindSafe(start));
    guard(started, cancel, timeout, committed)
}

/// Waits for a started tool future, its cancellation or its timeout.
async fn guard(
    started: std::thread::Result<BoxFuture<'static, ToolOutput>>,
    cancel: tokio_util::sync::CancellationToken,
    timeout: Duration,
    committed: Arc<AtomicBool>,
) -> HostOutcome {
    let is_committed = || committed.load(std::sync::atomic::Ordering::SeqCst);
    let future = match started {
        Ok(future) => future,
        Err(payload) => return panicked(payload),
    };
    let mut future = AssertUnwindSafe(future).catch_unwind();
    let outcome = tokio::select! {
        biased;
        result = &mut future => match result {
            // A tool that noticed the cancellation and returned is still cancelled
            // (gemini-cli: signal aborted after the tool returned); its output is kept.
            Ok(output) if cancel.is_cancelled() && !is_committed() => HostOutcome::Cancelled(Some(output)),
            Ok(output) => HostOutcome::Finished(output),
            Err(payload) => panicked(payload),
        },
        // Boxed: only a cancelled call needs the timers of winding down.
        _ = cancel.cancelled() => Box::pin(wind_down(&mut future, timeout, &committed)).await,
        _ = tokio::time::sleep(timeout) => HostOutcome::TimedOut(timeout),
    };
    match &outcome {
        HostOutcome::Panicked(message) => tracing::error!(%message, "tool panicked"),
        HostOutcome::TimedOut(t) => tracing::warn!(secs = t.as_secs(), "tool timed out"),
        _ => {}
    }
    outcome
}

/// A cancelled call: its output if it winds down within [`CANCEL_GRACE`]; a call that
/// has committed (its write started) is waited for, up to `timeout`, and reported as
/// what it did.
async fn wind_down<F>(future: &mut F, timeout: Duration, committed: &AtomicBool) -> HostOutcome
where
    F: std::future::Future<Output = std::thread::Result<ToolOutput>> + Unpin,
{
    let is_committed = || committed.load(std::sync::atomic::Ordering::SeqCst);
    match tokio::time::timeout(CANCEL_GRACE, &mut *future).await {
        Ok(Ok(output)) if is_committed() => HostOutcome::Finished(output),
        Ok(Ok(output)) => HostOutcome::Cancelled(Some(output)),
        Ok(Err(payload)) => panicked(payload),
        // The write started: wait for it (bounded by the call's timeout) and say what
        // it did.
        Err(_) if is_committed() => match tokio::time::timeout(timeout, future).await {
            Ok(Ok(output)) => HostOutcome::Finished(output),
            Ok(Err(payload)) => panicked(payload),
            Err(_) => HostOutcome::TimedOut(timeout),
        },
        Err(_) => HostOutcome::Cancelled(None),
    }
}

fn panicked(payload: Box<dyn std::any::Any + Send>) -> HostOutcome {
    HostOutcome::Panicked(crate::engine::text::panic_text(payload.as_ref()))
}
