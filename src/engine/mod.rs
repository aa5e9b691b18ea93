//! Pure logic: no actors and no side effects beyond what callers pass in.

pub mod at_refs;
pub mod compact_tools;
pub mod compression;
pub mod context_budget;
pub mod diff;
pub mod edit;
pub mod file_kind;
pub mod hash;
pub mod history;
pub mod loop_detection;
pub mod model;
pub mod paths;
pub mod policy;
pub mod proc_stat;
pub mod prompt;
pub mod responses;
pub mod result_display;
pub mod sanitize;
pub mod schema;
pub mod secret_names;
pub mod session_file;
pub mod shell_readonly;
pub mod shell_syntax;
pub mod stats;
pub mod syntax_check;
pub mod text;
