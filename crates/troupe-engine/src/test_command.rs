//! Where a project states how its tests run (`model.find_test_command`, the small
//! profile): the README's own command first, then a `Makefile`'s `test` target,
//! `package.json`'s `test` script, pytest's section of `pyproject.toml`, a `Cargo.toml`.
//! Pure: the caller reads the files ([`PROJECT_FILES`]) and passes their texts.

use serde_json::Value;

use crate::request_intent::is_test_command;

/// The files looked at, in the order their word counts (first found wins).
pub const PROJECT_FILES: &[&str] = &[
    "README.md",
    "README.rst",
    "README.txt",
    "README",
    "Makefile",
    "package.json",
    "pyproject.toml",
    "Cargo.toml",
];

/// A test command and the file that states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestCommand {
    /// The command, as the file states it (`python3 -m pytest -q`, `make test`).
    pub command: String,
    /// The file that states it (`README.md`, `Makefile`, …).
    pub source: String,
}

/// The test command `files` (name, text; any order) state, by the order of
/// [`PROJECT_FILES`].
pub fn find(files: &[(&str, &str)]) -> Option<TestCommand> {
    PROJECT_FILES.iter().find_map(|name| {
        let (_, text) = files.iter().find(|(n, _)| n == name)?;
        let command = match *name {
            "Makefile" => from_makefile(text),
            "package.json" => from_package_json(text),
            "pyproject.toml" => text
                .contains("[tool.pytest")
                .then(|| "python3 -m pytest -q".to_string()),
            "Cargo.toml" => text.contains("[package]").then(|| "cargo test".to_string()),
            _ => from_readme(text),
        }?;
        Some(TestCommand {
            command,
            source: name.to_string(),
        })
    })
}

/// The first command of a README that runs tests: a line of a fenced block, or a
/// span in backquotes, that [`is_test_command`] (a leading `$ ` taken off).
fn from_readme(text: &str) -> Option<String> {
    let mut fenced = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let mut candidates: Vec<&str> = Vec::new();
        if fenced || line.starts_with("    ") {
            candidates.push(trimmed);
        }
        candidates.extend(trimmed.split('`').skip(1).step_by(2));
        for candidate in candidates {
            let command = candidate.trim().trim_start_matches("$ ").trim();
            let runs = command.split_whitespace().count() >= 2 || command == "pytest";
            if runs && is_test_command(command) && !command.starts_with('#') {
                return Some(command.to_string());
            }
        }
    }
    None
}

/// `make test` (or `make check`) when the Makefile has that target.
fn from_makefile(text: &str) -> Option<String> {
    ["test", "check"].into_iter().find_map(|target| {
        text.lines()
            .any(|l| l.starts_with(&format!("{target}:")))
            .then(|| format!("make {target}"))
    })
}

/// `npm test` when `package.json` has a test script that is not npm's placeholder.
fn from_package_json(text: &str) -> Option<String> {
    let doc: Value = serde_json::from_str(text).ok()?;
    let script = doc.get("scripts")?.get("test")?.as_str()?;
    (!script.contains("no test specified")).then(|| "npm test".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(files: &[(&str, &str)]) -> Option<(String, String)> {
        find(files).map(|t| (t.command, t.source))
    }

    #[test]
    fn the_readme_says_first_then_the_project_files() {
        let readme = "# Shop\n\nRun the tests with `python3 -m pytest -q` from the root.\n";
        let pyproject = "[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n";
        assert_eq!(
            found(&[("pyproject.toml", pyproject), ("README.md", readme)]),
            Some(("python3 -m pytest -q".into(), "README.md".into()))
        );
        let fenced = "## Tests\n\n```sh\n$ python3 -m unittest discover -s tests\n```\n";
        assert_eq!(
            found(&[("README.md", fenced)]),
            Some((
                "python3 -m unittest discover -s tests".into(),
                "README.md".into()
            ))
        );
        assert_eq!(
            found(&[
                ("README.md", "# A project about tests\n"),
                ("pyproject.toml", pyproject)
            ]),
            Some(("python3 -m pytest -q".into(), "pyproject.toml".into()))
        );
        assert_eq!(
            found(&[("Makefile", "all:\n\tcc x.c\ntest: all\n\t./run\n")]),
            Some(("make test".into(), "Makefile".into()))
        );
        let npm = r#"{"scripts": {"test": "jest"}}"#;
        assert_eq!(
            found(&[("package.json", npm)]).map(|f| f.0),
            Some("npm test".into())
        );
        let placeholder = r#"{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}"#;
        assert_eq!(found(&[("package.json", placeholder)]), None);
        assert_eq!(
            found(&[("Cargo.toml", "[package]\nname = \"x\"\n")]).map(|f| f.0),
            Some("cargo test".into())
        );
        assert_eq!(found(&[("README.md", "Use `ls` to look around.\n")]), None);
    }
}
