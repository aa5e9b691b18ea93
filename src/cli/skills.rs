//! `troupe skills list [--all] | enable NAME | disable NAME | install PATH | link PATH |
//! uninstall NAME`: gemini-cli 0.61's `gemini skills` commands, saying the same
//! things in Troupe's words. Skills are installed into Troupe's own folders
//! (`<troupe home>/skills`, or the project's `.troupe/skills` with `--scope project`),
//! and `skills.disabled` is kept in Troupe's config files. Only local folders are
//! installed: a git URL would need the network, which this command does not use.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use clap::{Subcommand, ValueEnum};
use toml_edit::{Array, Item, Table, Value};

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
    fn name(self) -> &'static str {
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
    fn install_dir(self, cwd: &Path) -> PathBuf {
        match self {
            ScopeArg::User => skills::user_install_dir(),
            ScopeArg::Project => skills::project_install_dir(cwd),
        }
    }
}

fn usage(message: impl Into<String>) -> AppError {
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
        } => install(&cwd, &source, scope, path.as_deref(), consent),
        SkillsCommand::Link {
            path,
            scope,
            consent,
        } => link(&cwd, &path, scope, consent),
        SkillsCommand::Uninstall { name, scope } => uninstall(&cwd, &name, scope),
    }
}

/// The settings of `cwd` as a session there would have them (trust included).
fn settings_here(cwd: &Path) -> Result<crate::settings::Settings, AppError> {
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

/// Whether `source` names a git repository (gemini-cli's test).
fn is_git_url(source: &str) -> bool {
    source.starts_with("git@") || source.starts_with("http://") || source.starts_with("https://")
}

/// A `..`, an absolute path, or empty: not a name beneath the install folder.
fn bad_skill_dir_name(name: &str) -> bool {
    name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\\')
}

/// The consent text of gemini-cli's `skillsConsentString`, in Troupe's words.
fn consent_text(found: &[Skill], source: &str, target: &Path, link: bool) -> String {
    let (doing, done) = match link {
        true => ("Linking", "linked"),
        false => ("Installing", "installed"),
    };
    let mut lines = vec![
        format!("{doing} agent skill(s) from \"{}\".", one_line(source)),
        String::new(),
        format!("These agent skill(s) will be {done}:"),
        String::new(),
    ];
    for skill in found {
        let items = std::fs::read_dir(skill.dir())
            .map(|d| match d.count() {
                1 => " (1 item in the folder)".to_string(),
                n => format!(" ({n} items in the folder)"),
            })
            .unwrap_or_else(|_| " (the folder's items could not be counted)".to_string());
        lines.push(format!(
            "  * {}: {}",
            one_line(&skill.name),
            one_line(&skill.description)
        ));
        lines.push(format!(
            "    (source: {}){items}",
            one_line(&skill.location.display().to_string())
        ));
        lines.push(String::new());
    }
    lines.push(format!(
        "{} into: {}",
        if link { "Link" } else { "Install" },
        target.display()
    ));
    lines.push(String::new());
    lines.push("A skill's instructions are given to the model when it activates the skill, and can change how it reads your requests and what it does in your environment. Review the skills' files at the locations above before you go on.".to_string());
    lines.join("\n")
}

/// Asks on stderr, reads the answer on stdin: an empty answer is yes (gemini-cli's
/// default), no answer at all (end of input) is no.
pub(super) fn ask_consent(text: &str, consent: bool) -> Result<bool, AppError> {
    let mut err = std::io::stderr();
    if consent {
        let _ = writeln!(err, "You have consented to the following:\n{text}");
        return Ok(true);
    }
    let _ = writeln!(err, "{text}");
    let _ = write!(err, "Do you want to continue? [Y/n]: ");
    let _ = err.flush();
    let mut answer = String::new();
    let read = std::io::stdin().lock().read_line(&mut answer)?;
    if read == 0 {
        let _ = writeln!(err);
        return Err(usage(
            "no answer on standard input: nothing was changed (pass --consent to go on without being asked)",
        ));
    }
    let answer = answer.trim().to_lowercase();
    Ok(answer.is_empty() || answer == "y" || answer == "yes")
}

/// The skills found in `source` (gemini-cli's `loadSkillsFromDir`), or the error.
fn skills_in(source: &Path, shown: &str, subpath: Option<&str>) -> Result<Vec<Skill>, AppError> {
    eprintln!("Searching for skills in {}...", source.display());
    let found = skills::load_dir(source, false);
    if found.is_empty() {
        let at = subpath
            .map(|p| format!(" at path \"{}\"", one_line(p)))
            .unwrap_or_default();
        return Err(usage(format!(
            "No valid skills found in {}{at}. Make sure it holds a SKILL.md (or subfolders with one) whose front matter has a name and a description.",
            one_line(shown)
        )));
    }
    Ok(found)
}

/// Removes what is at `path` (a folder, a file or a symlink, which is not followed).
pub(super) fn remove_any(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Copies the folder `from` to `to` (files with their permissions, symlinks as
/// symlinks), as Node's `fs.cp(…, {recursive: true})`.
pub(super) fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        } else if kind.is_dir() {
            copy_dir(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

/// What a change in the project's skills folder says in an untrusted folder.
fn untrusted_note(cwd: &Path, scope: ScopeArg) {
    if scope == ScopeArg::Project && !crate::cli::mcp::folder_trusted(cwd) {
        println!("Note: this folder is not trusted, so its project skills are not loaded; trust it with `troupe trust`, or install for yourself with `--scope user`.");
    }
}

fn install(
    cwd: &Path,
    source: &str,
    scope: ScopeArg,
    subpath: Option<&str>,
    consent: bool,
) -> Result<i32, AppError> {
    if is_git_url(source) {
        return Err(usage(format!(
            "{} is a git repository: installing from one needs the network (a clone), which `troupe skills install` does not use. Clone it yourself (`git clone {} DIR`) and install the local copy: `troupe skills install DIR` (with --path SUBFOLDER for a skill inside it).",
            one_line(source),
            one_line(source)
        )));
    }
    if source.to_lowercase().ends_with(".skill") {
        return Err(usage(format!(
            "{}: .skill archives are not installed by Troupe; unzip it and install the folder.",
            one_line(source)
        )));
    }
    let mut from = crate::settings::expand_tilde(Path::new(source));
    if let Some(sub) = subpath {
        from = from.join(sub);
    }
    let from = skills::absolute(&from);
    let found = skills_in(&from, source, subpath)?;
    let target = scope.install_dir(cwd);
    if !ask_consent(&consent_text(&found, source, &target, false), consent)? {
        return Err(usage("Skill installation cancelled: nothing was changed."));
    }
    let trust_before = crate::settings::trust::is_trusted(cwd);
    std::fs::create_dir_all(&target)?;
    let mut installed = Vec::new();
    for skill in &found {
        if bad_skill_dir_name(&skill.name) {
            return Err(usage(format!(
                "Invalid skill name \"{}\": it would not be a folder inside {}.",
                one_line(&skill.name),
                target.display()
            )));
        }
        let dest = target.join(&skill.name);
        if std::fs::symlink_metadata(&dest).is_ok() {
            eprintln!(
                "Skill \"{}\" already exists. Overwriting...",
                one_line(&skill.name)
            );
            remove_any(&dest)?;
        }
        copy_dir(skill.dir(), &dest)?;
        installed.push((skill.name.clone(), dest));
    }
    if scope == ScopeArg::Project {
        crate::frontends::trust::repin_after_own_change(cwd, &trust_before);
    }
    for (name, dest) in installed {
        println!(
            "Installed skill {} ({} scope) into {}.",
            one_line(&name),
            scope.name(),
            dest.display()
        );
    }
    untrusted_note(cwd, scope);
    Ok(0)
}

fn link(cwd: &Path, path: &Path, scope: ScopeArg, consent: bool) -> Result<i32, AppError> {
    let expanded = crate::settings::expand_tilde(path);
    let from = skills::absolute(&expanded);
    let shown = format!("\"{}\"", from.display());
    let found = skills_in(&from, &shown, None)?;
    for (i, skill) in found.iter().enumerate() {
        if let Some(first) = found[..i].iter().find(|s| s.name == skill.name) {
            return Err(usage(format!(
                "Duplicate skill name \"{}\" found at multiple locations:\n  - {}\n  - {}",
                one_line(&skill.name),
                first.location.display(),
                skill.location.display()
            )));
        }
    }
    let target = scope.install_dir(cwd);
    if !ask_consent(
        &consent_text(&found, &from.display().to_string(), &target, true),
        consent,
    )? {
        return Err(usage("Skill linking cancelled: nothing was changed."));
    }
    let trust_before = crate::settings::trust::is_trusted(cwd);
    std::fs::create_dir_all(&target)?;
    let mut linked = Vec::new();
    for skill in &found {
        if bad_skill_dir_name(&skill.name) {
            return Err(usage(format!(
                "Invalid skill name \"{}\": it would not be a folder inside {}.",
                one_line(&skill.name),
                target.display()
            )));
        }
        let dest = target.join(&skill.name);
        if std::fs::symlink_metadata(&dest).is_ok() {
            eprintln!(
                "Skill \"{}\" already exists at the destination. Overwriting...",
                one_line(&skill.name)
            );
            remove_any(&dest)?;
        }
        std::os::unix::fs::symlink(skill.dir(), &dest)?;
        linked.push((skill.name.clone(), dest, skill.dir().to_path_buf()));
    }
    if scope == ScopeArg::Project {
        crate::frontends::trust::repin_after_own_change(cwd, &trust_before);
    }
    for (name, dest, src) in linked {
        println!(
            "Linked skill {} ({} scope): {} -> {}",
            one_line(&name),
            scope.name(),
            dest.display(),
            src.display()
        );
    }
    untrusted_note(cwd, scope);
    Ok(0)
}

fn uninstall(cwd: &Path, name: &str, scope: ScopeArg) -> Result<i32, AppError> {
    let target = scope.install_dir(cwd);
    let found = skills::load_dir(&target, scope == ScopeArg::Project);
    // The skill of that name, else a folder of that name (gemini-cli's fallback).
    let dir = match found.iter().find(|s| s.name == name) {
        Some(skill) => Some(skill.dir().to_path_buf()),
        None => {
            let by_name = target.join(name);
            (!bad_skill_dir_name(name) && std::fs::symlink_metadata(&by_name).is_ok())
                .then_some(by_name)
        }
    };
    // Never the install folder itself (a SKILL.md right in it).
    let Some(dir) = dir.filter(|d| d.parent() == Some(target.as_path())) else {
        let mut message = format!(
            "Skill \"{}\" is not installed in the {} scope ({}).",
            one_line(name),
            scope.name(),
            target.display()
        );
        let settings = settings_here(cwd)?;
        let elsewhere = skills::load(cwd, &settings);
        if let Some(other) = elsewhere.skills.iter().find(|s| s.name == name) {
            message.push_str(&format!(
                " It is found at {}, which `troupe skills uninstall` does not manage; remove that folder yourself (a gemini-cli skill: `gemini skills uninstall {}`).",
                other.dir().display(),
                one_line(name)
            ));
        }
        return Err(usage(message));
    };
    let trust_before = crate::settings::trust::is_trusted(cwd);
    remove_any(&dir)?;
    if scope == ScopeArg::Project {
        crate::frontends::trust::repin_after_own_change(cwd, &trust_before);
    }
    println!(
        "Uninstalled skill {} ({} scope): removed {}.",
        one_line(name),
        scope.name(),
        dir.display()
    );
    Ok(0)
}
