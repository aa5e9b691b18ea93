//! `grep_search` (legacy name `search_file_content`): a regular-expression search over
//! file contents with gemini-cli's ripgrep-variant parameters and output format.

pub mod format;
pub mod search;

use std::path::Path;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::{Services, Tool, ToolContext};
use crate::platform::filesystem::{read_checked, Confined, FsError, FsWork, OpenMode};
use crate::platform::ignore_rules::{FilterOptions, IgnoreRules};
use crate::protocol::{ToolErrorKind, ToolKind, ToolOutput};
use format::{add_auto_context, format_results, GrepReport};
use search::{build_matcher, SearchError, SearchRequest};

/// Matches returned when the model sets no `total_max_matches`.
pub const DEFAULT_TOTAL_MAX_MATCHES: usize = 100;

/// How long one search may take (gemini-cli's `DEFAULT_SEARCH_TIMEOUT_MS`).
pub const SEARCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The longest `pattern` or `exclude_pattern` accepted, in bytes. Longer ones are
/// refused before anything is compiled: a 10 MB pattern used to take minutes and
/// gigabytes to compile. gemini-cli hands the pattern to ripgrep as one argument,
/// which Linux caps at 128 KiB.
pub const MAX_PATTERN_BYTES: usize = 64 * 1024;

/// The `grep_search` tool.
pub struct GrepSearch;

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Params {
    pub pattern: String,
    #[serde(default)]
    pub dir_path: Option<String>,
    #[serde(default)]
    pub include_pattern: Option<String>,
    #[serde(default)]
    pub exclude_pattern: Option<String>,
    #[serde(default)]
    pub names_only: bool,
    #[serde(default)]
    pub case_sensitive: bool,
    #[serde(default)]
    pub fixed_strings: bool,
    #[serde(default)]
    pub context: Option<usize>,
    #[serde(default)]
    pub before: Option<usize>,
    #[serde(default)]
    pub after: Option<usize>,
    #[serde(default)]
    pub max_matches_per_file: Option<u64>,
    #[serde(default)]
    pub total_max_matches: Option<usize>,
    #[serde(default)]
    pub no_ignore: bool,
}

/// The name the model calls.
pub const NAME: &str = "grep_search";

impl Tool for GrepSearch {
    type Params = Params;

    fn name(&self) -> &'static str {
        NAME
    }

    fn display_name(&self) -> &'static str {
        "SearchText"
    }

    /// gemini-cli 0.61 writes this core tool's declaration out per model family, without
    /// `wait_for_previous` (a call may still set it).
    fn declares_wait_for_previous(&self) -> bool {
        false
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }

    fn answer_depends_on_files_only(&self) -> bool {
        true
    }

    fn description(&self) -> String {
        "Looks for a regular expression in the contents of files and returns the matching \
         lines with their file paths and line numbers."
            .to_string()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "What to look for: a Rust-syntax regular expression (e.g. 'fn\\s+main', '\\bTodo\\b'), or literal text when 'fixed_strings' is true."},
                "dir_path": {"type": "string", "description": "Directory (searched recursively) or single file to search; relative paths start at the workspace root. Defaults to the workspace root ('.')."},
                "include_pattern": {"type": "string", "description": "Glob choosing which files to search (e.g. '*.rs', 'src/**'). Narrowing the search this way helps in large repositories. Defaults to all files."},
                "exclude_pattern": {"type": "string", "description": "Optional: a regular expression; result lines that match it are left out."},
                "names_only": {"type": "boolean", "description": "Optional: return only the paths of files that match, without lines."},
                "case_sensitive": {"type": "boolean", "description": "Match case exactly. Defaults to false (case is ignored)."},
                "fixed_strings": {"type": "boolean", "description": "Treat 'pattern' as literal text rather than a regular expression. Defaults to false."},
                "context": {"type": "integer", "minimum": 0, "description": "Lines of context to show before and after each match (like grep -C). Defaults to 0."},
                "after": {"type": "integer", "minimum": 0, "description": "Lines of context to show after each match (like grep -A). Defaults to 0."},
                "before": {"type": "integer", "minimum": 0, "description": "Lines of context to show before each match (like grep -B). Defaults to 0."},
                "no_ignore": {"type": "boolean", "description": "Also search files that are normally skipped (ignore files, hidden files, build/, dist/ and similar). Defaults to false."},
                "max_matches_per_file": {"type": "integer", "minimum": 1, "description": "Optional: stop after this many matches in any one file, to keep repetitive files from flooding the result."},
                "total_max_matches": {"type": "integer", "minimum": 1, "description": "Optional: stop after this many matches overall. Defaults to 100."}
            },
            "required": ["pattern"]
        })
    }

    fn aliases(&self) -> &'static [(&'static str, &'static str)] {
        &[
            ("path", "dir_path"),
            ("include", "include_pattern"),
            ("exclude", "exclude_pattern"),
        ]
    }

    fn validate(&self, p: &Params, _: &Services) -> Result<(), String> {
        pattern_within_limit("pattern", &p.pattern)?;
        if let Some(exclude) = &p.exclude_pattern {
            pattern_within_limit("exclude_pattern", exclude)?;
        }
        if !p.fixed_strings {
            build_matcher(&p.pattern, false, p.case_sensitive).map_err(|e| {
                format!(
                    "Invalid regular expression pattern provided: {}. Error: {e}",
                    p.pattern
                )
            })?;
        }
        if let Some(exclude) = &p.exclude_pattern {
            exclude_regex(exclude, p.case_sensitive)?;
        }
        if p.max_matches_per_file == Some(0) {
            return Err("max_matches_per_file must be at least 1.".into());
        }
        if p.total_max_matches == Some(0) {
            return Err("total_max_matches must be at least 1.".into());
        }
        Ok(())
    }

    fn execute(&self, p: Params, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let cancel = ctx.cancel.clone();
            let result = ctx.services.fs.perform(Grep { params: p, cancel }).await;
            result.unwrap_or_else(|e| grep_error(&e.to_string()))
        })
    }
}

/// Refuses a pattern above [`MAX_PATTERN_BYTES`] without echoing it.
fn pattern_within_limit(what: &str, pattern: &str) -> Result<(), String> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(format!(
            "The {what} is {} bytes long; grep_search accepts at most {MAX_PATTERN_BYTES} bytes. Search for a shorter pattern.",
            pattern.len()
        ));
    }
    Ok(())
}

fn exclude_regex(pattern: &str, case_sensitive: bool) -> Result<regex::Regex, String> {
    regex::RegexBuilder::new(pattern)
        .case_insensitive(!case_sensitive)
        .size_limit(search::MATCHER_SIZE_LIMIT)
        .dfa_size_limit(search::DFA_SIZE_LIMIT)
        .build()
        .map_err(|e| {
            format!("Invalid exclude regular expression pattern provided: {pattern}. Error: {e}")
        })
}

fn grep_error(message: &str) -> ToolOutput {
    ToolOutput::error(
        ToolErrorKind::GrepExecutionError,
        format!("Error during grep search operation: {message}"),
        format!("Error: {message}"),
    )
}

/// One `grep_search` call, run on the FileSystem pool beneath the workspace roots.
struct Grep {
    params: Params,
    cancel: CancellationToken,
}

impl FsWork for Grep {
    type Output = ToolOutput;
    fn perform(self, ws: &Confined) -> ToolOutput {
        run(ws, &self.params, &self.cancel)
    }
}

/// Resolves and checks the search path, searches, adds auto-context and formats.
pub fn run(ws: &Confined, p: &Params, cancel: &CancellationToken) -> ToolOutput {
    let shown = p.dir_path.clone().unwrap_or_else(|| ".".to_string());
    let base = match search_base(ws, &shown) {
        Ok(base) => base,
        Err(out) => return *out,
    };
    let exclude = match p
        .exclude_pattern
        .as_deref()
        .map(|x| exclude_regex(x, p.case_sensitive))
    {
        Some(Err(e)) => return grep_error(&e),
        Some(Ok(re)) => Some(re),
        None => None,
    };
    let total_max = p.total_max_matches.unwrap_or(DEFAULT_TOTAL_MAX_MATCHES);
    let request = SearchRequest {
        pattern: p.pattern.clone(),
        fixed_strings: p.fixed_strings,
        case_sensitive: p.case_sensitive,
        path: base.clone(),
        include: p.include_pattern.clone(),
        exclude,
        before: p.before.or(p.context).unwrap_or(0),
        after: p.after.or(p.context).unwrap_or(0),
        max_per_file: p.max_matches_per_file,
        total_max,
        no_ignore: p.no_ignore,
        respect_git_ignore: true,
        threads: 4,
        timeout: Some(SEARCH_TIMEOUT),
    };
    let mut hits = match search::search_confined(ws, &request, Some(cancel)) {
        Ok(hits) => hits,
        Err(SearchError::Cancelled) => return grep_error("the search was cancelled"),
        Err(e) => return grep_error(&e.to_string()),
    };
    if !p.no_ignore {
        if let Some(root) = ws.root_of(&base) {
            let mut rules = IgnoreRules::new(FilterOptions::default());
            hits.retain(|h| !rules.is_ignored(&root, &h.path, false));
        }
    }
    let wants_auto_context =
        !p.names_only && p.context.is_none() && p.before.is_none() && p.after.is_none();
    if wants_auto_context {
        add_auto_context(&mut hits, request.exclude.as_ref(), |path| {
            read_checked(ws, path).ok().map(|r| r.bytes)
        });
    }
    let report = GrepReport {
        pattern: &p.pattern,
        location: format!("in path \"{shown}\""),
        include: p.include_pattern.as_deref(),
        names_only: p.names_only,
        total_max,
    };
    format_results(&report, &hits, |path: &Path| {
        search::display_path(&base, path)
    })
}

/// The real path of the directory or file to search (`shown` as the model gave it),
/// opened beneath its root: a path outside, missing or of another kind is the
/// model-facing error.
fn search_base(ws: &Confined, shown: &str) -> Result<std::path::PathBuf, Box<ToolOutput>> {
    let (base, meta) = match ws.open(&ws.resolve(shown), OpenMode::Handle) {
        Ok(opened) => {
            let meta = opened.file.metadata();
            (opened.real_path, meta)
        }
        Err(FsError::Path(e)) => {
            return Err(Box::new(ToolOutput::error(
                ToolErrorKind::PathNotInWorkspace,
                e.to_string(),
                "Error: Path not in workspace.",
            )))
        }
        Err(FsError::NotFound(_)) | Err(FsError::NotDirectory(_)) => {
            let base = ws.absolute(&ws.resolve(shown));
            let msg = format!("Path does not exist: {}", base.display());
            return Err(Box::new(ToolOutput::error(
                ToolErrorKind::FileNotFound,
                msg,
                "Error: Path does not exist.",
            )));
        }
        Err(e) => {
            return Err(Box::new(ToolOutput::text(
                format!("Failed to access path stats for {shown}: {e}"),
                "Error: Failed to access path.",
            )))
        }
    };
    match meta {
        Ok(meta) if meta.is_dir() || meta.is_file() => Ok(base),
        Ok(_) => Err(Box::new(ToolOutput::text(
            format!("Path is not a valid directory or file: {}", base.display()),
            "Error: Path is not a valid directory or file.",
        ))),
        Err(e) => Err(Box::new(ToolOutput::text(
            format!("Failed to access path stats for {}: {e}", base.display()),
            "Error: Failed to access path.",
        ))),
    }
}
