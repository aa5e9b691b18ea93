//! `@path` imports inside context files: a token `@some/file.md` (at the start of a
//! line or after whitespace, outside code) is replaced by that file's text, resolved
//! against the importing file's directory. Imports nest up to [`MAX_DEPTH`]; cycles,
//! missing files and files outside the allowed roots leave a comment saying why.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;

use super::workspace::normalize_lexically;

/// How deep imports may nest.
pub const MAX_DEPTH: usize = 5;

/// Reads an imported file: given the allowed roots and the absolute path, the file's
/// real path and text, or why not. It must not follow a link out of the roots (the
/// FileSystem actor's confined read, [`crate::platform::filesystem::confined::read_text_beneath`]).
pub type ImportReader<'a> = &'a dyn Fn(&[PathBuf], &Path) -> Result<(PathBuf, String), String>;

/// Expands the imports of `text`, which was read from `file`. Imported files must lie
/// under one of `allowed`; `read` reads them.
pub fn expand_imports(text: &str, file: &Path, allowed: &[PathBuf], read: ImportReader) -> String {
    let mut chain = vec![real(file)];
    expand(text, file, allowed, read, &mut chain)
}

fn real(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| normalize_lexically(path))
}

fn import_pattern() -> Option<&'static Regex> {
    static PATTERN: OnceLock<Option<Regex>> = OnceLock::new();
    PATTERN
        .get_or_init(|| Regex::new(r"(^|\s)@((?:\.{1,2}/|/|~/)?[^\s`@]+\.[A-Za-z0-9]+)").ok())
        .as_ref()
}

fn expand(
    text: &str,
    file: &Path,
    allowed: &[PathBuf],
    read: ImportReader,
    chain: &mut Vec<PathBuf>,
) -> String {
    let Some(pattern) = import_pattern() else {
        return text.to_string();
    };
    let base = file.parent().unwrap_or(Path::new("/"));
    let mut out = String::with_capacity(text.len());
    let mut in_fence = false;
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            out.push_str(line);
            continue;
        }
        if in_fence || !line.contains('@') {
            out.push_str(line);
            continue;
        }
        let mut last = 0;
        for caps in pattern.captures_iter(line) {
            let (Some(whole), Some(target)) = (caps.get(0), caps.get(2)) else {
                continue;
            };
            // Inside inline code (an odd number of backticks before it): leave as is.
            if line[..whole.start()].matches('`').count() % 2 == 1 {
                continue;
            }
            let lead = caps.get(1).map_or("", |m| m.as_str());
            out.push_str(&line[last..whole.start()]);
            out.push_str(lead);
            out.push_str(&import_one(target.as_str(), base, allowed, read, chain));
            last = whole.end();
        }
        out.push_str(&line[last..]);
    }
    out
}

fn import_one(
    target: &str,
    base: &Path,
    allowed: &[PathBuf],
    read: ImportReader,
    chain: &mut Vec<PathBuf>,
) -> String {
    let failed = |why: &str| format!("<!-- Import failed: {target} - {why} -->");
    let path = match target.strip_prefix("~/") {
        Some(rest) => crate::settings::home_dir().join(rest),
        None => base.join(target),
    };
    let real_path = real(&path);
    if !allowed.iter().any(|root| real_path.starts_with(root)) {
        return failed("path is outside the allowed directories");
    }
    if chain.contains(&real_path) {
        return failed("circular import");
    }
    if chain.len() > MAX_DEPTH {
        return failed(&format!("imports nest deeper than {MAX_DEPTH} levels"));
    }
    // The check above is by name; the read is confined (a link swapped in meanwhile
    // cannot lead out), and the cycle check uses what was really opened.
    let (real_path, text) = match read(allowed, &path) {
        Ok(read) => read,
        Err(why) => return failed(&why),
    };
    if chain.contains(&real_path) {
        return failed("circular import");
    }
    chain.push(real_path.clone());
    let expanded = expand(&text, &real_path, allowed, read, chain);
    chain.pop();
    format!(
        "<!-- Imported from: {target} -->\n{}\n<!-- End of import from: {target} -->",
        expanded.trim_end()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_expand_nest_and_refuse_cycles_and_escapes() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let project = root.join("project");
        std::fs::create_dir_all(project.join("docs")).unwrap();
        std::fs::write(project.join("docs/style.md"), "Use tabs.\n@./more.md\n").unwrap();
        std::fs::write(project.join("docs/more.md"), "More rules.\n@../AGENTS.md\n").unwrap();
        std::fs::write(root.join("secret.txt"), "TOP SECRET").unwrap();
        let main = project.join("AGENTS.md");
        let text = "Intro\n@docs/style.md\nmail me at a@b.com\n`@docs/style.md` stays\n```\n@docs/style.md\n```\nsee @../secret.txt\n";
        std::fs::write(&main, text).unwrap();
        let read = |roots: &[PathBuf], p: &Path| {
            crate::platform::filesystem::confined::read_text_beneath(roots, p, 1 << 20)
        };
        let out = expand_imports(text, &main, std::slice::from_ref(&project), &read);
        assert!(out.contains("<!-- Imported from: docs/style.md -->\nUse tabs.\n<!-- Imported from: ./more.md -->\nMore rules.\n<!-- Import failed: ../AGENTS.md - circular import -->"), "{out}");
        assert!(out.contains("mail me at a@b.com"));
        assert!(out.contains("`@docs/style.md` stays"));
        assert!(out.contains("```\n@docs/style.md\n```"));
        assert!(out.contains(
            "<!-- Import failed: ../secret.txt - path is outside the allowed directories -->"
        ));
        assert!(!out.contains("TOP SECRET"));
    }

    #[test]
    fn a_link_out_of_the_project_is_not_followed_even_when_the_name_check_passes() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let project = root.join("project");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(root.join("secret.md"), "TOP SECRET").unwrap();
        std::os::unix::fs::symlink(root.join("secret.md"), project.join("link.md")).unwrap();
        // A reader as the confined one is, fed a check that was fooled (a swap after
        // the name check): the confined read still refuses.
        let out = crate::platform::filesystem::confined::read_text_beneath(
            std::slice::from_ref(&project),
            &project.join("link.md"),
            1 << 20,
        );
        assert!(out.is_err(), "{out:?}");
        std::os::unix::fs::symlink("../project/ok.md", project.join("rel.md")).unwrap();
        std::fs::write(project.join("ok.md"), "fine").unwrap();
        let (real, text) = crate::platform::filesystem::confined::read_text_beneath(
            std::slice::from_ref(&project),
            &project.join("rel.md"),
            1 << 20,
        )
        .unwrap();
        assert_eq!((real, text.as_str()), (project.join("ok.md"), "fine"));
    }
}
