//! gemini-cli 0.61's `getFolderStructure` (`utils/getFolderStructure.js`) with its
//! defaults, as `activate_skill` shows a skill's resources: a breadth-first walk of at
//! most 200 items (files and folders), entries in `localeCompare` order, files before
//! folders, `node_modules`, `.git`, `dist` and `__pycache__` shown as `name/...`
//! without their contents, drawn as a tree under the folder's absolute path.
//! Symlinks inside the folder are neither files nor folders to Node's `Dirent`, so
//! they are left out, as there.

use std::path::Path;

const MAX_ITEMS: usize = 200;
const TRUNCATION: &str = "...";
const IGNORED: [&str; 4] = ["node_modules", ".git", "dist", "__pycache__"];

#[derive(Default)]
struct Node {
    name: String,
    files: Vec<String>,
    folders: Vec<usize>,
    more_files: bool,
    more_folders: bool,
    ignored: bool,
}

/// The folder's structure as gemini-cli prints it, or its error text.
pub fn folder_structure(dir: &Path) -> String {
    let root = crate::settings::skills::absolute(dir);
    let Some(nodes) = read(&root) else {
        return format!(
            "Error: Could not read directory \"{}\". Check path and permissions.",
            root.display()
        );
    };
    let mut lines = Vec::new();
    format(&nodes, 0, "", true, true, &mut lines);
    let mut summary = format!("Showing up to {MAX_ITEMS} items (files + folders).");
    if truncated(&nodes, 0) {
        summary.push_str(&format!(" Folders or files indicated with {TRUNCATION} contain more items not shown, were ignored, or the display limit ({MAX_ITEMS} items) was reached."));
    }
    format!(
        "{summary}\n\n{}{}\n{}",
        root.display(),
        std::path::MAIN_SEPARATOR,
        lines.join("\n")
    )
}

/// `readFullStructure`: the nodes, the root first; `None` when the root is missing.
fn read(root: &Path) -> Option<Vec<Node>> {
    let mut nodes = vec![Node {
        name: root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        ..Node::default()
    }];
    let mut queue = std::collections::VecDeque::from([(0usize, root.to_path_buf())]);
    let mut count = 0usize;
    while let Some((index, path)) = queue.pop_front() {
        if count >= MAX_ITEMS {
            continue;
        }
        let mut entries: Vec<(String, std::fs::FileType)> = match std::fs::read_dir(&path) {
            Ok(entries) => entries
                .flatten()
                .filter_map(|e| Some((e.file_name().into_string().ok()?, e.file_type().ok()?)))
                .collect(),
            Err(e) if index == 0 && e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(_) => continue,
        };
        entries.sort_by(|a, b| crate::engine::text::locale_cmp(&a.0, &b.0));
        for (name, kind) in &entries {
            if !kind.is_file() {
                continue;
            }
            if count >= MAX_ITEMS {
                nodes[index].more_files = true;
                break;
            }
            nodes[index].files.push(name.clone());
            count += 1;
        }
        for (name, kind) in &entries {
            if !kind.is_dir() {
                continue;
            }
            if count >= MAX_ITEMS {
                nodes[index].more_folders = true;
                break;
            }
            let ignored = IGNORED.contains(&name.as_str());
            nodes.push(Node {
                name: name.clone(),
                ignored,
                ..Node::default()
            });
            let child = nodes.len() - 1;
            nodes[index].folders.push(child);
            count += 1;
            if !ignored {
                queue.push_back((child, path.join(name)));
            }
        }
    }
    Some(nodes)
}

/// `formatStructure`.
fn format(
    nodes: &[Node],
    index: usize,
    indent: &str,
    last: bool,
    is_root: bool,
    out: &mut Vec<String>,
) {
    let node = &nodes[index];
    let connector = if last { "└───" } else { "├───" };
    if !is_root || node.ignored {
        out.push(format!(
            "{indent}{connector}{}{}{}",
            node.name,
            std::path::MAIN_SEPARATOR,
            if node.ignored { TRUNCATION } else { "" }
        ));
    }
    let child_indent = match (is_root, last) {
        (true, _) => String::new(),
        (false, true) => format!("{indent}    "),
        (false, false) => format!("{indent}│   "),
    };
    let no_folders_after = node.folders.is_empty() && !node.more_folders;
    for (i, file) in node.files.iter().enumerate() {
        let last_file = i + 1 == node.files.len() && no_folders_after;
        let connector = if last_file {
            "└───"
        } else {
            "├───"
        };
        out.push(format!("{child_indent}{connector}{file}"));
    }
    if node.more_files {
        let connector = if no_folders_after {
            "└───"
        } else {
            "├───"
        };
        out.push(format!("{child_indent}{connector}{TRUNCATION}"));
    }
    for (i, &child) in node.folders.iter().enumerate() {
        let last_folder = i + 1 == node.folders.len() && !node.more_folders;
        format(nodes, child, &child_indent, last_folder, false, out);
    }
    if node.more_folders {
        out.push(format!("{child_indent}└───{TRUNCATION}"));
    }
}

fn truncated(nodes: &[Node], index: usize) -> bool {
    let node = &nodes[index];
    node.more_files
        || node.more_folders
        || node.ignored
        || node.folders.iter().any(|&c| truncated(nodes, c))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The expected text is what gemini-cli 0.61's `getFolderStructure` printed for
    /// the same folder (run under Node 20 from its `dist/`).
    #[test]
    fn a_skill_folder_prints_as_gemini_cli_prints_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("pdf-tools");
        std::fs::create_dir_all(dir.join("scripts")).unwrap();
        std::fs::create_dir_all(dir.join("references")).unwrap();
        std::fs::write(dir.join("SKILL.md"), "x").unwrap();
        std::fs::write(dir.join("README.txt"), "x").unwrap();
        std::fs::write(dir.join("scripts/extract.py"), "x").unwrap();
        std::fs::write(dir.join("references/api.md"), "x").unwrap();
        assert_eq!(
            folder_structure(&dir),
            format!(
                "Showing up to 200 items (files + folders).\n\n{}/\n├───README.txt\n├───SKILL.md\n├───references/\n│   └───api.md\n└───scripts/\n    └───extract.py",
                dir.display()
            )
        );
    }

    #[test]
    fn ignored_folders_and_the_item_limit_are_marked() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("s");
        std::fs::create_dir_all(dir.join("node_modules/x")).unwrap();
        std::fs::write(dir.join("SKILL.md"), "x").unwrap();
        assert_eq!(
            folder_structure(&dir),
            format!("Showing up to 200 items (files + folders). Folders or files indicated with ... contain more items not shown, were ignored, or the display limit (200 items) was reached.\n\n{}/\n├───SKILL.md\n└───node_modules/...", dir.display())
        );
        // 205 more files: the first 200 (in localeCompare order) are shown, then a
        // `...` for the files left and one for the folders (gemini-cli's output).
        for i in 0..205 {
            std::fs::write(dir.join(format!("f{i:03}")), "x").unwrap();
        }
        let text = folder_structure(&dir);
        assert!(
            text.ends_with("├───f198\n├───f199\n├───...\n└───..."),
            "{text}"
        );
        assert_eq!(text.lines().count(), 205);
        assert!(folder_structure(&tmp.path().join("none"))
            .starts_with("Error: Could not read directory"));
    }
}
