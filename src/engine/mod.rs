//! Pure logic: no actors and no side effects beyond what callers pass in. It lives in
//! the `troupe-engine` crate (crates/troupe-engine), which depends on `troupe-protocol`
//! alone; this module re-exports it so that `crate::engine::…` names it everywhere.

pub use troupe_engine::*;
