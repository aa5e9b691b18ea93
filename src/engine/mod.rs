//! Pure logic: no actors and no side effects beyond what callers pass in.

pub mod compression;
pub mod content;
pub mod history;
pub mod model;
pub mod openai;
pub mod policy;
pub mod prompt;
pub mod responses;
pub mod schema;
pub mod stats;
pub mod text;
pub mod workspace;
