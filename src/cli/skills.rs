//! `troupe skills list [--all] | enable NAME | disable NAME | install PATH | link PATH |
//! uninstall NAME`: gemini-cli 0.61's `gemini skills` commands, saying the same
//! things in Troupe's words. Skills are installed into Troupe's own folders
//! (`<troupe home>/skills`, or the project's `.troupe/skills` with `--scope project`),
//! and `skills.disabled` is kept in Troupe's config files. Only local folders are
//! installed: a git URL would need the network, which this command does not use.

use std::path::{Path, PathBuf};

use clap::{Subcommand, ValueEnum};
use toml_edit::{Array, Item, Table, Value};

use super::skills_install;
use crate::engine::sanitize::one_line;
use crate::frontends::AppError;
use crate::settings::skills::{self, Skill};

/// `troupe skills` subcommands.
#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// List the agent skills found here, enabled or disabled.
    List {
        /// Also list the project skills an untrusted folder leaves out (Troupe has no
        /// built-in skills, which gemini-cli's `--all` adds).
        #[arg(long)]
        all: bool,
    },
    /// Enable a skill: take it off the disabled list of the user and project settings.
    Enable {
        /// The skill's name.
        name: String,
    },
    /// Disable a skill: put it on the disabled list of the project (default) or user
    /// settings.
    Disable {
        /// Which settings file: the project's `.troupe/config.toml` or the user's.
        #[arg(short = 's', long = "scope", value_enum, default_value_t = ScopeArg::Project)]
        scope: ScopeArg,
        /// The skill's name.
        name: String,
    },
    /// Install skills from a local folder (copies them).
    ///
    /// Each skill folder found in it (the folder itself, or its subfolders holding a
    /// SKILL.md) is copied into the user's skills (<troupe home>/skills) or the
    /// project's (.troupe/skills).
    Install {
        /// The local folder. A git URL is refused: cloning needs the network, which
        /// this command does not use (clone it yourself and install the copy).
        source: String,
        #[arg(short = 's', long = "scope", value_enum, default_value_t = ScopeArg::User)]
        scope: ScopeArg,
        /// A subfolder of the source to install from.
        #[arg(long)]
        path: Option<String>,
        /// Skip the question: you have reviewed the skills and accept what they do.
        #[arg(long)]
        consent: bool,
    },
    /// Link skills from a local folder (symlinks: changes to the source show at once).
    Link {
        /// The local folder.
        path: PathBuf,
        #[arg(short = 's', long = "scope", value_enum, default_value_t = ScopeArg::User)]
        scope: ScopeArg,
        /// Skip the question: you have reviewed the skills and accept what they do.
        #[arg(long)]
        consent: bool,
    },
    /// Uninstall a skill that `troupe skills install` or `link` put in place.
    Uninstall {
        /// The skill's name.
        name: String,
        #[arg(short = 's', long = "scope", value_enum, default_value_t = ScopeArg::User)]
        scope: ScopeArg,
    },
}

/// `--scope` values (`workspace`, gemini-cli's word, names the project).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScopeArg {
    User,
    #[value(alias = "workspace")]
    Project,
}

impl ScopeArg {
    pub(super) fn name(self) -> &'static str {
        match self {
            ScopeArg::User => "user",
            ScopeArg::Project => "project",
        }
    }

    /// The settings file this scope's `skills.disabled` is kept in.
    fn settings_file(self, cwd: &Path) -> PathBuf {
        match self {
            ScopeArg::User => crate::settings::troupe_home().join("config.toml"),
            ScopeArg::Project => cwd.join(".troupe").join("config.toml"),
        }
    }

    /// The folder skills of this scope are installed into.
    pub(super) fn install_dir(self, cwd: &Path) -> PathBuf {
        match self {
            ScopeArg::User => skills::user_install_dir(),
            ScopeArg::Project => skills::project_install_dir(cwd),
        }
    }
}

pub(super) fn usage(message: impl Into<String>) -> AppError {
    AppError::Usage(message.into())
}

/// Runs a `troupe skills` subcommand; returns the exit code.
pub fn run(command: SkillsCommand) -> Result<i32, AppError> {
    let cwd = std::env::current_dir()?;
    match command {
        SkillsCommand::List { all } => list(&cwd, all),
        SkillsCommand::Enable { name } => enable(&cwd, &name),
        SkillsCommand::Disable { scope, name } => disable(&cwd, scope, &name),
        SkillsCommand::Install {
            source,
            scope,
            path,
            consent,
        } => skills_install::install(&cwd, &source, scope, path.as_deref(), consent),
        SkillsCommand::Link {
            path,
            scope,
            consent,
        } => skills_install::link(&cwd, &path, scope, consent),
        SkillsCommand::Uninstall { name, scope } => skills_install::uninstall(&cwd, &name, scope),
    }
}

/// The settings of `cwd` as a session there would have them (trust included).
pub(super) fn settings_here(cwd: &Path) -> Result<crate::settings::Settings, AppError> {
    let trusted = crate::cli::mcp::folder_trusted(cwd);
    Ok(crate::settings::load_in(cwd, &[], trusted)?.settings)
}

fn list(cwd: &Path, all: bool) -> Result<i32, AppError> {
    let settings = settings_here(cwd)?;
    if let Some(notice) = &settings.trust_notice {
        eprintln!("{notice}");
    }
    let loaded = skills::load(cwd, &settings);
    if loaded.off {
        println!("Agent skills are off (skills.enabled = false).");
        return Ok(0);
    }
    for warning in &loaded.warnings {
        eprintln!("Warning: {}", one_line(warning));
    }
    let mut shown: Vec<(&Skill, &str)> = loaded
        .skills
        .iter()
        .map(|s| (s, if s.disabled { "disabled" } else { "enabled" }))
        .collect();
    if all {
        shown.extend(
            loaded
                .untrusted
                .iter()
                .map(|s| (s, "not loaded: folder not trusted")),
        );
    }
    shown.sort_by(|a, b| crate::engine::text::locale_cmp(&a.0.name, &b.0.name));
    if shown.is_empty() {
        println!("No agent skills found.");
    } else {
        println!("Agent skills:\n");
        for (skill, state) in shown {
            let scope = if skill.project { "project" } else { "user" };
            println!("{} [{state}] ({scope})", one_line(&skill.name));
            println!("  Description: {}", one_line(&skill.description));
            println!(
                "  Location:    {}\n",
                one_line(&skill.location.display().to_string())
            );
        }
    }
    if !loaded.untrusted.is_empty() && !all {
        println!(
            "{} project skill(s) not loaded: this folder is not trusted (`troupe trust` trusts it; `troupe skills list --all` shows them).",
            loaded.untrusted.len()
        );
    }
    Ok(0)
}

/// The `skills.disabled` array of a config document, made when missing.
fn disabled_array<'a>(
    doc: &'a mut toml_edit::DocumentMut,
    path: &Path,
) -> Result<&'a mut Array, AppError> {
    let table = doc
        .entry("skills")
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_like_mut()
        .ok_or_else(|| {
            usage(format!(
                "cannot edit {}: `skills` is not a table",
                path.display()
            ))
        })?;
    let item = table
        .entry("disabled")
        .or_insert(Item::Value(Value::Array(Array::new())));
    item.as_array_mut().ok_or_else(|| {
        usage(format!(
            "cannot edit {}: `skills.disabled` is not a list",
            path.display()
        ))
    })
}

fn mcp_error(e: crate::cli::mcp::McpCliError) -> AppError {
    usage(e.to_string())
}

fn enable(cwd: &Path, name: &str) -> Result<i32, AppError> {
    let lower = name.to_lowercase();
    let mut removed_from = Vec::new();
    for scope in [ScopeArg::Project, ScopeArg::User] {
        let path = scope.settings_file(cwd);
        let listed = skills::toml_disabled(&path)
            .iter()
            .any(|n| n.to_lowercase() == lower);
        if !listed {
            continue;
        }
        let mut doc = crate::cli::mcp::read_doc(&path).map_err(mcp_error)?;
        disabled_array(&mut doc, &path)?
            .retain(|v| v.as_str().map(str::to_lowercase) != Some(lower.clone()));
        crate::cli::mcp::write_doc(&path, &doc, cwd).map_err(mcp_error)?;
        removed_from.push(format!(
            "the {} settings ({})",
            scope.name(),
            path.display()
        ));
    }
    let name_shown = one_line(name);
    if removed_from.is_empty() {
        println!("Skill \"{name_shown}\" is already enabled in Troupe's settings.");
    } else {
        println!(
            "Skill \"{name_shown}\" enabled: removed from the disabled list of {}.",
            removed_from.join(" and ")
        );
    }
    let trusted = crate::cli::mcp::folder_trusted(cwd);
    for file in skills::gemini_settings_files(cwd, trusted) {
        if skills::gemini_disabled(&file)
            .iter()
            .any(|n| n.to_lowercase() == lower)
        {
            println!(
                "It is still disabled by gemini-cli's settings ({}), which Troupe reads too: `gemini skills enable {name_shown}` removes it there.",
                file.display()
            );
        }
    }
    Ok(0)
}

fn disable(cwd: &Path, scope: ScopeArg, name: &str) -> Result<i32, AppError> {
    let path = scope.settings_file(cwd);
    let lower = name.to_lowercase();
    let name_shown = one_line(name);
    let listed = |p: &Path| {
        skills::toml_disabled(p)
            .iter()
            .any(|n| n.to_lowercase() == lower)
    };
    if listed(&path) {
        println!(
            "Skill \"{name_shown}\" is already disabled in the {} settings ({}).",
            scope.name(),
            path.display()
        );
        return Ok(0);
    }
    let mut doc = crate::cli::mcp::read_doc(&path).map_err(mcp_error)?;
    disabled_array(&mut doc, &path)?.push(name);
    crate::cli::mcp::write_doc(&path, &doc, cwd).map_err(mcp_error)?;
    println!(
        "Skill \"{name_shown}\" disabled: added to the disabled list of the {} settings ({}).",
        scope.name(),
        path.display()
    );
    let other = match scope {
        ScopeArg::User => ScopeArg::Project,
        ScopeArg::Project => ScopeArg::User,
    };
    if listed(&other.settings_file(cwd)) {
        println!(
            "It is disabled in the {} settings ({}) too.",
            other.name(),
            other.settings_file(cwd).display()
        );
    }
    if scope == ScopeArg::Project && !crate::cli::mcp::folder_trusted(cwd) {
        println!(
            "Note: this folder is not trusted, so its project settings do not apply and the skill stays enabled here; trust the folder (`troupe trust`) or disable it for yourself with `troupe skills disable -s user {name_shown}`."
        );
    }
    let settings = settings_here(cwd)?;
    let found = skills::load(cwd, &settings);
    let known = found
        .skills
        .iter()
        .chain(&found.untrusted)
        .any(|s| s.name.to_lowercase() == lower);
    if !known {
        println!(
            "(No skill of that name is found here now; the name is kept on the list all the same.)"
        );
    }
    Ok(0)
}
