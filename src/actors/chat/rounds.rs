//! One round of the Chat actor's turn loop: the model's answer is taken in (call ids,
//! a cut answer, loop checks), its calls are handed to the Scheduler, and their answers
//! join the history before the next request.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use actix::prelude::*;

use super::model_call::CallFailure;
use super::{answers, Chat};
use crate::engine::history::{assign_call_ids, TurnAssembler};
use crate::engine::loop_detection::{FailedCalls, LoopKind};
use crate::protocol::content::{Content, FunctionCall, Role};
use crate::protocol::{
    CheckpointEdit, CompressionOutcome, Schedule, SessionEvent, TakeCheckpoint, TurnOutcome,
    UiEvent,
};
use crate::providers::ModelError;

impl Chat {
    pub(super) fn on_model_done(
        &mut self,
        result: Result<(TurnAssembler, Option<LoopKind>), CallFailure>,
        ctx: &mut Context<Self>,
    ) {
        self.answer_ended();
        let Some(turn) = self.turn.as_ref() else {
            return;
        };
        if turn.cancel.is_cancelled() {
            self.finish(TurnOutcome::Cancelled);
            return;
        }
        let mut assembled = match result {
            Ok((_, Some(kind))) => return self.on_loop(kind, None, ctx),
            Ok((a, None)) => a,
            Err(CallFailure {
                error: ModelError::Cancelled,
                ..
            }) => return self.finish(TurnOutcome::Cancelled),
            Err(CallFailure {
                error: ModelError::CutCall { tool, message, .. },
                ..
            }) => return self.on_cut_call(tool, message, ctx),
            Err(failure) if failure.error.is_context_overflow() && self.window_scale > 0.2 => {
                // Fit the request to a smaller share of the window and send it again.
                self.window_scale *= 0.6;
                self.emit(UiEvent::Notice(format!(
                    "The server refused the request as too large for the context window ({}); sending it again without the oldest history.",
                    failure.error
                )));
                return self.request_model(ctx);
            }
            Err(failure) => return self.fail(failure.message()),
        };
        if let Some(usage) = assembled.usage {
            self.last_prompt_tokens = usage.prompt_token_count;
        }
        let cut = assembled.finish_reason.as_deref() == Some("MAX_TOKENS");
        if cut && !assembled.has_calls() {
            self.emit(UiEvent::Notice(format!(
                "The answer was cut at the output limit ({} tokens, model.max_output_tokens).",
                self.config.tuning.max_output_tokens.unwrap_or_default()
            )));
        }
        let mut content = assembled.take_content();
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        // Ids are given in the history's own parts; the Scheduler gets the one copy.
        for part in content.parts.iter_mut() {
            if let Some(call) = part.function_call.as_mut().map(Arc::make_mut) {
                assign_call_ids(std::slice::from_mut(call), millis, &mut self.call_counter);
                // The history keeps the arguments all session: no spare room.
                crate::protocol::content::compact(&mut call.args);
            }
        }
        self.model_usage = assembled.usage;
        // The Scheduler shares the history's calls (the arguments are not copied).
        let calls: Vec<Arc<FunctionCall>> = content
            .parts
            .iter()
            .filter_map(|p| p.function_call.clone())
            .collect();
        if cut && !calls.is_empty() {
            // A plan cut in the middle is not run (not gemini-cli's, which runs it).
            return self.on_cut_calls(calls.len(), ctx);
        }
        if let Some(turn) = self.turn.as_mut() {
            turn.cut.answered();
        }
        self.call_answered();
        if calls.is_empty() {
            if self.ask_again_for_a_call(ctx) {
                return;
            }
            let text = content.text();
            self.push_model_turn(content);
            self.end_answered_turn(text, ctx);
            return;
        }
        let looped = self.turn.as_mut().filter(|t| t.loop_check).and_then(|t| {
            t.loops
                .check_round(&calls)
                .or(t.failures.check_round(&calls))
        });
        if let Some(kind) = looped {
            return self.on_loop(kind, Some((content, calls)), ctx);
        }
        self.run_calls(content, calls, ctx);
    }

    /// Adds a model turn to the history and to the session file.
    fn push_model_turn(&mut self, content: Content) {
        if let Some(recorder) = &self.config.recorder {
            recorder.do_send(SessionEvent::Model {
                content: content.clone(),
                usage: self.model_usage.take(),
            });
        }
        self.history.push(content);
    }

    /// Records the model turn that asked for `calls` and hands them to the Scheduler.
    pub(super) fn run_calls(
        &mut self,
        content: Content,
        calls: Vec<Arc<FunctionCall>>,
        ctx: &mut Context<Self>,
    ) {
        self.push_model_turn(content);
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        turn.rounds += 1;
        turn.phase =
            super::turn_clock::TurnPhase::Tools(calls.iter().map(|c| c.name.clone()).collect());
        let failures = turn.loop_check.then(|| std::mem::take(&mut turn.failures));
        let mut round = answers::RoundAnswers::new(
            &calls,
            self.config.recorder.clone(),
            failures,
            self.config.tool_facts.clone(),
        );
        self.preanswer(&mut round);
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        // Identical calls of one answer run once; every copy gets the answer.
        let to_run = round.to_run();
        if to_run.is_empty() {
            // Every call is answered already: nothing for the Scheduler.
            let done = async move { (Ok(()), round) };
            ctx.spawn(
                done.into_actor(self)
                    .map(|(sent, round), act, ctx| act.on_tools_done(sent, round, ctx)),
            );
            return;
        }
        let (answers, answered) = tokio::sync::mpsc::unbounded_channel();
        let schedule = Schedule {
            turn: turn.id,
            calls: to_run,
            cancel: turn.cancel.clone(),
            answers,
        };
        let facts = &self.config.tool_facts;
        let checkpoint = self
            .config
            .checkpointer
            .clone()
            .filter(|_| schedule.calls.iter().any(|c| facts.get(&c.name).is_edit()))
            .map(|c| {
                c.send(TakeCheckpoint {
                    history: self.history.clone(),
                    edits: checkpoint_edits(&schedule.calls, facts),
                })
            });
        let scheduler = self.scheduler.clone();
        let run = async move {
            if let Some(snapshot) = checkpoint {
                let _ = snapshot.await;
            }
            // The answers are gathered as they come, while the batch runs.
            futures::join!(scheduler.send(schedule), round.gather(answered))
        };
        ctx.spawn(
            run.into_actor(self)
                .map(|(sent, round), act, ctx| act.on_tools_done(sent, round, ctx)),
        );
    }

    fn on_tools_done(
        &mut self,
        sent: Result<(), MailboxError>,
        round: answers::RoundAnswers,
        ctx: &mut Context<Self>,
    ) {
        let facts = &self.config.tool_facts;
        let only_reads =
            (round.calls().iter()).all(|c| facts.get(&c.name).answer_depends_on_files_only);
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        turn.phase = Default::default();
        if !only_reads {
            turn.preanswers.forget_lookups();
        }
        let failure = match sent {
            Ok(()) => "The scheduler ended the batch without answering the call".to_string(),
            Err(e) => format!("The scheduler was unavailable: {e}"),
        };
        let answers::Answered {
            parts,
            all_cancelled,
            sizes,
            failures,
            copies,
            repeated,
            edits,
            task_completed,
            ran_tests,
        } = round.finish(&failure);
        if ran_tests {
            turn.outcome.ran_tests();
        }
        for edit in &edits {
            turn.edits
                .note(edit, self.config.tool_facts.get(&edit.name));
        }
        turn.answer_now = repeated && self.config.tuning.answer_after_repeat;
        if std::mem::take(&mut turn.prefetching) {
            // The reads before the first answer are not the model's: its own first
            // read of such a file is no repeat.
            turn.failures = FailedCalls::default();
        }
        // The front ends see every call: a copy, once its first call is answered.
        for copy in copies {
            self.events.do_send(UiEvent::ToolCallRequested {
                call_id: copy.call_id.clone(),
                name: copy.name.clone(),
                args: copy.args.clone(),
            });
            self.events.do_send(UiEvent::ToolCallCompleted(copy));
        }
        if let Some(failures) = failures {
            turn.failures = failures;
        }
        self.sizes.get_mut().absorb(sizes);
        self.history.push(Content {
            role: Role::User,
            parts,
        });
        turn.after_function_response = true;
        if turn.cancel.is_cancelled() || all_cancelled {
            self.finish(TurnOutcome::Cancelled);
            return;
        }
        if task_completed {
            // A subagent reported (`complete_task`): its turn is over; its parent reads
            // the report from the call.
            self.finish(TurnOutcome::Completed {
                response: String::new(),
            });
            return;
        }
        if turn.rounds >= self.config.max_turns {
            let limit = self.config.max_turns;
            self.finish(TurnOutcome::MaxTurns { limit });
            return;
        }
        let cancel = turn.cancel.clone();
        if !self.compression_due() {
            return self.request_model(ctx);
        }
        // The history outgrew its share of the window during the turn: compress
        // before the next request (gemini-cli checks before every request).
        ctx.spawn(self.compress(false, cancel).map(|outcome, act, ctx| {
            if let CompressionOutcome::Failed { reason } = outcome {
                act.emit(UiEvent::Notice(format!(
                    "Chat compression failed: {reason}"
                )));
            }
            act.request_model(ctx);
        }));
    }
}

/// The edit calls of a round that name their file (the argument their tools' facts
/// give), for a checkpoint.
fn checkpoint_edits(
    calls: &[Arc<FunctionCall>],
    facts: &crate::protocol::ToolFactsTable,
) -> Vec<CheckpointEdit> {
    calls
        .iter()
        .filter_map(|c| {
            let arg = facts.get(&c.name).edited_file_arg?;
            let path = c.args.get(arg)?.as_str()?.to_string();
            Some(CheckpointEdit {
                call: (**c).clone(),
                path,
            })
        })
        .collect()
}
