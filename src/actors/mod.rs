//! The actors of a session and the front ends that drive them.

pub mod agents;
pub mod approvals;
pub mod at_command;
pub mod chat;
pub mod checkpointer;
pub mod hooks;
pub mod recorder;
pub mod scheduler;
pub mod session;
