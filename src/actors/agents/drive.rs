//! Runs one subagent from its `invoke_agent` call to its report: a slot of the pool,
//! its session, its turn, the limits (`max_turns`, `timeout_mins`, the tree's token
//! budget) each followed by gemini-cli's one grace turn to call `complete_task`, a
//! cancel (`ABORTED`), and the answer to the call in gemini-cli 0.61's words.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::catalog::AgentDef;
use super::launcher::TreeLauncher;
use super::{AgentRow, AgentState, AgentTree};
use crate::actors::session::SessionHandle;
use crate::protocol::{
    AgentStep, AgentTotals, CallStatus, EndReason, Event, Op, ToolErrorKind, ToolOutput,
    TurnOutcome, UiEvent,
};
use crate::tools::complete_task::COMPLETE_TASK;
use crate::tools::ToolContext;

/// gemini-cli's grace period for the last turn.
const GRACE: Duration = Duration::from_secs(60);
/// How often a running subagent's session is checked for having died.
const LIVENESS: Duration = Duration::from_secs(1);

/// Why the main part of a run stopped short of `complete_task`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Limit {
    Timeout,
    MaxTurns,
    NoCompleteTask,
    Budget,
}

impl Limit {
    fn reason(self) -> &'static str {
        match self {
            Limit::Timeout => "TIMEOUT",
            Limit::MaxTurns => "MAX_TURNS",
            Limit::NoCompleteTask => "ERROR_NO_COMPLETE_TASK_CALL",
            Limit::Budget => "ERROR",
        }
    }

    /// The message of the grace turn (gemini-cli's words; the budget is Troupe's).
    fn warning(self, tree: &AgentTree) -> String {
        let explanation = match self {
            Limit::Timeout => "You have exceeded the time limit.".to_string(),
            Limit::MaxTurns => "You have exceeded the maximum number of turns.".to_string(),
            Limit::NoCompleteTask => {
                "You have stopped calling tools without finishing.".to_string()
            }
            Limit::Budget => format!(
                "The agents' token budget (agents.token_budget = {}) is spent.",
                tree.token_budget
            ),
        };
        format!("{explanation} You have one final chance to complete the task with a short grace period. You MUST call `{COMPLETE_TASK}` immediately with your best answer and explain that your investigation was interrupted. Do not call any other tools.")
    }

    /// The result when the grace turn did not end in `complete_task`.
    fn failed_result(self, def: &AgentDef, tree: &AgentTree) -> String {
        match self {
            Limit::Timeout => format!(
                "Agent timed out after {} minutes.",
                minutes(def.timeout)
            ),
            Limit::MaxTurns => format!("Agent reached max turns limit ({}).", def.max_turns),
            Limit::NoCompleteTask => {
                format!("Agent stopped calling tools but did not call '{COMPLETE_TASK}'.")
            }
            Limit::Budget => format!(
                "The agents' token budget (agents.token_budget = {}) was spent before the agent reported.",
                tree.token_budget
            ),
        }
    }
}

fn minutes(d: Duration) -> String {
    let mins = d.as_secs_f64() / 60.0;
    match mins.fract() == 0.0 {
        true => format!("{mins:.0}"),
        false => format!("{mins}"),
    }
}

/// How a run ended: gemini-cli's termination reason and result, or a failure.
enum Ending {
    Finished {
        reason: &'static str,
        result: String,
    },
    Failed(String),
}

/// A subagent entered in the tree for one call, not yet running.
pub(super) struct Admitted {
    row: AgentRow,
    stop: CancellationToken,
}

/// Enters `def` in the tree for the call in `ctx`, at once (calls of one answer are
/// counted in the order they reach their tool), or answers why not
/// (`agents.max_per_turn`).
pub(super) fn admit(
    launcher: &TreeLauncher,
    def: &AgentDef,
    ctx: &ToolContext,
) -> Result<Admitted, Box<ToolOutput>> {
    let tree = &launcher.tree;
    let stop = ctx.cancel.child_token();
    match tree.enter_within(&def.name, &launcher.parent_id, stop.clone()) {
        Some(row) => Ok(Admitted { row, stop }),
        None => {
            let msg = format!("Subagent '{}' was not started: this answer already started {} subagents, the most one answer may start (agents.max_per_turn = {}). Wait for their reports, then start more.", def.name, tree.max_per_turn, tree.max_per_turn);
            Err(Box::new(ToolOutput::error(
                ToolErrorKind::ExecutionFailed,
                msg.clone(),
                msg,
            )))
        }
    }
}

/// Runs the admitted subagent `def` on `prompt`, and answers the call.
pub(super) async fn run(
    launcher: TreeLauncher,
    def: AgentDef,
    admitted: Admitted,
    prompt: String,
    ctx: ToolContext,
) -> ToolOutput {
    let span = tracing::info_span!("agent", agent_id = %admitted.row.agent_id, name = %def.name, parent = %launcher.parent_id, call_id = %ctx.call_id);
    tracing::Instrument::instrument(run_in_span(launcher, def, admitted, prompt, ctx), span).await
}

async fn run_in_span(
    launcher: TreeLauncher,
    def: AgentDef,
    admitted: Admitted,
    prompt: String,
    ctx: ToolContext,
) -> ToolOutput {
    let tree = launcher.tree.clone();
    let Admitted { row, stop } = admitted;
    let started = Instant::now();
    let pool = tree.pool(launcher.depth);
    let permit = match pool.clone().try_acquire_owned() {
        Ok(permit) => Some(permit),
        // Every slot is taken: it waits, and the front end is told which setting.
        Err(_) => {
            let queued = AgentStep::Queued {
                prompt: prompt.clone(),
                running: tree.max_concurrent,
            };
            tree.tell(&row, &ctx.call_id, queued);
            tokio::select! {
                permit = pool.acquire_owned() => permit.ok(),
                _ = stop.cancelled() => None,
            }
        }
    };
    let mut run = ChildRun {
        tree: tree.clone(),
        row: row.clone(),
        call_id: ctx.call_id.clone(),
        totals: AgentTotals::default(),
        output: None,
        usage: None,
    };
    let ending = match permit {
        None => Ending::Finished {
            reason: "ABORTED",
            result: "The subagent was stopped before it started.".into(),
        },
        Some(_permit) => {
            ctx.services.ledger.activate();
            tree.update(row.number, |r| r.state = AgentState::Running);
            tree.tell(&row, &ctx.call_id, AgentStep::Started);
            let spec = launcher.child_spec(&def, &row.agent_id, &ctx.services);
            let handle = SessionHandle::start_child(&launcher.parts, spec);
            let ending = run.drive(&handle, &def, &prompt, &stop).await;
            handle.shutdown(EndReason::Other).await;
            ending
        }
    };
    run.totals.elapsed_ms = started.elapsed().as_millis() as u64;
    let totals = run.totals.clone();
    let reason = match &ending {
        Ending::Finished { reason, .. } => reason.to_string(),
        Ending::Failed(_) => "ERROR".to_string(),
    };
    tree.finished(
        &row,
        &ctx.call_id,
        AgentTotals {
            reason: reason.clone(),
            ..totals.clone()
        },
    );
    answer(&def, &row, &reason, ending, &totals)
}

/// The call's answer: gemini-cli's text, with the run's figures as data.
fn answer(
    def: &AgentDef,
    row: &AgentRow,
    reason: &str,
    ending: Ending,
    totals: &AgentTotals,
) -> ToolOutput {
    let text = match ending {
        Ending::Finished { reason, result } => format!(
            "Subagent '{}' finished.\nTermination Reason: {reason}\nResult:\n{result}",
            def.name
        ),
        Ending::Failed(error) => format!("Subagent '{}' failed. Error: {error}", def.name),
    };
    let display = format!(
        "{} ({}) {reason}: {} turns, {} tool calls, {} tokens",
        row.agent_id, def.name, totals.turns, totals.tool_calls, totals.tokens
    );
    let mut out = ToolOutput::text(text, display);
    out.data = Some(json!({
        "agentId": row.agent_id,
        "agentName": def.name,
        "terminateReason": reason,
        "turns": totals.turns,
        "toolCalls": totals.tool_calls,
        "tokens": totals.tokens,
        "elapsedMs": totals.elapsed_ms,
    }));
    out
}

/// One subagent's run as its driver watches it.
struct ChildRun {
    tree: Arc<AgentTree>,
    row: AgentRow,
    call_id: String,
    totals: AgentTotals,
    /// What its successful `complete_task` submitted.
    output: Option<String>,
    /// The usage of the request in flight, as last reported.
    usage: Option<crate::protocol::content::Usage>,
}

/// What stopped a turn of the child.
enum TurnEnd {
    Outcome(TurnOutcome),
    /// The session died (its Chat is gone) or its stream ended.
    Died,
}

/// Why the driver itself cancelled the child's turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Interrupt {
    Stopped,
    Limit(Limit),
    /// The grace turn asked the model a second time: it did not call complete_task.
    GraceOver,
}

impl ChildRun {
    async fn drive(
        &mut self,
        handle: &SessionHandle,
        def: &AgentDef,
        prompt: &str,
        stop: &CancellationToken,
    ) -> Ending {
        let deadline = tokio::time::Instant::now() + def.timeout;
        let (end, interrupt) = self
            .turn(handle, def.query_for(prompt), deadline, stop, false)
            .await;
        if let Some(output) = self.output.take() {
            return Ending::Finished {
                reason: "GOAL",
                result: output,
            };
        }
        let limit = match (interrupt, end) {
            (Some(Interrupt::Stopped), _) => return aborted(),
            (Some(Interrupt::Limit(limit)), _) => limit,
            (_, TurnEnd::Died) => {
                return Ending::Failed("the subagent's session stopped unexpectedly".into())
            }
            (_, TurnEnd::Outcome(TurnOutcome::MaxTurns { .. })) => Limit::MaxTurns,
            (_, TurnEnd::Outcome(TurnOutcome::Completed { .. })) => Limit::NoCompleteTask,
            (_, TurnEnd::Outcome(TurnOutcome::Cancelled)) => return aborted(),
            (_, TurnEnd::Outcome(TurnOutcome::Failed { message })) => {
                return Ending::Failed(message)
            }
            (_, TurnEnd::Outcome(TurnOutcome::LoopDetected { message })) => {
                return Ending::Failed(message)
            }
        };
        // One grace turn to report.
        let grace_end = tokio::time::Instant::now() + GRACE;
        let (_, interrupt) = self
            .turn(handle, limit.warning(&self.tree), grace_end, stop, true)
            .await;
        if let Some(output) = self.output.take() {
            return Ending::Finished {
                reason: "GOAL",
                result: output,
            };
        }
        if interrupt == Some(Interrupt::Stopped) {
            return aborted();
        }
        Ending::Finished {
            reason: limit.reason(),
            result: limit.failed_result(def, &self.tree),
        }
    }

    /// Runs one turn of the child to its end, forwarding its events; cancels it at
    /// `deadline`, on `stop`, when the tree's budget is spent, or (in the grace turn)
    /// when it asks the model a second time.
    async fn turn(
        &mut self,
        handle: &SessionHandle,
        text: String,
        deadline: tokio::time::Instant,
        stop: &CancellationToken,
        grace: bool,
    ) -> (TurnEnd, Option<Interrupt>) {
        handle.submit(Op::UserTurn {
            text,
            parts: Vec::new(),
        });
        let budget = self.tree.budget_spent.clone();
        let mut interrupt: Option<Interrupt> = None;
        let mut liveness = tokio::time::interval(LIVENESS);
        let sleep = tokio::time::sleep_until(deadline);
        tokio::pin!(sleep);
        loop {
            let cut = |why: Interrupt, interrupt: &mut Option<Interrupt>| {
                if interrupt.is_none() {
                    *interrupt = Some(why);
                    handle.submit(Op::Cancel);
                }
            };
            tokio::select! {
                event = handle.next_event() => match event {
                    None => return (TurnEnd::Died, interrupt),
                    Some(Event::Ui(UiEvent::TurnFinished(outcome))) => {
                        self.fold_usage();
                        return (TurnEnd::Outcome(outcome), interrupt)
                    }
                    Some(Event::Ui(event)) => {
                        if grace && matches!(event, UiEvent::ModelRequest { round } if round > 0) {
                            cut(Interrupt::GraceOver, &mut interrupt);
                        }
                        if self.observe(&event) {
                            cut(Interrupt::Limit(Limit::Budget), &mut interrupt);
                        }
                        self.tree.tell(&self.row, &self.call_id, AgentStep::Event(Box::new(event)));
                    }
                    Some(_) => {}
                },
                _ = &mut sleep, if interrupt.is_none() => {
                    let why = match grace {
                        true => Interrupt::GraceOver,
                        false => Interrupt::Limit(Limit::Timeout),
                    };
                    cut(why, &mut interrupt);
                }
                _ = stop.cancelled(), if interrupt != Some(Interrupt::Stopped) => {
                    interrupt = None;
                    cut(Interrupt::Stopped, &mut interrupt);
                }
                _ = budget.cancelled(), if interrupt.is_none() && !grace => {
                    cut(Interrupt::Limit(Limit::Budget), &mut interrupt);
                }
                _ = liveness.tick() => {
                    if !handle.is_running() {
                        return (TurnEnd::Died, interrupt);
                    }
                }
            }
        }
    }

    /// Notes what the event says of the run; true when it spent the tree's budget.
    fn observe(&mut self, event: &UiEvent) -> bool {
        match event {
            UiEvent::ModelRequest { .. } => {
                let spent = self.fold_usage();
                self.totals.turns += 1;
                let turns = self.totals.turns;
                self.tree.update(self.row.number, |r| r.turns = turns);
                return spent;
            }
            UiEvent::ToolCallRequested { name, .. } => {
                let name = name.clone();
                self.tree
                    .update(self.row.number, |r| r.current_tool = Some(name));
            }
            UiEvent::ToolCallCompleted(call) => {
                self.totals.tool_calls += 1;
                self.tree.update(self.row.number, |r| r.current_tool = None);
                if call.name == COMPLETE_TASK && call.status == CallStatus::Success {
                    let submitted = call.data.as_ref().and_then(|d| d.get("submittedOutput"));
                    self.output = submitted.and_then(|s| s.as_str()).map(str::to_string);
                }
            }
            // Gemini repeats the request's usage so far on every chunk: the last one
            // of a request counts, when the next request starts or the turn ends.
            UiEvent::Usage(usage) => self.usage = Some(*usage),
            _ => {}
        }
        false
    }

    /// Counts the last request's usage; true when it spent the tree's budget.
    fn fold_usage(&mut self) -> bool {
        let Some(usage) = self.usage.take() else {
            return false;
        };
        let spent = usage.prompt_token_count + usage.candidates_token_count;
        self.totals.prompt_tokens += usage.prompt_token_count;
        self.totals.output_tokens += usage.candidates_token_count;
        self.totals.tokens += spent;
        let tokens = self.totals.tokens;
        self.tree.update(self.row.number, |r| r.tokens = tokens);
        self.tree.spend(spent)
    }
}

fn aborted() -> Ending {
    Ending::Finished {
        reason: "ABORTED",
        result: "The subagent was stopped before it finished.".into(),
    }
}
