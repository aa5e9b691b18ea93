//! Agent Skills, as gemini-cli 0.61 finds them (`skills/skillLoader.js`,
//! `skills/skillManager.js`): a folder per skill holding `SKILL.md` — YAML front
//! matter with `name` and `description`, the body the instructions — and whatever
//! resource files the skill brings.
//!
//! Read from the user's `~/.gemini/skills`, `~/.agents/skills` (gemini-cli's two
//! places, under `GEMINI_CLI_HOME` when set) and `<troupe home>/skills`, then the
//! workspace's `.gemini/skills`, `.agents/skills` and `.troupe/skills` — the project
//! ones only in a trusted folder. A later skill of the same name replaces an earlier
//! one (project over user, `.agents` over `.gemini`, `.troupe` last), keeping the
//! earlier one's place in the list, with gemini-cli's conflict warning when the two
//! files differ.
//!
//! Disabled skills (`skills.disabled`, as `troupe skills disable` writes it into
//! Troupe's config, and gemini-cli's `skills.disabled` in its `settings.json`, as
//! `gemini skills disable` writes it) are found but not offered; `skills.enabled =
//! false` (or gemini-cli's) finds none.

use std::path::{Path, PathBuf};

/// One skill as its `SKILL.md` defines it.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    /// The front matter's `name`, with `:\/<>*?"|` replaced by `-` (gemini-cli's
    /// sanitising for a folder name).
    pub name: String,
    pub description: String,
    /// The `SKILL.md` file (absolute, symlinks not resolved).
    pub location: PathBuf,
    /// The instructions: the text after the front matter, trimmed.
    pub body: String,
    /// Read from the workspace (trusted folders only) rather than the user's home.
    pub project: bool,
    /// Named in a `skills.disabled` list: found, not offered.
    pub disabled: bool,
}

impl Skill {
    /// The skill's folder (its resources).
    pub fn dir(&self) -> &Path {
        self.location.parent().unwrap_or(Path::new("/"))
    }
}

/// What skill discovery found.
#[derive(Debug, Default)]
pub struct LoadedSkills {
    /// Every skill found, disabled ones included, in gemini-cli's order.
    pub skills: Vec<Skill>,
    /// gemini-cli's conflict warnings (a skill replacing another of its name).
    pub warnings: Vec<String>,
    /// Project skills left out because the folder is not trusted.
    pub untrusted: Vec<Skill>,
    /// Skills are off (`skills.enabled = false`, here or in gemini-cli's settings).
    pub off: bool,
}

impl LoadedSkills {
    /// The skills offered to the model: those not disabled.
    pub fn enabled(&self) -> Vec<Skill> {
        self.skills
            .iter()
            .filter(|s| !s.disabled)
            .cloned()
            .collect()
    }
}

/// What a start says about the project skills an untrusted folder leaves out.
pub fn untrusted_warning(count: usize) -> String {
    format!(
        "Skipping {count} project skill(s): this folder is not trusted (`troupe trust` trusts it)."
    )
}

/// gemini-cli's home for `.gemini` and `.agents`: `GEMINI_CLI_HOME`, else `HOME`.
pub fn gemini_home() -> PathBuf {
    std::env::var_os("GEMINI_CLI_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(crate::settings::home_dir)
}

/// The user's skills folder that `troupe skills install`, `link` and `uninstall` use:
/// `<troupe home>/skills`.
pub fn user_install_dir() -> PathBuf {
    crate::settings::troupe_home().join("skills")
}

/// The project's skills folder that `troupe skills install --scope project` uses.
pub fn project_install_dir(workspace: &Path) -> PathBuf {
    workspace.join(".troupe").join("skills")
}

/// The folders skills are read from, weakest first, each with whether it is a
/// project one.
pub fn skill_dirs(workspace: &Path) -> Vec<(PathBuf, bool)> {
    let gemini = gemini_home();
    vec![
        (gemini.join(".gemini").join("skills"), false),
        (gemini.join(".agents").join("skills"), false),
        (user_install_dir(), false),
        (workspace.join(".gemini").join("skills"), true),
        (workspace.join(".agents").join("skills"), true),
        (project_install_dir(workspace), true),
    ]
}

/// The skills of a session in `workspace` under `settings` (project ones only when
/// the folder is trusted), with the disabled ones marked.
pub fn load(workspace: &Path, settings: &crate::settings::Settings) -> LoadedSkills {
    let trusted = settings.trusted;
    if !settings.skills.enabled || gemini_setting_off(workspace, trusted) {
        return LoadedSkills {
            off: true,
            ..LoadedSkills::default()
        };
    }
    let disabled = disabled_names(workspace, settings);
    // The enabled extensions' `skills/` first: gemini-cli's weakest skills.
    let mut dirs: Vec<(PathBuf, bool)> = settings
        .loaded_extensions
        .active()
        .map(|e| (e.dir("skills"), false))
        .collect();
    dirs.extend(skill_dirs(workspace));
    let mut loaded = load_from(&dirs, trusted, &disabled);
    let extensions = &settings.loaded_extensions;
    for skill in &mut loaded.skills {
        skill.body = extensions.hydrate_for(&skill.location, &skill.body, workspace);
        skill.description = extensions.hydrate_for(&skill.location, &skill.description, workspace);
    }
    loaded
}

/// [`load`] with the folders and the disabled names explicit.
pub fn load_from(dirs: &[(PathBuf, bool)], trusted: bool, disabled: &[String]) -> LoadedSkills {
    let mut out = LoadedSkills::default();
    for (dir, project) in dirs {
        let found = load_dir(dir, *project);
        if *project && !trusted {
            out.untrusted.extend(found);
            continue;
        }
        add_with_precedence(&mut out, found);
    }
    let disabled: Vec<String> = disabled.iter().map(|n| n.to_lowercase()).collect();
    for skill in &mut out.skills {
        skill.disabled = disabled.contains(&skill.name.to_lowercase());
    }
    out
}

/// gemini-cli's `addSkillsWithPrecedence`: a skill replaces the one of the same name
/// in place (a JavaScript `Map` keeps the first insertion's position), with a warning
/// when they are different files.
fn add_with_precedence(out: &mut LoadedSkills, found: Vec<Skill>) {
    for skill in found {
        match out.skills.iter_mut().find(|s| s.name == skill.name) {
            Some(existing) => {
                if existing.location != skill.location {
                    out.warnings.push(format!(
                        "Skill conflict detected: \"{}\" from \"{}\" is overriding the same skill from \"{}\".",
                        skill.name,
                        skill.location.display(),
                        existing.location.display()
                    ));
                }
                *existing = skill;
            }
            None => out.skills.push(skill),
        }
    }
}

/// gemini-cli's `loadSkillsFromDir`: `SKILL.md` in the folder itself and in each of
/// its subfolders (`*/SKILL.md`: not hidden ones, symlinked folders followed), those
/// that parse. Subfolders in byte order of their names.
pub fn load_dir(dir: &Path, project: bool) -> Vec<Skill> {
    let dir = absolute(dir);
    if !dir.is_dir() {
        return Vec::new();
    }
    let mut files = vec![dir.join("SKILL.md")];
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            !name.starts_with('.') && name != "node_modules"
        })
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    subdirs.sort();
    files.extend(subdirs.into_iter().map(|d| d.join("SKILL.md")));
    files
        .into_iter()
        .filter(|f| f.is_file())
        .filter_map(|f| {
            let text = std::fs::read_to_string(&f).ok()?;
            let (name, description, body) = parse(&text)?;
            Some(Skill {
                name,
                description,
                location: f,
                body,
                project,
                disabled: false,
            })
        })
        .collect()
}

/// `path` made absolute against the current directory, `.` and `..` resolved
/// lexically (Node's `path.resolve`).
pub fn absolute(path: &Path) -> PathBuf {
    let joined = match path.is_absolute() {
        true => path.to_path_buf(),
        false => std::env::current_dir().unwrap_or_default().join(path),
    };
    crate::engine::paths::normalize_lexically(joined)
}

/// Characters gemini-cli replaces by `-` in a skill's name.
const NAME_UNSAFE: &[char] = &[':', '\\', '/', '<', '>', '*', '?', '"', '|'];

/// gemini-cli's `loadSkillFromFile` on a file's text: `(name, description, body)`, or
/// `None` when it has no front matter (`^---\r?\n([\s\S]*?)\r?\n---(?:\r?\n([\s\S]*))?`)
/// or the front matter lacks a name or a description.
pub fn parse(text: &str) -> Option<(String, String, String)> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    // The shortest front matter followed by `\r?\n---`.
    let (yaml, after) = (0..=rest.len())
        .filter(|&i| rest.is_char_boundary(i))
        .find_map(|i| {
            let tail = &rest[i..];
            tail.strip_prefix("\r\n---")
                .or_else(|| tail.strip_prefix("\n---"))
                .map(|after| (&rest[..i], after))
        })?;
    let body = after
        .strip_prefix("\r\n")
        .or_else(|| after.strip_prefix('\n'))
        .map(str::trim)
        .unwrap_or("");
    let (name, description) = front_matter(yaml)?;
    let name = name.replace(NAME_UNSAFE, "-");
    Some((name, description, body.to_string()))
}

/// gemini-cli's `parseFrontmatter`: the YAML's string `name` and `description`, else
/// its simple line parser (for a description with a `: ` that breaks the YAML).
fn front_matter(yaml: &str) -> Option<(String, String)> {
    if let Ok(value) = yaml_serde::from_str::<yaml_serde::Value>(yaml) {
        let field = |key: &str| value.get(key).and_then(|v| v.as_str()).map(str::to_string);
        if let (Some(name), Some(description)) = (field("name"), field("description")) {
            return Some((name, description));
        }
    }
    simple_front_matter(yaml)
}

/// gemini-cli's `parseSimpleFrontmatter`: `name:` and `description:` lines (the
/// description continued by indented lines, joined with spaces).
fn simple_front_matter(yaml: &str) -> Option<(String, String)> {
    let lines: Vec<&str> = yaml
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let (mut name, mut description) = (None, None);
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_start();
        if let Some(value) = line.strip_prefix("name:") {
            name = Some(value.trim().to_string());
        } else if let Some(value) = line.strip_prefix("description:") {
            let mut parts = vec![value.trim().to_string()];
            while let Some(next) = lines.get(i + 1) {
                let continued = next.starts_with([' ', '\t']) && !next.trim().is_empty();
                if !continued {
                    break;
                }
                parts.push(next.trim().to_string());
                i += 1;
            }
            parts.retain(|p| !p.is_empty());
            description = Some(parts.join(" "));
        }
        i += 1;
    }
    Some((name?, description?))
}

/// Every `skills.disabled` that applies, together (gemini-cli merges the lists of its
/// settings files as a union): the effective setting (flags and variables included),
/// the user's and — in a trusted folder — the project's Troupe config, and
/// gemini-cli's user and (trusted) workspace `settings.json`.
pub fn disabled_names(workspace: &Path, settings: &crate::settings::Settings) -> Vec<String> {
    let mut names = settings.skills.disabled.clone();
    let mut files = vec![crate::settings::troupe_home().join("config.toml")];
    if settings.trusted {
        files.push(workspace.join(".troupe").join("config.toml"));
    }
    for file in files {
        names.extend(toml_disabled(&file));
    }
    for file in gemini_settings_files(workspace, settings.trusted) {
        names.extend(gemini_disabled(&file));
    }
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    names
}

/// `skills.disabled` of one Troupe config file (none when it has none or cannot be
/// read: the settings loader reports a bad file).
pub fn toml_disabled(file: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    let Ok(table) = text.parse::<toml::Table>() else {
        return Vec::new();
    };
    table
        .get("skills")
        .and_then(|s| s.get("disabled"))
        .and_then(toml::Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(|n| n.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// gemini-cli's `settings.json` files that apply: the user's, and the workspace's in
/// a trusted folder.
pub fn gemini_settings_files(workspace: &Path, trusted: bool) -> Vec<PathBuf> {
    let mut files = vec![gemini_home().join(".gemini").join("settings.json")];
    let project = workspace.join(".gemini").join("settings.json");
    if trusted && !files.contains(&project) {
        files.push(project);
    }
    files
}

fn gemini_json(file: &Path) -> Option<serde_json::Value> {
    serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok()
}

/// `skills.disabled` of one of gemini-cli's `settings.json`.
pub fn gemini_disabled(file: &Path) -> Vec<String> {
    let Some(json) = gemini_json(file) else {
        return Vec::new();
    };
    json["skills"]["disabled"]
        .as_array()
        .map(|names| {
            names
                .iter()
                .filter_map(|n| n.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether one of gemini-cli's settings files that apply says `skills.enabled: false`.
fn gemini_setting_off(workspace: &Path, trusted: bool) -> bool {
    gemini_settings_files(workspace, trusted)
        .iter()
        .filter_map(|f| gemini_json(f))
        .any(|json| json["skills"]["enabled"] == serde_json::Value::Bool(false))
}

/// The "Available Agent Skills" section of gemini-cli 0.61's system prompt
/// (`renderAgentSkills` of `prompts/snippets.js`), empty when there are no skills.
pub fn prompt_section(skills: &[Skill]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let xml: Vec<String> = skills
        .iter()
        .map(|s| {
            format!(
                "  <skill>\n    <name>{}</name>\n    <description>{}</description>\n    <location>{}</location>\n  </skill>",
                s.name,
                s.description,
                s.location.display()
            )
        })
        .collect();
    format!(
        "# Available Agent Skills\n\nYou have access to the following specialized skills. To activate a skill and receive its detailed instructions, call the `activate_skill` tool with the skill's name.\n\n<available_skills>\n{}\n</available_skills>",
        xml.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_and_body_as_gemini_cli_reads_them() {
        let (name, description, body) =
            parse("---\nname: pdf-tools\ndescription: Reads PDFs.\n---\n\n# PDF\n\nDo it.\n\n")
                .unwrap();
        assert_eq!(
            (name.as_str(), description.as_str(), body.as_str()),
            ("pdf-tools", "Reads PDFs.", "# PDF\n\nDo it.")
        );
        // A folded YAML description (gemini-cli's built-in skills write them so).
        let (_, folded, _) =
            parse("---\nname: a\ndescription:\n  Use when the user\n  asks.\n---\nx").unwrap();
        assert_eq!(folded, "Use when the user asks.");
        // `: ` breaks the YAML: the simple parser reads the lines.
        let (_, colon, _) =
            parse("---\nname: a\ndescription: Use when: the user asks\n---\nbody").unwrap();
        assert_eq!(colon, "Use when: the user asks");
        // CRLF, and a front matter that ends the file.
        assert_eq!(
            parse("---\r\nname: a\r\ndescription: d\r\n---"),
            Some(("a".into(), "d".into(), String::new()))
        );
        // The name as a folder name.
        assert_eq!(
            parse("---\nname: team:lint/fix\ndescription: d\n---\n")
                .unwrap()
                .0,
            "team-lint-fix"
        );
        assert_eq!(parse("# no front matter"), None);
        assert_eq!(parse("---\nname: a\n---\nno description"), None);
        assert_eq!(parse("---\nname: a\ndescription: d\n"), None);
    }

    fn skill_at(root: &Path, rel: &str, name: &str) -> PathBuf {
        let dir = root.join(rel);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("SKILL.md");
        std::fs::write(
            &file,
            format!("---\nname: {name}\ndescription: {name} from {rel}\n---\nbody"),
        )
        .unwrap();
        file
    }

    #[test]
    fn later_folders_win_in_place_and_untrusted_project_skills_are_set_aside() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        skill_at(root, "user/a", "alpha");
        skill_at(root, "user/b", "beta");
        skill_at(root, "user/.hidden", "hidden");
        let project_alpha = skill_at(root, "project/alpha", "alpha");
        let dirs = vec![(root.join("user"), false), (root.join("project"), true)];
        let trusted = load_from(&dirs, true, &["BETA".into()]);
        let names: Vec<&str> = trusted.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["alpha", "beta"]);
        assert_eq!(trusted.skills[0].location, project_alpha);
        assert!(trusted.skills[1].disabled);
        assert_eq!(trusted.enabled().len(), 1);
        assert_eq!(trusted.warnings.len(), 1);
        assert!(trusted.warnings[0].starts_with("Skill conflict detected: \"alpha\" from \""));
        let untrusted = load_from(&dirs, false, &[]);
        assert_eq!(untrusted.skills.len(), 2);
        assert_eq!(untrusted.skills[0].location, root.join("user/a/SKILL.md"));
        assert_eq!(untrusted.untrusted.len(), 1);
        assert!(untrusted.warnings.is_empty());
    }
}
