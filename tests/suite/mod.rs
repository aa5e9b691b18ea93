mod repl;
mod runtime;
