mod read_search;
mod runtime;
