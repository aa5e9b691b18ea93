//! The contract between Troupe's actors and its front ends: every message an actor
//! accepts and every event a front end renders. It lives in the `troupe-protocol` crate
//! (crates/troupe-protocol), which depends on no other part of Troupe; this module
//! re-exports it so that `crate::protocol::…` names it everywhere.

pub use troupe_protocol::*;
