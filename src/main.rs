//! The `troupe` binary.

use clap::Parser;

use troupe::cli::{Cli, Command};
use troupe::frontends as app;

/// mimalloc: a batch of tool calls is mostly small short-lived allocations, which the
/// system allocator served at about a third of the runtime's instructions per call.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // First, while the process has one thread: API keys leave the environment, and a
    // key given with `-c` leaves the command line (after the arguments are copied).
    troupe::settings::secrets::scrub_process_env();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    for key in troupe::settings::secrets::scrub_key_arguments() {
        eprintln!("{}", troupe::settings::secrets::key_argument_warning(&key));
    }
    let cli = Cli::parse_from(args);
    if let (None, Some(name)) = (&cli.command, &cli.run.worktree) {
        if let Err(message) = app::worktree::enter_for_session(name) {
            eprintln!("{}", troupe::engine::sanitize::for_terminal(&message));
            exit_now(1);
        }
    }
    let result = match cli.command {
        Some(Command::Demo) => troupe::cli::demo::run(),
        Some(Command::Bench(args)) => troupe::cli::bench::run(&args),
        Some(Command::Batch(args)) => Ok(app::batch::run(&args)),
        Some(Command::Config(args)) => config(&args),
        Some(Command::Trust { dir }) => app::trust::trust(dir.as_deref()),
        Some(Command::Untrust { dir }) => app::trust::untrust(dir.as_deref()),
        None if cli.run.list_extensions => troupe::cli::extensions_show::list_flag(),
        None if cli.run.list_sessions => app::sessions::list(&cli.run),
        None if cli.run.delete_session.is_some() => {
            let which = cli.run.delete_session.clone().unwrap_or_default();
            app::sessions::delete(&cli.run, &which)
        }
        Some(Command::Mcp { command }) => {
            troupe::cli::mcp::run(command).map_err(|e| app::AppError::Usage(e.to_string()))
        }
        Some(Command::Hooks { action }) => troupe::cli::hooks_cmd::run(action),
        Some(Command::Skills { command }) => troupe::cli::skills::run(command),
        Some(Command::Extensions { command }) => troupe::cli::extensions::run(command),
        Some(Command::Completion { shell }) => {
            troupe::cli::completion::completion(shell).map_err(app::AppError::from)
        }
        Some(Command::Man) => troupe::cli::completion::man().map_err(app::AppError::from),
        None if cli.run.acp => troupe::frontends::acp::run(&cli.run),
        None => match cli.run.prompt.clone() {
            Some(prompt) => app::run_headless(&cli.run, prompt),
            None => app::interactive::run(&cli.run),
        },
    };
    match result {
        Ok(code) => exit_now(code),
        Err(e) => {
            // An error may quote a settings file or a server.
            eprintln!(
                "troupe: {}",
                troupe::engine::sanitize::for_terminal(&e.to_string())
            );
            exit_now(1);
        }
    }
}

/// Ends the process once everything it owes is written. `_exit` skips the C `atexit`
/// handlers, of which the only one here is mimalloc's: it walks every heap to hand the
/// memory back to the OS, which the OS is about to take anyway (about a millisecond,
/// 5 % of the main thread, at the end of a 1,000-call `-p` run).
fn exit_now(code: i32) -> ! {
    use std::io::Write;
    // Every temp file of this process is gone: the next start need not sweep for them.
    troupe::platform::filesystem::writers::withdraw();
    troupe::platform::sandbox::remove_private_tmp();
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: `_exit` takes no pointers and never returns; Rust's own buffers are
    // flushed above, and no C stdio stream of this process holds unwritten data.
    unsafe { libc::_exit(code) }
}

fn config(args: &troupe::cli::config_cmd::ConfigArgs) -> Result<i32, app::AppError> {
    let cwd = std::env::current_dir()?;
    let loaded = troupe::cli::config_cmd::load(&cwd, args)?;
    if let Some(notice) = &loaded.settings.trust_notice {
        eprintln!("{notice}");
    } else if let Some(file) = &loaded.skipped_project_file {
        eprintln!("{}", troupe::settings::trust::skipped_notice(file));
    }
    let sandbox = troupe::platform::sandbox::session::summary(&loaded.settings);
    let env = troupe::providers::select::process_env;
    print!(
        "{}",
        troupe::cli::config_cmd::render(&loaded, args.json, &sandbox, &env)
    );
    Ok(0)
}
