//! The Chat actor's handlers of the messages outside the turn loop: cancelling a turn,
//! stopping the actor, reading or replacing the history, the model name, compression
//! on request and the memory (context files).

use actix::prelude::*;
use tokio_util::sync::CancellationToken;

use super::{Chat, GetHistory, SetHistory, StopChat};
use crate::protocol::{
    CancelTurn, CompressHistory, CompressionOutcome, Memory, MemoryReport, OpError, SeedHistory,
    SessionEvent, TurnOutcome,
};

impl Handler<CancelTurn> for Chat {
    type Result = ();

    fn handle(&mut self, _: CancelTurn, _: &mut Self::Context) {
        if let Some(turn) = &self.turn {
            turn.cancel.cancel();
        }
    }
}

impl Handler<StopChat> for Chat {
    type Result = ();

    fn handle(&mut self, _: StopChat, ctx: &mut Self::Context) {
        if let Some(turn) = &self.turn {
            turn.cancel.cancel();
            self.finish(TurnOutcome::Cancelled);
        }
        ctx.stop();
    }
}

impl Handler<GetHistory> for Chat {
    type Result = MessageResult<GetHistory>;

    fn handle(&mut self, _: GetHistory, _: &mut Self::Context) -> Self::Result {
        MessageResult(self.history.clone())
    }
}

impl Handler<crate::protocol::SetModelName> for Chat {
    type Result = ();

    fn handle(&mut self, msg: crate::protocol::SetModelName, _: &mut Self::Context) {
        self.config.model_name = msg.0;
    }
}

impl Handler<crate::protocol::SetMaxTurns> for Chat {
    type Result = ();

    fn handle(&mut self, msg: crate::protocol::SetMaxTurns, _: &mut Self::Context) {
        self.config.max_turns = msg.0;
    }
}

impl Handler<SetHistory> for Chat {
    type Result = Result<(), OpError>;

    fn handle(&mut self, msg: SetHistory, _: &mut Self::Context) -> Self::Result {
        self.idle("set_history")?;
        self.set_history(msg.0);
        self.record(SessionEvent::Replaced(self.history.clone()));
        Ok(())
    }
}

impl Handler<SeedHistory> for Chat {
    type Result = Result<(), OpError>;

    fn handle(&mut self, msg: SeedHistory, _: &mut Self::Context) -> Self::Result {
        self.idle("seed_history")?;
        self.set_history(msg.0);
        Ok(())
    }
}

impl Chat {
    /// `Ok` when no turn runs, so the history may change; else why `op` is refused.
    fn idle(&self, op: &'static str) -> Result<(), OpError> {
        match self.turn.is_some() {
            true => Err(OpError::Busy {
                op,
                why: "a turn is running; wait for it to end or cancel it first",
            }),
            false => Ok(()),
        }
    }
}

impl Handler<CompressHistory> for Chat {
    type Result = ResponseActFuture<Self, CompressionOutcome>;

    fn handle(&mut self, msg: CompressHistory, _: &mut Self::Context) -> Self::Result {
        if self.turn.is_some() || self.compressing {
            return Box::pin(fut::ready(CompressionOutcome::Noop {
                reason: "a turn or a compression is running".into(),
            }));
        }
        self.compress(msg.force, CancellationToken::new())
    }
}

impl Handler<Memory> for Chat {
    type Result = ResponseActFuture<Self, MemoryReport>;

    fn handle(&mut self, msg: Memory, _: &mut Self::Context) -> Self::Result {
        let Some(memory) = &self.config.memory else {
            return Box::pin(fut::ready(MemoryReport::default()));
        };
        if !msg.refresh {
            return Box::pin(fut::ready(memory.report.clone()));
        }
        let context = memory.context.clone();
        let reload = async move { tokio::task::spawn_blocking(move || context.load()).await };
        Box::pin(reload.into_actor(self).map(|loaded, act, _| {
            let Some(memory) = act.config.memory.as_mut() else {
                return MemoryReport::default();
            };
            match loaded {
                Ok(loaded) => {
                    memory.report = MemoryReport {
                        files: loaded.paths(),
                        text: loaded.text(),
                    };
                    act.config.system_prompt = Some(memory.prompt.render(&memory.report.text));
                }
                Err(e) => tracing::warn!(error = %e, "cannot reload context files"),
            }
            memory.report.clone()
        }))
    }
}
