//! `troupe hooks …` subcommands.

use crate::cli::HooksAction;

use crate::frontends::AppError;

/// Runs a `troupe hooks` action; returns the exit code.
pub fn run(action: HooksAction) -> Result<i32, AppError> {
    match action {
        HooksAction::Migrate { from_claude: false } => {
            eprintln!("Usage: troupe hooks migrate --from-claude\n\nMigrate hooks from Claude Code to Gemini CLI format.");
            Ok(1)
        }
        HooksAction::Migrate { from_claude: true } => {
            let cwd = std::env::current_dir()?;
            match crate::cli::hooks_migrate::run(&cwd) {
                Ok(lines) => {
                    for line in lines {
                        println!("{line}");
                    }
                    Ok(0)
                }
                Err(e) => Err(AppError::Usage(e.to_string())),
            }
        }
    }
}
