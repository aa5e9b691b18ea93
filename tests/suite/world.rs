//! Acting on the world: shell commands, background processes, web_fetch, memory and
//! context files, end to end through the binary (and, where the model must react to a
//! value only known at run time, through the library with a model that answers from
//! what it was sent).

mod coding_loop;
mod context;
mod live;
mod shell;
mod web;
