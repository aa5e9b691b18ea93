//! The turn's clock (`model.turn_time_limit_secs`, 170 s in the small profile): past
//! the limit the turn is cancelled and fails, saying what it cut — the model's answer
//! in the middle (what it had streamed is kept in the result), the wait for its first
//! token, or the tools that were running.
//!
//! With `model.fit_turn_time_limit` (the small profile) the limit follows the server's
//! measured speed: no answer is cut while no model answer of the session has ended
//! yet (the first one tells how fast the server is), and the limit is at least
//! [`FIT_ANSWERS`] times the slowest answer seen ([`fitted_limit`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;

use super::{small_model, Chat};

/// How many of its slowest answers a turn may take, at least.
pub const FIT_ANSWERS: u32 = 4;

/// What a turn is doing.
#[derive(Debug, Default)]
pub(super) enum TurnPhase {
    /// Neither (hooks, compression, between steps).
    #[default]
    Other,
    /// A model request is open since `started`, with `streamed` bytes of answer so far.
    Model {
        started: Instant,
        streamed: Arc<AtomicU64>,
    },
    /// These tools run.
    Tools(Vec<String>),
}

impl TurnPhase {
    /// What a time limit reached now cuts, as the end of the message's sentence.
    fn cut(&self) -> String {
        match self {
            TurnPhase::Other => String::new(),
            TurnPhase::Model { streamed, .. } => match streamed.load(Ordering::Relaxed) {
                0 => " while waiting for the model's first token (the server was still reading the prompt)".into(),
                bytes => format!(" in the middle of the model's answer: the {bytes} bytes it had streamed are kept in the result, the rest was not written"),
            },
            TurnPhase::Tools(names) => {
                let mut names = names.clone();
                names.dedup();
                format!(" while {} ran (cancelled)", names.join(", "))
            }
        }
    }
}

/// The limit a turn has when the slowest model answer so far took `slowest`: `base`,
/// or [`FIT_ANSWERS`] times `slowest` when that is longer.
pub fn fitted_limit(base: Duration, slowest: Duration) -> Duration {
    base.max(slowest * FIT_ANSWERS)
}

impl Chat {
    /// Starts the turn's clock: past the limit the turn is cancelled and ends as failed.
    pub(super) fn start_turn_clock(&mut self, id: u64, ctx: &mut Context<Self>) {
        let Some(limit) = self.config.tuning.turn_time_limit else {
            return;
        };
        let started = Instant::now();
        ctx.run_later(limit, move |act, ctx| {
            act.check_turn_clock(id, started, ctx)
        });
    }

    /// The limit of turn `id`, started at `started`, may be reached: the turn is cut,
    /// or, fitted to the server's speed, checked again later.
    fn check_turn_clock(&mut self, id: u64, started: Instant, ctx: &mut Context<Self>) {
        let Some(base) = self.config.tuning.turn_time_limit else {
            return;
        };
        let fit = self.config.tuning.fit_turn_time_limit;
        let slowest = self.slowest_answer;
        let Some(turn) = self.turn.as_mut().filter(|t| t.id == id) else {
            return;
        };
        if fit {
            let first_answer_open =
                slowest.is_zero() && matches!(turn.phase, TurnPhase::Model { .. });
            let limit = fitted_limit(base, slowest);
            let left = limit.saturating_sub(started.elapsed());
            if first_answer_open || !left.is_zero() {
                let again = if left.is_zero() { base } else { left };
                ctx.run_later(again, move |act, ctx| {
                    act.check_turn_clock(id, started, ctx)
                });
                return;
            }
        }
        let limit = match fit {
            true => fitted_limit(base, slowest),
            false => base,
        };
        let fitted = (fit && limit > base).then_some(slowest.as_secs());
        tracing::warn!(secs = limit.as_secs(), "turn time limit reached");
        turn.timed_out = Some(small_model::time_limit_message(
            limit.as_secs(),
            fitted,
            &turn.phase.cut(),
        ));
        turn.cancel.cancel();
    }

    /// A model answer ended (or failed): its time counts toward the server's speed.
    pub(super) fn answer_ended(&mut self) {
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        if let TurnPhase::Model { started, .. } = std::mem::take(&mut turn.phase) {
            self.slowest_answer = self.slowest_answer.max(started.elapsed());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_the_base_or_four_slowest_answers() {
        let s = Duration::from_secs;
        assert_eq!(fitted_limit(s(170), s(0)), s(170));
        assert_eq!(fitted_limit(s(170), s(30)), s(170));
        assert_eq!(fitted_limit(s(170), s(100)), s(400));
    }

    #[test]
    fn the_message_says_what_was_cut() {
        let streamed = Arc::new(AtomicU64::new(0));
        let model = TurnPhase::Model {
            started: Instant::now(),
            streamed: streamed.clone(),
        };
        assert!(model.cut().contains("first token"));
        streamed.store(42, Ordering::Relaxed);
        assert!(model
            .cut()
            .contains("the 42 bytes it had streamed are kept"));
        let tools = TurnPhase::Tools(vec!["run_shell_command".into(), "run_shell_command".into()]);
        assert_eq!(tools.cut(), " while run_shell_command ran (cancelled)");
        assert_eq!(TurnPhase::Other.cut(), "");
    }
}
