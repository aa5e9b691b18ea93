//! The interactive session driven through a real pseudo-terminal: `troupe` runs in a
//! private tmux server, keys go in with `send-keys`, and the screen comes back with
//! `capture-pane`. The model is scripted; every request it got is logged.

mod agents;
mod ask_user;
mod cancel;
mod commands;
mod confirm;
mod directory_add;
mod escapes;
mod faults;
mod features;
mod flags;
mod habits;
mod layout;
mod live_output;
mod mcp;
mod plan_mode;
mod reapproval;
mod screen;
mod sessions;
mod signals;
mod status_line;
pub(crate) mod term;
mod trust_prompt;

/// The edit tool the confirmation tests drive. `replace` once it is on this branch.
pub const EDIT_TOOL: &str = "replace";
