//! The message that runs one call on its tool's actor, and how a hosted call ended.

use actix::prelude::*;

use crate::protocol::ToolOutput;
use crate::tools::{Tool, ToolContext};

/// How one hosted call ended.
#[derive(Debug, Clone)]
pub enum HostOutcome {
    Finished(ToolOutput),
    Panicked(String),
    TimedOut(std::time::Duration),
    /// Cancelled; the output the tool produced while winding down, if any.
    Cancelled(Option<ToolOutput>),
    /// The actor could not be reached.
    Unavailable(String),
}

/// Runs one call of `T` on one of its `ToolActor`s; the outcome goes to `reply`.
///
/// The caller awaits the reply's receiver, one pointer while the call runs, rather
/// than an actix request that keeps room for the message and a timer in every call in
/// flight.
pub struct Invoke<T: Tool> {
    pub params: T::Params,
    pub ctx: ToolContext,
    /// Boxed: the channel is allocated when the call starts with room for its value,
    /// so an unboxed outcome (a whole `ToolOutput`) would be reserved for every call
    /// in flight; the box is made only when the outcome exists.
    pub reply: tokio::sync::oneshot::Sender<Box<HostOutcome>>,
}

impl<T: Tool> Message for Invoke<T> {
    type Result = ();
}
