//! Runs grep_search's search engine (the same code the tool runs) over a directory and
//! prints every match in gemini-cli's format, for `bench/grep-vs-rg.sh`.
//!
//! Usage: bench_grep --dir DIR --pattern REGEX [--threads N] [--max N] [--ignore-case]

use std::io::Write;
use std::path::PathBuf;

use troupe::tools::grep::format::{format_results, GrepReport};
use troupe::tools::grep::search::{display_path, search, SearchRequest};

/// The allocator the `troupe` binary runs `grep_search` with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let mut dir = None;
    let mut pattern = None;
    let mut threads = 0usize;
    let mut max = usize::MAX;
    let mut case_sensitive = true;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--ignore-case" {
            case_sensitive = false;
            continue;
        }
        let value = args.next();
        match (flag.as_str(), value) {
            ("--dir", Some(v)) => dir = Some(PathBuf::from(v)),
            ("--pattern", Some(v)) => pattern = Some(v),
            ("--threads", Some(v)) => threads = v.parse().unwrap_or(0),
            ("--max", Some(v)) => max = v.parse().unwrap_or(usize::MAX),
            _ => {
                eprintln!("usage: bench_grep --dir DIR --pattern REGEX [--threads N] [--max N] [--ignore-case]");
                std::process::exit(2);
            }
        }
    }
    let (Some(dir), Some(pattern)) = (dir, pattern) else {
        eprintln!(
            "usage: bench_grep --dir DIR --pattern REGEX [--threads N] [--max N] [--ignore-case]"
        );
        std::process::exit(2);
    };
    let request = SearchRequest {
        pattern: pattern.clone(),
        fixed_strings: false,
        case_sensitive,
        path: dir.clone(),
        include: None,
        exclude: None,
        before: 0,
        after: 0,
        max_per_file: None,
        total_max: max,
        no_ignore: false,
        respect_git_ignore: true,
        threads,
        timeout: None,
    };
    // Files are opened the way the grep_search tool opens them: beneath the root.
    let confined = match troupe::platform::workspace::Workspace::new(&request.path, &[])
        .and_then(|ws| troupe::platform::filesystem::Confined::new(std::sync::Arc::new(ws)))
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("bench_grep: {e}");
            std::process::exit(1);
        }
    };
    let open = |path: &std::path::Path| {
        confined
            .open(path, troupe::platform::filesystem::OpenMode::Read)
            .ok()
            .map(|o| o.file)
    };
    let hits = match search(&request, &open, None) {
        Ok(hits) => hits,
        Err(e) => {
            eprintln!("bench_grep: {e}");
            std::process::exit(1);
        }
    };
    let report = GrepReport {
        pattern: &pattern,
        location: format!("in path \"{}\"", dir.display()),
        include: None,
        names_only: false,
        total_max: max,
    };
    let out = format_results(&report, &hits, |p| display_path(&dir, p));
    let count: usize = hits.iter().map(|h| h.match_count()).sum();
    let mut stdout = std::io::stdout().lock();
    if let troupe::protocol::LlmContent::Text(text) = &out.llm_content {
        let _ = writeln!(stdout, "{text}");
    }
    eprintln!("bench_grep: {count} matches in {} files", hits.len());
}
