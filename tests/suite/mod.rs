mod edit;
mod repl;
mod runtime;
