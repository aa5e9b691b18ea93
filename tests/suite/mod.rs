mod edit;
mod repl;
mod runtime;
mod world;
