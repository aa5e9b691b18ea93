mod runtime;
mod world;
