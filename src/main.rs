//! The `troupe` binary.

use clap::Parser;

use troupe::app;
use troupe::cli::{Cli, Command};

/// mimalloc: a batch of tool calls is mostly small short-lived allocations, which the
/// system allocator served at about a third of the runtime's instructions per call.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // First, while the process has one thread: API keys leave the environment.
    troupe::secrets::scrub_process_env();
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Demo) => app::demo::run(),
        Some(Command::Bench(args)) => app::bench::run(&args),
        Some(Command::Config { overrides }) => config(overrides),
        Some(Command::Trust { dir }) => app::trust_cmd::trust(dir.as_deref()),
        Some(Command::Untrust { dir }) => app::trust_cmd::untrust(dir.as_deref()),
        None if cli.run.list_sessions => app::sessions::list(&cli.run),
        None if cli.run.delete_session.is_some() => {
            let which = cli.run.delete_session.clone().unwrap_or_default();
            app::sessions::delete(&cli.run, &which)
        }
        Some(Command::Mcp { command }) => {
            troupe::mcp::cli::run(command).map_err(|e| app::AppError::Usage(e.to_string()))
        }
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
    if let Some(file) = &loaded.skipped_project_file {
        eprintln!("{}", troupe::settings::trust::skipped_notice(file));
    }
    print!("{}", loaded.describe());
    Ok(0)
}
