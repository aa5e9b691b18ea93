//! `@path` in a prompt (gemini-cli's `atCommandProcessor`): each referenced file,
//! directory (everything below it) or glob of the workspace is read on the FileSystem
//! actor's pool — the same confinement, default excludes and ignore files as
//! `read_many_files` — and the prompt becomes the text followed by gemini-cli's
//! `--- Content from referenced files ---` block; images, PDFs and audio named
//! explicitly go as inline data. Used by the REPL and by `-p`.

use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

use crate::engine::at_refs::{self, PromptPiece};
use crate::platform::filesystem::FsClient;
use crate::platform::ignore_rules::{FilterOptions, IgnoreRules};
use crate::platform::workspace::Workspace;
use crate::protocol::content::Part;
use crate::tools::file_walk::{glob_matcher, walk_files};
use crate::tools::glob::sort_entries;
use crate::tools::read_many_files::gather_for_references;

/// gemini-cli's `REFERENCE_CONTENT_START`.
pub const REFERENCE_CONTENT_START: &str = "--- Content from referenced files ---";
const END_OF_CONTENT: &str = "\n--- End of content ---";
const NOTHING_FOUND: &str = "No files matching the criteria were found or all were skipped.";

/// A prompt with its references read.
#[derive(Debug, Clone, PartialEq)]
pub struct Expanded {
    /// What the model gets.
    pub parts: Vec<Part>,
    /// What the user is told (files read, ignored or skipped).
    pub notes: Vec<String>,
    /// What the user must be told: files cut to fit the context window.
    pub warnings: Vec<String>,
}

/// The characters the content of all `@` references of one prompt may take: the share
/// of the model's context window one tool result may take
/// (`model.compression.tool_result_share`).
pub fn char_budget(services: &crate::tools::Services) -> usize {
    let compression = &services.settings.model.compression;
    crate::engine::context_budget::result_char_budget(
        compression.token_limit(&services.model_name),
        compression.tool_result_share,
    )
}

/// Reads the references of `query`; `None` when it has none that resolve (the prompt
/// then goes as typed, as gemini-cli does). Their text content together is cut to
/// `max_chars` characters (see [`char_budget`]), each file's head kept with a note.
pub async fn expand(
    query: &str,
    fs: &FsClient,
    cancel: CancellationToken,
    max_chars: usize,
) -> Result<Option<Expanded>, String> {
    if !query.contains('@') {
        return Ok(None);
    }
    let expansion = Expansion {
        query: query.to_string(),
        cancel,
        max_chars,
    };
    fs.perform(expansion).await.map_err(|e| e.to_string())?
}

/// The expansion of one query's `@` references ([`expand_in`]), on the FileSystem pool.
struct Expansion {
    query: String,
    cancel: CancellationToken,
    max_chars: usize,
}

impl crate::platform::filesystem::FsWork for Expansion {
    type Output = Result<Option<Expanded>, String>;
    fn perform(self, ws: &crate::platform::filesystem::Confined) -> Self::Output {
        expand_in(ws, &self.query, &self.cancel, self.max_chars)
    }
}

/// A reference that resolved: the piece it came from, what is read, how it is named.
struct Resolved {
    piece: usize,
    spec: String,
    label: String,
    absolute: Option<PathBuf>,
}

fn expand_in(
    ws: &crate::platform::filesystem::Confined,
    query: &str,
    cancel: &CancellationToken,
    max_chars: usize,
) -> Result<Option<Expanded>, String> {
    let pieces = at_refs::parse(query);
    let mut notes = Vec::new();
    let mut resolved: Vec<Resolved> = Vec::new();
    let mut git_rules = IgnoreRules::new(FilterOptions {
        respect_git_ignore: true,
        respect_gemini_ignore: false,
    });
    let mut own_rules = IgnoreRules::new(FilterOptions {
        respect_git_ignore: false,
        respect_gemini_ignore: true,
    });
    let (mut git_ignored, mut own_ignored, mut both_ignored) = (vec![], vec![], vec![]);
    for (index, piece) in pieces.iter().enumerate() {
        let PromptPiece::AtPath(name) = piece else {
            continue;
        };
        if name.is_empty() {
            continue;
        }
        if at_refs::is_glob(name) {
            resolved.push(Resolved {
                piece: index,
                spec: name.clone(),
                label: name.clone(),
                absolute: None,
            });
            continue;
        }
        let real = match ws.check(&ws.resolve(name)) {
            Ok(real) if real.exists() => real,
            // As gemini-cli: a name not found is looked for as `**/*name*`, the most
            // recently changed match first.
            _ => match search_by_name(ws, name, cancel) {
                Some(found) => found,
                None => {
                    notes.push(format!(
                        "@{name}: nothing in the workspace matches; left as text."
                    ));
                    continue;
                }
            },
        };
        let root = ws
            .root_of(&real)
            .unwrap_or_else(|| ws.primary().to_path_buf());
        let is_dir = real.is_dir();
        let by_git = git_rules.is_ignored(&root, &real, is_dir);
        let by_own = own_rules.is_ignored(&root, &real, is_dir);
        match (by_git, by_own) {
            (true, true) => both_ignored.push(name.clone()),
            (true, false) => git_ignored.push(name.clone()),
            (false, true) => own_ignored.push(name.clone()),
            (false, false) => {
                let rel = relative_to(&root, &real);
                let spec = if is_dir { format!("{rel}/**") } else { rel };
                resolved.push(Resolved {
                    piece: index,
                    spec,
                    label: if Path::new(name).is_absolute() {
                        relative_to(&root, &real)
                    } else {
                        name.clone()
                    },
                    absolute: Some(real),
                });
            }
        }
    }
    let ignored = git_ignored.len() + own_ignored.len() + both_ignored.len();
    if ignored > 0 {
        let mut lines = vec![format!("Ignored {ignored} files:")];
        for (what, list) in [
            ("Git-ignored", &git_ignored),
            ("Troupe-ignored", &own_ignored),
            ("Ignored by both", &both_ignored),
        ] {
            if !list.is_empty() {
                lines.push(format!("{what}: {}", list.join(", ")));
            }
        }
        notes.push(lines.join("\n"));
    }
    if resolved.is_empty() {
        return Ok((!notes.is_empty()).then(|| Expanded {
            parts: vec![Part::text(query)],
            notes,
            warnings: Vec::new(),
        }));
    }
    let mut parts = vec![Part::text(initial_query(&pieces, &resolved))];
    let include: Vec<String> = resolved.iter().map(|r| r.spec.clone()).collect();
    let gathered = gather_for_references(ws, include, cancel)?;
    parts.push(Part::text(format!("\n{REFERENCE_CONTENT_START}")));
    if gathered.files.is_empty() && gathered.media.is_empty() {
        parts.push(Part::text(NOTHING_FOUND));
    }
    let sizes: Vec<usize> = gathered
        .files
        .iter()
        .map(|(_, content)| content.trim().chars().count())
        .collect();
    let shares = at_refs::share_budget(&sizes, max_chars);
    let mut warnings = Vec::new();
    for ((path, content), share) in gathered.files.iter().zip(shares) {
        let label = resolved
            .iter()
            .find(|r| r.absolute.as_deref() == Some(path.as_path()))
            .map(|r| r.label.clone())
            .unwrap_or_else(|| ws.display_relative(path));
        parts.push(Part::text(format!("\nContent from @{label}:\n")));
        match at_refs::fit_reference(&label, content.trim(), share) {
            Some(fitted) => {
                warnings.push(fitted.warning);
                parts.push(Part::text(fitted.text));
            }
            None => parts.push(Part::text(content.trim())),
        }
    }
    let media = gathered.media.len();
    parts.extend(gathered.media.iter().cloned());
    parts.push(Part::text(END_OF_CONTENT));
    let mut read = format!("Read {} file(s)", gathered.files.len());
    if media > 0 {
        read.push_str(&format!(" and {media} media file(s)"));
    }
    notes.insert(0, format!("{read} for {}.", labels(&resolved)));
    for skipped in gathered.skipped() {
        notes.push(format!("Skipped {skipped}"));
    }
    Ok(Some(Expanded {
        parts,
        notes,
        warnings,
    }))
}

/// The first file (recently changed first, then by name) whose path matches
/// `**/*name*` in a workspace root and passes the ignore files.
fn search_by_name(ws: &Workspace, name: &str, cancel: &CancellationToken) -> Option<PathBuf> {
    let pattern = format!("**/*{}*", globset::escape(name));
    let matcher = glob_matcher(&pattern, false).ok()?;
    let mut rules = IgnoreRules::new(FilterOptions::default());
    let mut found: Vec<(PathBuf, std::time::SystemTime)> = Vec::new();
    for root in &ws.roots() {
        for file in walk_files(root, Some(cancel))? {
            if matcher.is_match(&file.rel) && !rules.is_ignored(root, &file.path, false) {
                if let Ok(real) = ws.check(&file.path) {
                    found.push((real, file.modified));
                }
            }
        }
    }
    sort_entries(&mut found, std::time::SystemTime::now());
    found.into_iter().next().map(|(path, _)| path)
}

fn labels(resolved: &[Resolved]) -> String {
    resolved
        .iter()
        .map(|r| format!("@{}", r.label))
        .collect::<Vec<_>>()
        .join(", ")
}

fn relative_to(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let text = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/");
    if text.is_empty() {
        ".".into()
    } else {
        text
    }
}

/// gemini-cli's `constructInitialQuery`: each resolved reference replaced by its path
/// spec (`@dir/**` for a directory), a space before a reference that follows text.
fn initial_query(pieces: &[PromptPiece], resolved: &[Resolved]) -> String {
    let mut out = String::new();
    for (index, piece) in pieces.iter().enumerate() {
        match piece {
            PromptPiece::Text(text) => out.push_str(text),
            PromptPiece::AtPath(name) => {
                if index > 0 && !out.is_empty() && !out.ends_with(' ') {
                    out.push(' ');
                }
                match resolved.iter().find(|r| r.piece == index) {
                    Some(r) => out.push_str(&format!("@{}", r.spec)),
                    None => out.push_str(&format!("@{name}")),
                }
            }
        }
    }
    out.trim().to_string()
}
