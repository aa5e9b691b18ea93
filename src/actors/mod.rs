//! The actors of a session and the front ends that drive them.

pub mod chat;
pub mod corrector;
pub mod editor_files;
pub mod filesystem;
pub mod headless;
pub mod repl;
pub mod scheduler;
pub mod session;
pub mod tool_host;
