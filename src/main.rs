//! The `troupe` binary.

use clap::Parser;

use troupe::app;
use troupe::cli::{Cli, Command};

/// mimalloc: a batch of tool calls is mostly small short-lived allocations, which the
/// system allocator served at about a third of the runtime's instructions per call.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Demo) => app::demo::run(),
        Some(Command::Bench(args)) => app::bench::run(&args),
        Some(Command::Config { overrides }) => config(overrides),
        Some(Command::Hooks { action }) => app::hooks_cmd::run(action),
        None if cli.run.acp => troupe::acp::run(&cli.run),
        None => match cli.run.prompt.clone() {
            Some(prompt) => app::run_headless(&cli.run, prompt),
            None => app::interactive::run(&cli.run),
        },
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("troupe: {e}");
            std::process::exit(1);
        }
    }
}

fn config(overrides: Vec<String>) -> Result<i32, app::AppError> {
    let cwd = std::env::current_dir()?;
    let loaded = troupe::settings::load(&cwd, &overrides)?;
    print!("{}", loaded.describe());
    Ok(0)
}
