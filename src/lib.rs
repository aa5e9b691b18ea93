//! Troupe: a terminal coding-agent runtime built as a troupe of actix actors.
//!
//! A model proposes tool calls; the Scheduler validates them, asks an approver where
//! needed, runs them concurrently through one actor per tool and the FileSystem actor,
//! and the Chat actor feeds the results back until the model answers in text.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod actors;
pub mod cli;
pub mod engine;
#[cfg(test)]
mod engine_tests;
pub mod frontends;
pub mod mcp;
pub mod platform;
pub mod protocol;
pub mod providers;
pub mod settings;
pub mod tools;
