mod edit;
mod runtime;
