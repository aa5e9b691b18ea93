//! Pure logic: no actors and no side effects beyond what callers pass in.

pub mod compression;
pub mod content;
pub mod context_files;
pub mod context_imports;
pub mod diff;
pub mod edit;
pub mod file_kind;
pub mod history;
pub mod ignore_rules;
pub mod model;
pub mod openai;
pub mod path_correction;
pub mod policy;
pub mod prompt;
pub mod responses;
pub mod schema;
pub mod shell_readonly;
pub mod shell_syntax;
pub mod stats;
pub mod text;
pub mod workspace;
