//! The actors of a session and the front ends that drive them.

pub mod at_command;
pub mod chat;
pub mod checkpointer;
pub mod corrector;
pub mod editor_files;
pub mod filesystem;
pub mod headless;
pub mod recorder;
pub mod repl;
pub mod scheduler;
pub mod session;
pub mod tool_host;
