//! Pure logic: no actors and no side effects beyond what callers pass in.
//!
//! A crate of its own (the main crate re-exports it as `troupe::engine`) that depends
//! on `troupe-protocol` alone among Troupe's crates, so the compiler keeps it from
//! using the actors, tools, providers or platform.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

/// The contract's types under the path the engine's modules have always used
/// (`crate::protocol::…`).
use troupe_protocol as protocol;

pub mod at_refs;
pub mod call_key;
pub mod compact_tools;
pub mod compression;
pub mod context_budget;
pub mod definitions;
pub mod diff;
pub mod edit;
pub mod file_kind;
pub mod hash;
pub mod history;
pub mod loop_detection;
pub mod model;
pub mod paths;
pub mod policy;
pub mod policy_rules;
pub mod proc_stat;
pub mod prompt;
pub mod request_history;
pub mod request_intent;
pub mod responses;
pub mod result_display;
pub mod sanitize;
pub mod schema;
pub mod secret_names;
pub mod session_file;
pub mod shell_readonly;
pub mod shell_syntax;
pub mod stable_json;
pub mod stats;
pub mod syntax_check;
pub mod test_command;
pub mod text;
pub mod trajectory;
