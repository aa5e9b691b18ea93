//! gemini-cli 0.61's `extension-enablement.json` (in the extensions folder): for each
//! extension, a list of path rules, `/dir/*` (enabled in that folder and below) or
//! `!/dir/*` (disabled there); the last rule matching the working folder decides, and
//! an extension no rule matches is enabled. `-e/--extensions` overrides the file: only
//! the extensions it names are enabled (`none`: none).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The enablement file's name.
pub const FILE: &str = "extension-enablement.json";

/// One rule (gemini-cli's `Override`).
#[derive(Debug, Clone, PartialEq)]
struct Rule {
    /// With leading and trailing `/`.
    base: String,
    disable: bool,
    subdirs: bool,
}

impl Rule {
    /// A rule as the file writes it (`!` first, `*` last).
    fn from_file(text: &str) -> Self {
        let disable = text.starts_with('!');
        let base = text.strip_prefix('!').unwrap_or(text);
        let subdirs = base.ends_with('*');
        let base = base.strip_suffix('*').unwrap_or(base).to_string();
        Self {
            base,
            disable,
            subdirs,
        }
    }

    /// A rule for a folder (`!` first when it disables).
    fn from_input(text: &str, subdirs: bool) -> Self {
        let disable = text.starts_with('!');
        let base = with_slashes(text.strip_prefix('!').unwrap_or(text));
        Self {
            base,
            disable,
            subdirs,
        }
    }

    fn output(&self) -> String {
        format!(
            "{}{}{}",
            if self.disable { "!" } else { "" },
            self.base,
            if self.subdirs { "*" } else { "" }
        )
    }

    /// gemini-cli's `globToRegex` of `base` (+ `*`) tested on `path`: a `*` (with the
    /// `/` before it) matches any rest, the other characters themselves.
    fn glob_matches(glob: &str, path: &str) -> bool {
        match glob.find('*') {
            None => glob == path,
            Some(star) => {
                let (before, after) = (&glob[..star], &glob[star + 1..]);
                let (prefix, slash) = match before.strip_suffix('/') {
                    Some(p) => (p, true),
                    None => (before, false),
                };
                let Some(rest) = path.strip_prefix(prefix) else {
                    return false;
                };
                // `(/.*)?` (or `(.*)?`) then the remainder of the glob.
                (0..=rest.len())
                    .filter(|&i| rest.is_char_boundary(i))
                    .any(|i| {
                        let (taken, left) = rest.split_at(i);
                        let ok = taken.is_empty() || !slash || taken.starts_with('/');
                        ok && Self::glob_matches(after, left)
                    })
            }
        }
    }

    fn glob(&self) -> String {
        format!("{}{}", self.base, if self.subdirs { "*" } else { "" })
    }

    fn matches(&self, path: &str) -> bool {
        Self::glob_matches(&self.glob(), path)
    }

    fn conflicts_with(&self, other: &Rule) -> bool {
        self.base == other.base && (self.subdirs != other.subdirs || self.disable != other.disable)
    }

    fn is_child_of(&self, parent: &Rule) -> bool {
        parent.subdirs && parent.matches(&self.base)
    }
}

/// gemini-cli's `ensureLeadingAndTrailingSlash`.
fn with_slashes(path: &str) -> String {
    let mut out = path.replace('\\', "/");
    if !out.starts_with('/') {
        out.insert(0, '/');
    }
    if !out.ends_with('/') {
        out.push('/');
    }
    out
}

/// The enablement file of an extensions folder, read and written.
#[derive(Debug, Clone)]
pub struct Enablement {
    file: PathBuf,
    /// `-e` names, lower-cased; empty: the file decides.
    only: Vec<String>,
}

impl Enablement {
    /// The file in `extensions_dir`, with the `-e` names (empty when not given).
    pub fn new(extensions_dir: &Path, only: &[String]) -> Self {
        Self {
            file: extensions_dir.join(FILE),
            only: only.iter().map(|n| n.to_lowercase()).collect(),
        }
    }

    /// The `-e` names that are no extension of `names` (`none` aside).
    pub fn unknown_overrides(&self, names: &[&str]) -> Vec<String> {
        self.only
            .iter()
            .filter(|o| *o != "none" && !names.iter().any(|n| n.to_lowercase() == **o))
            .cloned()
            .collect()
    }

    /// Whether `name` is enabled in the folder `path`.
    pub fn is_enabled(&self, name: &str, path: &Path) -> bool {
        if self.only.len() == 1 && self.only[0] == "none" {
            return false;
        }
        if !self.only.is_empty() {
            return self.only.contains(&name.to_lowercase());
        }
        let here = with_slashes(&path.display().to_string());
        let mut enabled = true;
        for rule in self.rules(name) {
            if rule.matches(&here) {
                enabled = !rule.disable;
            }
        }
        enabled
    }

    fn read(&self) -> Map<String, Value> {
        std::fs::read_to_string(&self.file)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default()
    }

    fn rules(&self, name: &str) -> Vec<Rule> {
        self.read()
            .get(name)
            .and_then(|e| e.get("overrides"))
            .and_then(Value::as_array)
            .map(|rules| {
                rules
                    .iter()
                    .filter_map(Value::as_str)
                    .map(Rule::from_file)
                    .collect()
            })
            .unwrap_or_default()
    }

    fn write(&self, config: &Map<String, Value>) -> std::io::Result<()> {
        if let Some(dir) = self.file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let text = serde_json::to_string_pretty(&Value::Object(config.clone()))
            .map_err(std::io::Error::other)?;
        std::fs::write(&self.file, text)
    }

    /// Enables `name` in `folder` and below (gemini-cli's `enable(name, true, path)`):
    /// the rules it replaces (same folder, or below it) are dropped.
    pub fn enable(&self, name: &str, folder: &Path) -> std::io::Result<()> {
        self.add_rule(name, &folder.display().to_string())
    }

    /// Disables `name` in `folder` and below.
    pub fn disable(&self, name: &str, folder: &Path) -> std::io::Result<()> {
        self.add_rule(name, &format!("!{}", folder.display()))
    }

    fn add_rule(&self, name: &str, input: &str) -> std::io::Result<()> {
        let mut config = self.read();
        let new = Rule::from_input(input, true);
        let mut rules: Vec<Rule> = self
            .rules(name)
            .into_iter()
            .filter(|r| !(r.conflicts_with(&new) || *r == new || r.is_child_of(&new)))
            .collect();
        rules.push(new);
        let list = rules.iter().map(|r| Value::String(r.output())).collect();
        let mut entry = Map::new();
        entry.insert("overrides".to_string(), Value::Array(list));
        config.insert(name.to_string(), Value::Object(entry));
        self.write(&config)
    }

    /// Forgets `name`'s rules (at uninstall).
    pub fn remove(&self, name: &str) -> std::io::Result<()> {
        let mut config = self.read();
        if config.shift_remove(name).is_some() {
            self.write(&config)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_match_as_gemini_cli_globs_do() {
        let r = Rule::from_file("/home/u/*");
        assert!(r.subdirs && !r.disable);
        assert!(r.matches("/home/u/"));
        assert!(r.matches("/home/u/proj/"));
        assert!(!r.matches("/home/user2/"));
        let exact = Rule::from_file("!/w/");
        assert!(exact.disable && exact.matches("/w/") && !exact.matches("/w/x/"));
    }

    #[test]
    fn the_last_matching_rule_wins_and_e_overrides_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let e = Enablement::new(dir.path(), &[]);
        let home = Path::new("/home/u");
        let ws = Path::new("/home/u/proj");
        assert!(e.is_enabled("x", ws));
        e.enable("x", home).unwrap();
        e.disable("x", ws).unwrap();
        assert!(!e.is_enabled("x", ws));
        assert!(e.is_enabled("x", home));
        let text = std::fs::read_to_string(dir.path().join(FILE)).unwrap();
        assert_eq!(
            text,
            "{\n  \"x\": {\n    \"overrides\": [\n      \"/home/u/*\",\n      \"!/home/u/proj/*\"\n    ]\n  }\n}"
        );
        // Enabling at home again drops the rule below it.
        e.enable("x", home).unwrap();
        assert!(e.is_enabled("x", ws));
        assert_eq!(e.rules("x").len(), 1);
        assert!(!Enablement::new(dir.path(), &["none".into()]).is_enabled("x", ws));
        let only = Enablement::new(dir.path(), &["Y".into()]);
        assert!(!only.is_enabled("x", ws) && only.is_enabled("y", ws));
        assert_eq!(only.unknown_overrides(&["x"]), ["y"]);
        e.remove("x").unwrap();
        assert!(e.rules("x").is_empty());
    }
}
