//! The search behind `grep_search`: ripgrep's own library crates (grep-regex matcher,
//! grep-searcher line search with binary-file detection) over the FileSystem's
//! confined walk ([`Confined::walk_files`]: gitignore, `.geminiignore`,
//! `.troupeignore`, hidden files skipped, gemini-cli's default excludes as override
//! globs). Blocking; call it from the FileSystem pool.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use tokio_util::sync::CancellationToken;

use crate::platform::filesystem::walk::{
    walk_with, MakeVisitor, WalkError, WalkSpec, WalkStep, WalkVisitor,
};
use crate::platform::filesystem::Confined;

/// Directories and files gemini-cli's ripgrep call excludes (unless `no_ignore`).
pub const DEFAULT_EXCLUDE_GLOBS: &[&str] = &[
    "**/.vscode/**",
    "**/.idea/**",
    "**/dist/**",
    "**/build/**",
    "**/coverage/**",
    "**/__pycache__/**",
    "*.log",
    "*.tmp",
];

/// Why a search could not run.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SearchError {
    #[error("{0}")]
    Pattern(String),
    #[error("invalid include pattern '{glob}': {message}")]
    Glob { glob: String, message: String },
    #[error("the search was cancelled")]
    Cancelled,
    #[error("Operation timed out after {0}ms. In large repositories, consider narrowing your search scope by specifying a 'dir_path' or an 'include_pattern'.")]
    TimedOut(u128),
}

/// What to search for and where.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    pub pattern: String,
    pub fixed_strings: bool,
    pub case_sensitive: bool,
    /// A directory (searched recursively) or a single file.
    pub path: PathBuf,
    /// A glob restricting which files are searched (ripgrep's `--glob`).
    pub include: Option<String>,
    /// Lines matching this are dropped (matches and context alike).
    pub exclude: Option<regex::Regex>,
    pub before: usize,
    pub after: usize,
    pub max_per_file: Option<u64>,
    pub total_max: usize,
    /// Ignore files, hidden-file skipping and default excludes all off.
    pub no_ignore: bool,
    pub respect_git_ignore: bool,
    /// Worker threads; 0 picks one per core.
    pub threads: usize,
    /// Give up after this long.
    pub timeout: Option<Duration>,
}

/// One line of output: a match or a context line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundLine {
    pub number: u64,
    pub text: String,
    pub is_context: bool,
}

/// The lines found in one file, ascending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileHits {
    pub path: PathBuf,
    pub lines: Vec<FoundLine>,
}

impl FileHits {
    pub fn match_count(&self) -> usize {
        self.lines.iter().filter(|l| !l.is_context).count()
    }
}

/// The most memory one compiled pattern may take (grep-regex's default is 100 MiB);
/// a pattern that needs more is refused with the regex engine's error.
pub const MATCHER_SIZE_LIMIT: usize = 32 * 1024 * 1024;

/// The lazy DFA's cache per search thread (grep-regex's default is 1000 MiB per
/// thread); past it the engine falls back to a slower one, it does not fail.
pub const DFA_SIZE_LIMIT: usize = 32 * 1024 * 1024;

/// The matcher for a request; its error text is the one shown to the model.
pub fn build_matcher(
    pattern: &str,
    fixed_strings: bool,
    case_sensitive: bool,
) -> Result<RegexMatcher, SearchError> {
    RegexMatcherBuilder::new()
        .case_insensitive(!case_sensitive)
        .fixed_strings(fixed_strings)
        .line_terminator(Some(b'\n'))
        .size_limit(MATCHER_SIZE_LIMIT)
        .dfa_size_limit(DFA_SIZE_LIMIT)
        .build(pattern)
        .map_err(|e| SearchError::Pattern(e.to_string()))
}

/// Runs the search; files come back sorted by path. Stops early once `total_max`
/// matches are found or `cancel` fires.
///
/// Each file the walk yields is opened with `open` and searched through that
/// descriptor; `None` skips the file. Tools search through [`search_confined`].
pub fn search(
    req: &SearchRequest,
    open: &(dyn Fn(&Path) -> Option<File> + Sync),
    cancel: Option<&CancellationToken>,
) -> Result<Vec<FileHits>, SearchError> {
    search_by(req, cancel, |spec, make| walk_with(spec, open, make))
}

/// [`search`] over the workspace: the walk runs beneath the roots' descriptors
/// ([`Confined::walk_files`]), so a directory swapped for a link leading out makes
/// the open of what lies under it fail.
pub fn search_confined(
    ws: &Confined,
    req: &SearchRequest,
    cancel: Option<&CancellationToken>,
) -> Result<Vec<FileHits>, SearchError> {
    search_by(req, cancel, |spec, make| ws.walk_files(spec, make))
}

/// The walk of a request.
fn walk_spec(req: &SearchRequest) -> WalkSpec {
    WalkSpec {
        root: req.path.clone(),
        include: req.include.clone(),
        exclude: DEFAULT_EXCLUDE_GLOBS,
        no_ignore: req.no_ignore,
        respect_git_ignore: req.respect_git_ignore,
        threads: req.threads,
    }
}

fn search_by(
    req: &SearchRequest,
    cancel: Option<&CancellationToken>,
    walk: impl for<'v> FnOnce(&WalkSpec, &mut MakeVisitor<'v>) -> Result<(), WalkError>,
) -> Result<Vec<FileHits>, SearchError> {
    let matcher = build_matcher(&req.pattern, req.fixed_strings, req.case_sensitive)?;
    let found: Mutex<Vec<FileHits>> = Mutex::new(Vec::new());
    let total = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let timed_out = AtomicBool::new(false);
    let deadline = req.timeout.map(|t| Instant::now() + t);
    let shared = Shared {
        req,
        total: &total,
        stop: &stop,
    };
    let mut make = || -> Box<dyn WalkVisitor + '_> {
        Box::new(FileSearcher {
            matcher: matcher.clone(),
            searcher: SearcherBuilder::new()
                .line_number(true)
                .binary_detection(BinaryDetection::quit(b'\0'))
                .before_context(req.before)
                .after_context(req.after)
                .build(),
            found: &found,
            shared: &shared,
            timed_out: &timed_out,
            deadline,
            cancel,
        })
    };
    walk(&walk_spec(req), &mut make)
        .map_err(|WalkError::Glob { glob, message }| SearchError::Glob { glob, message })?;
    if cancel.is_some_and(|c| c.is_cancelled()) {
        return Err(SearchError::Cancelled);
    }
    if timed_out.load(Ordering::Relaxed) {
        let ms = req.timeout.map_or(0, |t| t.as_millis());
        return Err(SearchError::TimedOut(ms));
    }
    let mut all = found.into_inner().unwrap_or_else(|e| e.into_inner());
    all.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(all)
}

/// One walker thread's search of the files it is handed.
struct FileSearcher<'a> {
    matcher: RegexMatcher,
    searcher: Searcher,
    found: &'a Mutex<Vec<FileHits>>,
    shared: &'a Shared<'a>,
    timed_out: &'a AtomicBool,
    deadline: Option<Instant>,
    cancel: Option<&'a CancellationToken>,
}

impl WalkVisitor for FileSearcher<'_> {
    fn keep_going(&mut self) -> bool {
        if self.shared.stop.load(Ordering::Relaxed) || self.cancel.is_some_and(|c| c.is_cancelled())
        {
            return false;
        }
        if self.deadline.is_some_and(|d| Instant::now() > d) {
            self.timed_out.store(true, Ordering::Relaxed);
            return false;
        }
        true
    }

    fn visit(&mut self, path: PathBuf, file: File) -> WalkStep {
        let mut sink = Collector::new(self.shared);
        if self
            .searcher
            .search_file(&self.matcher, &file, &mut sink)
            .is_ok()
            && sink.matches > 0
        {
            let hits = FileHits {
                path,
                lines: sink.lines,
            };
            if let Ok(mut all) = self.found.lock() {
                all.push(hits);
            }
        }
        if self.shared.stop.load(Ordering::Relaxed) {
            WalkStep::Quit
        } else {
            WalkStep::Continue
        }
    }
}

/// State shared by the walker threads.
struct Shared<'a> {
    req: &'a SearchRequest,
    total: &'a AtomicUsize,
    stop: &'a AtomicBool,
}

/// Collects one file's lines, enforcing the per-file and total caps.
struct Collector<'a> {
    shared: &'a Shared<'a>,
    lines: Vec<FoundLine>,
    matches: u64,
}

impl<'a> Collector<'a> {
    fn new(shared: &'a Shared<'a>) -> Self {
        Self {
            shared,
            lines: Vec::new(),
            matches: 0,
        }
    }

    fn excluded(&self, text: &str) -> bool {
        self.shared
            .req
            .exclude
            .as_ref()
            .is_some_and(|re| re.is_match(text))
    }
}

fn line_text(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    String::from_utf8_lossy(bytes).into_owned()
}

impl Sink for Collector<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let text = line_text(mat.bytes());
        if self.excluded(&text) {
            return Ok(true);
        }
        let previous = self.shared.total.fetch_add(1, Ordering::Relaxed);
        if previous >= self.shared.req.total_max {
            self.shared.stop.store(true, Ordering::Relaxed);
            return Ok(false);
        }
        self.lines.push(FoundLine {
            number: mat.line_number().unwrap_or(0),
            text,
            is_context: false,
        });
        self.matches += 1;
        if previous + 1 >= self.shared.req.total_max {
            self.shared.stop.store(true, Ordering::Relaxed);
        }
        let per_file_full = self
            .shared
            .req
            .max_per_file
            .is_some_and(|max| self.matches >= max);
        Ok(!per_file_full)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, Self::Error> {
        let text = line_text(ctx.bytes());
        if !self.excluded(&text) {
            self.lines.push(FoundLine {
                number: ctx.line_number().unwrap_or(0),
                text,
                is_context: true,
            });
        }
        Ok(true)
    }
}

/// The path shown for a hit: relative to the searched directory, or the file's name
/// when a single file was searched.
pub fn display_path(base: &Path, file: &Path) -> String {
    match file.strip_prefix(base) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.to_string_lossy().replace('\\', "/"),
        _ => file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| file.display().to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(path: &Path, pattern: &str) -> SearchRequest {
        SearchRequest {
            pattern: pattern.to_string(),
            fixed_strings: false,
            case_sensitive: false,
            path: path.to_path_buf(),
            include: None,
            exclude: None,
            before: 0,
            after: 0,
            max_per_file: None,
            total_max: 100,
            no_ignore: false,
            respect_git_ignore: true,
            threads: 2,
            timeout: None,
        }
    }

    fn open_plain(p: &Path) -> Option<File> {
        File::open(p).ok()
    }

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join(".gitignore"), "*.out\n").unwrap();
        std::fs::write(root.join("src/a.rs"), "hit 1\nmiss\nHIT 2\nhit 3\n").unwrap();
        std::fs::write(root.join("src/b.rs"), "hit\n").unwrap();
        std::fs::write(root.join("x.out"), "hit\n").unwrap();
        std::fs::write(root.join("bin"), b"hit\0hit").unwrap();
        dir
    }

    #[test]
    fn finds_sorted_hits_and_respects_filters() {
        let dir = tree();
        let hits = search(&request(dir.path(), "hit"), &open_plain, None).unwrap();
        let names: Vec<String> = hits
            .iter()
            .map(|h| display_path(dir.path(), &h.path))
            .collect();
        assert_eq!(names, ["src/a.rs", "src/b.rs"]);
        assert_eq!(hits[0].match_count(), 3);
        let mut req = request(dir.path(), "hit");
        req.case_sensitive = true;
        req.max_per_file = Some(1);
        let hits = search(&req, &open_plain, None).unwrap();
        assert_eq!(hits[0].lines.len(), 1);
        req.no_ignore = true;
        req.max_per_file = None;
        let hits = search(&req, &open_plain, None).unwrap();
        assert!(hits.iter().any(|h| h.path.ends_with("x.out")));
        assert!(!hits.iter().any(|h| h.path.ends_with("bin")));
    }

    #[test]
    fn total_cap_and_context() {
        let dir = tree();
        let mut req = request(&dir.path().join("src/a.rs"), "hit");
        req.total_max = 2;
        let hits = search(&req, &open_plain, None).unwrap();
        assert_eq!(hits[0].match_count(), 2);
        let mut req = request(&dir.path().join("src/a.rs"), "^miss");
        req.before = 1;
        req.after = 1;
        let hits = search(&req, &open_plain, None).unwrap();
        let lines: Vec<(u64, bool)> = hits[0]
            .lines
            .iter()
            .map(|l| (l.number, l.is_context))
            .collect();
        assert_eq!(lines, [(1, true), (2, false), (3, true)]);
    }

    #[test]
    fn cancel_and_timeout_stop_the_walk() {
        let dir = tree();
        let token = CancellationToken::new();
        token.cancel();
        assert!(matches!(
            search(&request(dir.path(), "hit"), &open_plain, Some(&token)),
            Err(SearchError::Cancelled)
        ));
        let mut req = request(dir.path(), "hit");
        req.timeout = Some(Duration::ZERO);
        let err = search(&req, &open_plain, None).unwrap_err();
        assert!(err
            .to_string()
            .starts_with("Operation timed out after 0ms. In large repositories"));
        assert!(matches!(
            build_matcher("(", false, true),
            Err(SearchError::Pattern(_))
        ));
    }
}
