//! Every I/O service the runtime stands on: the confined file system, the workspace and
//! its roots, context and ignore files, and the session store.

pub mod child_env;
pub mod context_files;
pub mod context_imports;
pub mod descriptors;
pub mod filesystem;
pub mod ignore_rules;
pub mod interrupt;
pub mod path_correction;
pub mod sandbox;
pub mod sessions;
pub mod test_hooks;
pub mod tls;
pub mod workspace;
