mod edit;
mod read_search;
mod repl;
mod runtime;
mod world;
