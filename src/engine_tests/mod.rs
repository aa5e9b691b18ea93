//! Tests of the engine crate that the main crate's tests share.

pub(crate) mod secret_names;
