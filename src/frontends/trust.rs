//! `troupe trust [DIR]`, `troupe untrust [DIR]`, and the question asked on the first
//! interactive start in an untrusted folder that holds project settings (or other
//! things trust would turn on), or in a trusted folder whose project configuration
//! changed since it was trusted (see [`crate::settings::trust::pin`]).

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use crate::frontends::options::RunArgs;
use crate::frontends::AppError;
use crate::platform::workspace::Workspace;
use crate::settings::trust::{self, TrustState};

fn trust_error(e: trust::TrustError) -> AppError {
    AppError::Usage(e.to_string())
}

fn dir_or_cwd(dir: Option<&Path>) -> Result<std::path::PathBuf, AppError> {
    match dir {
        Some(d) => Ok(d.to_path_buf()),
        None => Ok(std::env::current_dir()?),
    }
}

/// `troupe trust [DIR]`: lists the folder and pins its project configuration (from
/// it down to the current directory, when that is below it).
pub fn trust(dir: Option<&Path>) -> Result<i32, AppError> {
    let cwd = std::env::current_dir()?;
    let dir = dir_or_cwd(dir)?;
    let real = trust::trust_in(&trust::trust_file(), &dir, &cwd, &write_trust_file)
        .map_err(trust_error)?;
    println!(
        "Trusted {} (listed in {}).",
        real.display(),
        trust::trust_file().display()
    );
    Ok(0)
}

/// `troupe untrust [DIR]`.
pub fn untrust(dir: Option<&Path>) -> Result<i32, AppError> {
    let dir = dir_or_cwd(dir)?;
    let (removed, still) =
        trust::untrust_in(&trust::trust_file(), &dir, &write_trust_file).map_err(trust_error)?;
    let shown = trust::real_dir(&dir).unwrap_or(dir);
    match (removed, still) {
        (_, Some(by)) => println!(
            "{} is still trusted through {} (run `troupe untrust {}`).",
            shown.display(),
            by.display(),
            by.display()
        ),
        (true, None) => println!("{} is no longer trusted.", shown.display()),
        (false, None) => println!("{} was not trusted.", shown.display()),
    }
    Ok(0)
}

/// Whether this run trusts the workspace: `--skip-trust` or `TROUPE_TRUST_WORKSPACE=1`
/// (gemini-cli's `GEMINI_CLI_TRUST_WORKSPACE`), else the trust file.
pub fn run_trust(ws: &Workspace, args: &RunArgs) -> TrustState {
    if args.skip_trust || crate::settings::hook_trust::workspace_trusted(ws.primary()) {
        return TrustState::SkippedForRun;
    }
    trust::is_trusted(ws.primary())
}

/// On an interactive start in an untrusted folder that holds something trust would
/// turn on, or in a trusted one whose configuration changed since it was trusted, asks
/// once: trust this folder, its parent, or not now. Only a terminal is asked; the
/// answer is kept in the user's trust file (with the configuration's new pin).
pub fn prompt_if_needed(ws: &Workspace, args: &RunArgs) -> Result<(), AppError> {
    let state = run_trust(ws, args);
    if state.is_trusted() || !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Ok(());
    }
    let changed = matches!(state, TrustState::Changed { .. });
    let found = match &state {
        TrustState::Changed { changes, .. } => changes.iter().map(|c| c.to_string()).collect(),
        _ => {
            let names = crate::settings::load_in(ws.primary(), &args.overrides, false)
                .map(|l| l.settings.context.file_names)
                .unwrap_or_else(|_| vec!["AGENTS.md".into(), "GEMINI.md".into()]);
            trust::discover(ws.primary(), &names)
        }
    };
    if found.is_empty() {
        return Ok(());
    }
    let folder = ws.primary().to_path_buf();
    let parent = folder.parent().unwrap_or(&folder).to_path_buf();
    let mut err = std::io::stderr();
    if let TrustState::Changed { by, .. } = &state {
        let _ = writeln!(
            err,
            "The project configuration changed since you trusted {}; until you trust it again, none of it applies.\n",
            by.display()
        );
    } else {
        let _ = writeln!(err, "Do you trust the files in this folder?\n");
    }
    let _ = writeln!(
        err,
        "{} {}:\n{}",
        folder.display(),
        if changed { "has" } else { "contains" },
        found
            .iter()
            .map(|f| format!("  - {}", crate::engine::sanitize::one_line(f)))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let _ = writeln!(
        err,
        "\nTrusting a folder lets its settings change how Troupe runs (approval mode, \
         allowed commands, model endpoint, …), starts the MCP servers and runs the hooks \
         listed above, and loads its custom commands and agent skills.\n  1. Trust this folder ({})\n  2. Trust \
         the parent folder ({})\n  3. Not now (project settings are ignored this run)",
        folder.display(),
        parent.display()
    );
    let _ = write!(err, "Choose 1, 2 or 3 [3]: ");
    let _ = err.flush();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    let target = match answer.trim() {
        "1" => Some(folder.clone()),
        "2" => Some(parent),
        _ => None,
    };
    if let Some(dir) = target {
        let real = trust::trust_in(&trust::trust_file(), &dir, &folder, &write_trust_file)
            .map_err(trust_error)?;
        let _ = writeln!(err, "Trusted {}.", real.display());
    }
    Ok(())
}

/// After Troupe's own write of `written` (a file of `workspace`'s project
/// configuration), updates the trust pin so that the write does not make the folder
/// ask to be trusted again; says so when the file had been changed by someone else
/// since the folder was trusted (then the pin is left alone). `before` is the file's
/// [`trust::pin::file_hash`] before the write.
pub fn pin_own_write(workspace: &Path, written: &Path, before: Option<&str>) {
    match trust::pin_own_write(
        &trust::trust_file(),
        workspace,
        written,
        before,
        &write_trust_file,
    ) {
        Ok(trust::OwnWrite::Unpinned) => eprintln!(
            "Note: {} had changed since this folder was trusted, so the next start asks to trust the folder again (`troupe trust`).",
            crate::engine::sanitize::one_line(&written.display().to_string())
        ),
        Ok(_) => {}
        Err(e) => eprintln!("Note: the trust pin was not updated: {e}"),
    }
}

/// After Troupe's own change of several files of `workspace`'s project configuration
/// (a skill folder `troupe skills install` copied or `uninstall` removed), pins the
/// configuration as it now is — only when the folder was trusted with its pin
/// matching before the change (`before`), so that nothing but Troupe's own change is
/// taken in.
pub fn repin_after_own_change(workspace: &Path, before: &TrustState) {
    let TrustState::Trusted { by } = before else {
        return;
    };
    if let Err(e) = trust::trust_in(&trust::trust_file(), by, workspace, &write_trust_file) {
        eprintln!("Note: the trust pin was not updated: {e}");
    }
}

/// Writes the trust file through the platform's one atomic writer.
fn write_trust_file(path: &std::path::Path, bytes: &[u8]) -> Result<(), String> {
    crate::platform::filesystem::owned_file::replace_private(path, bytes).map_err(|e| e.to_string())
}
