//! `troupe extensions install | link | uninstall | list | enable | disable | validate |
//! new`: gemini-cli 0.61's `gemini extensions` commands on the same folder
//! (`~/.gemini/extensions/<name>/`, its `.gemini-extension-install.json` and
//! `extension-enablement.json`), so an extension installed by either tool is seen by
//! both. Their result lines are gemini-cli's (scripts read them); help and questions
//! are Troupe's own. Installing from a git URL clones it with `git`; without the
//! network that fails, and the message says how to install a local clone.

use std::path::{Path, PathBuf};

use clap::Subcommand;

use crate::cli::install_files::{ask_consent, copy_dir, remove_any};
use crate::engine::sanitize::one_line;
use crate::frontends::AppError;
use crate::settings::extensions::{
    self, manifest, Enablement, Extension, InstallMetadata, INSTALL_METADATA,
};

/// `troupe extensions` subcommands.
#[derive(Debug, Subcommand)]
pub enum ExtensionsCommand {
    /// Install an extension: copy a local folder (or a git clone) into
    /// ~/.gemini/extensions/<name>, where gemini-cli finds it too, and enable it.
    Install {
        /// A local folder holding gemini-extension.json, or a git URL (cloned with git:
        /// this needs the network).
        source: String,
        /// The branch, tag or commit of a git URL to install.
        #[arg(long = "ref", value_name = "REF")]
        git_ref: Option<String>,
        /// Skip the question: you have reviewed the extension and accept what it runs.
        #[arg(long)]
        consent: bool,
    },
    /// Link a local folder as an extension: it is read in place, so changes to it show
    /// at the next start.
    Link {
        /// The folder holding gemini-extension.json.
        path: PathBuf,
        /// Skip the question: you have reviewed the extension and accept what it runs.
        #[arg(long)]
        consent: bool,
    },
    /// Remove installed extensions (by name or by install source).
    Uninstall {
        /// The extensions' names or sources.
        names: Vec<String>,
        /// Remove every installed extension.
        #[arg(long)]
        all: bool,
    },
    /// List the installed extensions with what each brings and where it is enabled.
    List,
    /// Enable an extension: everywhere (the default), or with `--scope workspace` in
    /// the current folder and below.
    Enable {
        /// The extension's name.
        name: String,
        /// `user` (your home folder and below) or `workspace` (this folder and below).
        #[arg(long)]
        scope: Option<String>,
    },
    /// Disable an extension in your home folder and below (`--scope user`, the
    /// default) or in the current folder and below (`--scope workspace`).
    Disable {
        /// The extension's name.
        name: String,
        /// `user` (your home folder and below) or `workspace` (this folder and below).
        #[arg(long, default_value = "User")]
        scope: String,
    },
    /// Check an extension folder: its manifest, its name, its context files, its
    /// version.
    Validate {
        /// The folder holding gemini-extension.json.
        path: String,
    },
    /// Make a new extension folder, empty or from a template (context,
    /// custom-commands, exclude-tools, hooks, mcp-server, policies, skills).
    New {
        /// The folder to create (it must not exist).
        path: String,
        /// The template.
        template: Option<String>,
    },
}

fn usage(message: impl Into<String>) -> AppError {
    AppError::Usage(message.into())
}

/// Runs a `troupe extensions` subcommand; returns the exit code. A refusal is said on
/// stderr as gemini-cli says it (without the `troupe: ` of other errors), exit code 1.
pub fn run(command: ExtensionsCommand) -> Result<i32, AppError> {
    match run_command(command) {
        Err(AppError::Usage(message)) => {
            eprintln!("{}", crate::engine::sanitize::for_terminal(&message));
            Ok(1)
        }
        other => other,
    }
}

fn run_command(command: ExtensionsCommand) -> Result<i32, AppError> {
    let cwd = std::env::current_dir()?;
    match command {
        ExtensionsCommand::Install {
            source,
            git_ref,
            consent,
        } => install(&cwd, &source, git_ref.as_deref(), consent),
        ExtensionsCommand::Link { path, consent } => link(&cwd, &path, consent),
        ExtensionsCommand::Uninstall { names, all } => uninstall(&cwd, &names, all),
        ExtensionsCommand::List => crate::cli::extensions_show::list(&cwd),
        ExtensionsCommand::Enable { name, scope } => enable(&cwd, &name, scope.as_deref()),
        ExtensionsCommand::Disable { name, scope } => disable(&cwd, &name, &scope),
        ExtensionsCommand::Validate { path } => crate::cli::extensions_author::validate(&path),
        ExtensionsCommand::New { path, template } => {
            crate::cli::extensions_author::create(&path, template.as_deref())
        }
    }
}

/// The installed extensions, their load warnings said on stderr.
pub(super) fn installed(cwd: &Path) -> Vec<Extension> {
    let loaded = extensions::load(cwd, &[]);
    for warning in &loaded.warnings {
        eprintln!("{}", one_line(warning));
    }
    loaded.all
}

/// The sources gemini-cli installs with git (`inferInstallMetadata`).
fn is_git_source(source: &str) -> bool {
    [
        "http://", "https://", "git@", "sso://", "github:", "gitlab:", "ssh://",
    ]
    .iter()
    .any(|p| source.starts_with(p))
}

/// A shallow `git clone` of `url` into a temp folder, or the error naming how to
/// install from a local clone instead.
fn clone(url: &str, git_ref: Option<&str>) -> Result<tempfile::TempDir, AppError> {
    let tmp = tempfile::Builder::new()
        .prefix("troupe-extension")
        .tempdir()?;
    let mut git = std::process::Command::new("git");
    git.args(["clone", "--quiet", "--depth", "1"]);
    if let Some(r) = git_ref {
        git.args(["--branch", r]);
    }
    git.arg("--").arg(url).arg(tmp.path());
    let how = format!(
        "clone it yourself where the network is available (`git clone {0} DIR`) and install the local copy: `troupe extensions install DIR`",
        one_line(url)
    );
    let out = git
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| {
            usage(format!(
                "Failed to run git to clone {}: {e}; {how}.",
                one_line(url)
            ))
        })?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        return Err(usage(format!(
            "Failed to clone {} (installing from a git URL needs the network): {}\nTo install it anyway, {how}.",
            one_line(url),
            one_line(why.trim())
        )));
    }
    Ok(tmp)
}

/// Troupe's consent text for installing `m` (what gemini-cli's lists, in its words).
fn consent_text(m: &manifest::Manifest, has_hooks: bool, skills: usize) -> String {
    let mut lines = vec![format!("Installing extension \"{}\".", one_line(&m.name))];
    if !m.mcp_servers.is_empty() {
        lines.push("It runs these MCP servers:".to_string());
        for (name, server) in &m.mcp_servers {
            let (kind, what) = match (&server.command, &server.url) {
                (Some(c), _) => ("local", format!("{c} {}", server.args.join(" "))),
                (None, Some(u)) => ("remote", u.clone()),
                (None, None) => ("local", String::new()),
            };
            lines.push(format!(
                "  * {} ({kind}): {}",
                one_line(name),
                one_line(what.trim())
            ));
            if let Some(cwd) = &server.cwd {
                lines.push(format!("    in {}", one_line(cwd)));
            }
        }
    }
    if let Some(names) = &m.context_file_names {
        lines.push(format!(
            "It adds {} to the model's context.",
            one_line(&names.join(", "))
        ));
    }
    if !m.exclude_tools.is_empty() {
        lines.push(format!(
            "It removes these tools: {}",
            one_line(&m.exclude_tools.join(", "))
        ));
    }
    if has_hooks {
        lines.push(
            "It has hooks: commands that run by themselves at events of a session.".to_string(),
        );
    }
    if skills > 0 {
        lines.push(format!("It brings {skills} agent skill(s)."));
    }
    lines.push(String::new());
    lines.push("An extension is someone's code and instructions: Troupe does not vet it. Look at its files before you go on.".to_string());
    lines.join("\n")
}

/// Installs (copies) or links the extension in `from`, with `metadata` written next to
/// it; returns the extension's name.
fn put_in_place(
    cwd: &Path,
    from: &Path,
    metadata: &InstallMetadata,
    consent: bool,
) -> Result<String, AppError> {
    let m = manifest::load(from, cwd).map_err(|e| usage(e.to_string()))?;
    if installed(cwd).iter().any(|e| e.name == m.name) {
        return Err(usage(format!(
            "Extension \"{}\" is already installed. Please uninstall it first.",
            m.name
        )));
    }
    let has_hooks = from.join("hooks").join("hooks.json").is_file();
    let skills = crate::settings::skills::load_dir(&from.join("skills"), false).len();
    if !ask_consent(&consent_text(&m, has_hooks, skills), consent)? {
        return Err(usage(format!("Installation cancelled for \"{}\".", m.name)));
    }
    let dest = extensions::extensions_dir().join(&m.name);
    if std::fs::symlink_metadata(&dest).is_ok() {
        return Err(usage(format!(
            "Cannot install extension \"{}\" because a directory with that name already exists. Please remove it manually.",
            m.name
        )));
    }
    std::fs::create_dir_all(&dest)?;
    if metadata.kind != "link" {
        copy_dir(from, &dest)?;
    }
    let text = serde_json::to_string_pretty(metadata).map_err(std::io::Error::other)?;
    std::fs::write(dest.join(INSTALL_METADATA), text)?;
    Enablement::new(&extensions::extensions_dir(), &[])
        .enable(&m.name, &extensions::gemini_home())?;
    Ok(m.name)
}

fn install(
    cwd: &Path,
    source: &str,
    git_ref: Option<&str>,
    consent: bool,
) -> Result<i32, AppError> {
    if is_git_source(source) {
        let tmp = clone(source, git_ref)?;
        let metadata = InstallMetadata {
            source: source.to_string(),
            kind: "git".to_string(),
            r#ref: git_ref.map(str::to_string),
            release_tag: None,
        };
        let name = put_in_place(cwd, tmp.path(), &metadata, consent)?;
        println!("Extension \"{name}\" installed successfully and enabled.");
        return Ok(0);
    }
    if git_ref.is_some() {
        return Err(usage(
            "--ref and --auto-update are not applicable for local extensions.",
        ));
    }
    let from = crate::settings::skills::absolute(&crate::settings::expand_tilde(Path::new(source)));
    if std::fs::metadata(&from).is_err() {
        return Err(usage("Install source not found."));
    }
    let real = std::fs::canonicalize(&from).unwrap_or_else(|_| from.clone());
    let metadata = InstallMetadata {
        source: from.display().to_string(),
        kind: "local".to_string(),
        r#ref: None,
        release_tag: None,
    };
    let name = put_in_place(cwd, &real, &metadata, consent)?;
    println!("Extension \"{name}\" installed successfully and enabled.");
    Ok(0)
}

fn link(cwd: &Path, path: &Path, consent: bool) -> Result<i32, AppError> {
    let from = crate::settings::skills::absolute(&crate::settings::expand_tilde(path));
    let metadata = InstallMetadata {
        source: from.display().to_string(),
        kind: "link".to_string(),
        r#ref: None,
        release_tag: None,
    };
    let real = std::fs::canonicalize(&from).unwrap_or_else(|_| from.clone());
    let name = put_in_place(cwd, &real, &metadata, consent)?;
    println!("Extension \"{name}\" linked successfully and enabled.");
    Ok(0)
}

fn uninstall(cwd: &Path, names: &[String], all: bool) -> Result<i32, AppError> {
    let found = installed(cwd);
    let mut wanted: Vec<String> = match all {
        true => found.iter().map(|e| e.name.clone()).collect(),
        false => names.to_vec(),
    };
    let mut seen = std::collections::HashSet::new();
    wanted.retain(|n| seen.insert(n.clone()));
    if wanted.is_empty() {
        if all {
            println!("No extensions currently installed.");
            return Ok(0);
        }
        return Err(usage("Please include at least one extension name to uninstall as a positional argument, or use the --all flag."));
    }
    let enablement = Enablement::new(&extensions::extensions_dir(), &[]);
    let mut failed = false;
    for name in &wanted {
        let lower = name.to_lowercase();
        let ext = found.iter().find(|e| {
            e.name.to_lowercase() == lower
                || e.install
                    .as_ref()
                    .is_some_and(|m| m.source.to_lowercase() == lower)
        });
        let Some(ext) = ext else {
            eprintln!(
                "Failed to uninstall \"{}\": Extension not found.",
                one_line(name)
            );
            failed = true;
            continue;
        };
        remove_any(&ext.install_dir)?;
        enablement.remove(&ext.name)?;
        println!("Extension \"{}\" successfully uninstalled.", one_line(name));
    }
    Ok(i32::from(failed))
}

/// The folder a scope's rule names: the workspace, or gemini-cli's home.
fn scope_folder(cwd: &Path, scope: &str) -> Result<PathBuf, AppError> {
    match scope.to_lowercase().as_str() {
        "workspace" => Ok(cwd.to_path_buf()),
        "user" => Ok(extensions::gemini_home()),
        "system" | "systemdefaults" => {
            Err(usage("System and SystemDefaults scopes are not supported."))
        }
        _ => Err(usage(format!(
            "Invalid scope: {}. Please use one of user, workspace.",
            one_line(scope)
        ))),
    }
}

/// The installed extension of that exact name, or gemini-cli's error.
fn existing(cwd: &Path, name: &str) -> Result<(), AppError> {
    if installed(cwd).iter().any(|e| e.name == name) {
        return Ok(());
    }
    Err(usage(format!(
        "Extension with name {} does not exist.",
        one_line(name)
    )))
}

fn enable(cwd: &Path, name: &str, scope: Option<&str>) -> Result<i32, AppError> {
    let folder = scope_folder(cwd, scope.unwrap_or("user"))?;
    existing(cwd, name)?;
    Enablement::new(&extensions::extensions_dir(), &[]).enable(name, &folder)?;
    match scope {
        Some(s) => println!("Extension \"{name}\" successfully enabled for scope \"{s}\"."),
        None => println!("Extension \"{name}\" successfully enabled in all scopes."),
    }
    Ok(0)
}

fn disable(cwd: &Path, name: &str, scope: &str) -> Result<i32, AppError> {
    let folder = scope_folder(cwd, scope)?;
    existing(cwd, name)?;
    Enablement::new(&extensions::extensions_dir(), &[]).disable(name, &folder)?;
    println!("Extension \"{name}\" successfully disabled for scope \"{scope}\".");
    if !scope.eq_ignore_ascii_case("workspace") && !cwd.starts_with(extensions::gemini_home()) {
        println!(
            "Note: this folder is not under {}, so the extension stays enabled here (a user-scope rule covers your home folder and below, as in gemini-cli); `--scope workspace` disables it here.",
            extensions::gemini_home().display()
        );
    }
    Ok(0)
}
