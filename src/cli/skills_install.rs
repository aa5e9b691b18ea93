//! `troupe skills install | link | uninstall`: placing skill folders into Troupe's
//! install folders (copied or linked) and removing them, in gemini-cli's words.

use std::path::{Path, PathBuf};

use super::install_files::{ask_consent, copy_dir, remove_any};
use super::skills::{settings_here, usage, ScopeArg};
use crate::engine::sanitize::one_line;
use crate::frontends::AppError;
use crate::settings::skills::{self, Skill};

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

/// What a change in the project's skills folder says in an untrusted folder.
fn untrusted_note(cwd: &Path, scope: ScopeArg) {
    if scope == ScopeArg::Project && !crate::cli::mcp::folder_trusted(cwd) {
        println!("Note: this folder is not trusted, so its project skills are not loaded; trust it with `troupe trust`, or install for yourself with `--scope user`.");
    }
}

/// How `install` and `link` put a found skill into the install folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placement {
    /// A copy of its folder.
    Copy,
    /// A symlink to its folder.
    Symlink,
}

/// Puts each of `found` into `target` as `how` says, replacing what has its name
/// there; `(name, where it is now, its source folder)` per skill.
fn place(
    cwd: &Path,
    found: &[Skill],
    target: &Path,
    scope: ScopeArg,
    how: Placement,
) -> Result<Vec<(String, PathBuf, PathBuf)>, AppError> {
    if let Some(bad) = found.iter().find(|s| bad_skill_dir_name(&s.name)) {
        return Err(usage(format!(
            "Invalid skill name \"{}\": it would not be a folder inside {}.",
            one_line(&bad.name),
            target.display()
        )));
    }
    let trust_before = crate::settings::trust::is_trusted(cwd);
    std::fs::create_dir_all(target)?;
    let mut placed = Vec::new();
    for skill in found {
        let dest = target.join(&skill.name);
        if std::fs::symlink_metadata(&dest).is_ok() {
            let at = match how {
                Placement::Copy => "",
                Placement::Symlink => " at the destination",
            };
            eprintln!(
                "Skill \"{}\" already exists{at}. Overwriting...",
                one_line(&skill.name)
            );
            remove_any(&dest)?;
        }
        match how {
            Placement::Copy => copy_dir(skill.dir(), &dest)?,
            Placement::Symlink => std::os::unix::fs::symlink(skill.dir(), &dest)?,
        }
        placed.push((skill.name.clone(), dest, skill.dir().to_path_buf()));
    }
    if scope == ScopeArg::Project {
        crate::frontends::trust::repin_after_own_change(cwd, &trust_before);
    }
    Ok(placed)
}

pub(super) fn install(
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
    let installed = place(cwd, &found, &target, scope, Placement::Copy)?;
    for (name, dest, _) in installed {
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

pub(super) fn link(
    cwd: &Path,
    path: &Path,
    scope: ScopeArg,
    consent: bool,
) -> Result<i32, AppError> {
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
    let linked = place(cwd, &found, &target, scope, Placement::Symlink)?;
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

pub(super) fn uninstall(cwd: &Path, name: &str, scope: ScopeArg) -> Result<i32, AppError> {
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
