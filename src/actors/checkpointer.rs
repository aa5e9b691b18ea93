//! The Checkpointer actor (`general.checkpointing`): before the Chat actor schedules a
//! batch holding `replace` or `write_file` calls, it snapshots the workspace in the
//! shadow git repository and writes the checkpoint files. It runs on an arbiter of its
//! own (git is a child process, waited for there); a snapshot that fails is reported
//! as a notice and the edit goes on.

use actix::prelude::*;

use crate::platform::sessions::checkpoint::Checkpoints;
use crate::protocol::EventSink;
use crate::protocol::{TakeCheckpoint, UiEvent};

/// Takes checkpoints for one project.
pub struct Checkpointer {
    checkpoints: Checkpoints,
    events: EventSink,
}

impl Checkpointer {
    /// Starts the checkpointer on `arbiter` (one of its own: a snapshot takes a while,
    /// and the session stops it at shutdown).
    pub fn start_on(
        arbiter: &ArbiterHandle,
        checkpoints: Checkpoints,
        events: EventSink,
    ) -> Addr<Self> {
        Self::start_in_arbiter(arbiter, move |_| Self {
            checkpoints,
            events,
        })
    }
}

impl Actor for Checkpointer {
    type Context = Context<Self>;
}

impl Handler<TakeCheckpoint> for Checkpointer {
    type Result = ();

    fn handle(&mut self, msg: TakeCheckpoint, _: &mut Self::Context) {
        let span = tracing::info_span!("checkpoint", calls = msg.edits.len());
        let _enter = span.enter();
        match self.checkpoints.take(&msg.history, &msg.edits) {
            Ok(names) => tracing::info!(?names, "checkpoint taken"),
            Err(e) => {
                tracing::warn!(error = %e, "checkpoint failed");
                self.events
                    .do_send(UiEvent::Notice(format!("Checkpoint not taken: {e}")));
            }
        }
    }
}
