//! gemini-cli's presentation of grep results (`grep-utils.ts`): the automatic context
//! for a handful of matches and the `Found N matches … File: … L12: …` text.

use std::collections::BTreeMap;
use std::path::Path;

use super::search::{FileHits, FoundLine};
use crate::engine::file_kind::decode_text;
use crate::protocol::ToolOutput;
use crate::tools::file_reader::split_lines;

/// Longest line shown, in code points.
pub const MAX_LINE_CHARS: usize = 2000;

/// With this few matches (and no context asked for), the surrounding lines come too.
pub const AUTO_CONTEXT_MAX_MATCHES: usize = 3;

/// What the header says about the search.
pub struct GrepReport<'a> {
    pub pattern: &'a str,
    /// e.g. `in path "src"`.
    pub location: String,
    pub include: Option<&'a str>,
    pub names_only: bool,
    pub total_max: usize,
}

/// Adds ±50 lines around a single match, ±15 around each of two or three; context
/// lines matching `exclude` are left out, as in the search itself.
/// Files are read again with `read` (the FileSystem actor's confined read).
pub fn add_auto_context(
    hits: &mut [FileHits],
    exclude: Option<&regex::Regex>,
    read: impl Fn(&Path) -> Option<Vec<u8>>,
) {
    let count: usize = hits.iter().map(FileHits::match_count).sum();
    if count == 0 || count > AUTO_CONTEXT_MAX_MATCHES {
        return;
    }
    let radius = if count == 1 { 50 } else { 15 };
    for file in hits.iter_mut() {
        let Some(bytes) = read(&file.path) else {
            continue;
        };
        let text = decode_text(&bytes);
        let mut lines = split_lines(&text);
        // ripgrep, which gemini-cli re-runs for the context, has no line after a
        // final newline.
        if text.ends_with('\n') {
            lines.pop();
        }
        let matched: Vec<u64> = file
            .lines
            .iter()
            .filter(|l| !l.is_context)
            .map(|l| l.number)
            .collect();
        let mut out: BTreeMap<u64, FoundLine> = BTreeMap::new();
        for &number in &matched {
            let first = number.saturating_sub(radius).max(1);
            let last = (number + radius).min(lines.len() as u64);
            for n in first..=last {
                let is_context = !matched.contains(&n);
                let text = lines[(n - 1) as usize];
                if is_context && exclude.is_some_and(|re| re.is_match(text)) {
                    continue;
                }
                out.entry(n).or_insert_with(|| FoundLine {
                    number: n,
                    text: text.to_string(),
                    is_context,
                });
            }
        }
        file.lines = out.into_values().collect();
    }
}

fn cut_line(line: &str) -> String {
    let line = line.trim_end();
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((at, _)) => format!("{}... [truncated]", &line[..at]),
        None => line.to_string(),
    }
}

/// The llmContent and summary of a search; `display_path` names a file.
pub fn format_results(
    report: &GrepReport<'_>,
    hits: &[FileHits],
    display_path: impl Fn(&Path) -> String,
) -> ToolOutput {
    let filter = report
        .include
        .map(|g| format!(" (filter: \"{g}\")"))
        .unwrap_or_default();
    if hits.is_empty() {
        return ToolOutput::text(
            format!(
                "No matches found for pattern \"{}\" {}{filter}.",
                report.pattern, report.location
            ),
            "No matches found",
        );
    }
    let count: usize = hits.iter().map(FileHits::match_count).sum();
    let truncated = count >= report.total_max;
    let limited = if truncated {
        format!(
            " (results limited to {} matches for performance)",
            report.total_max
        )
    } else {
        String::new()
    };
    if report.names_only {
        let mut paths: Vec<String> = hits.iter().map(|h| display_path(&h.path)).collect();
        paths.sort();
        let llm = format!(
            "Found {} files with matches for pattern \"{}\" {}{filter}{limited}:\n{}",
            paths.len(),
            report.pattern,
            report.location,
            paths.join("\n")
        );
        let summary = format!(
            "Found {} files{}",
            paths.len(),
            if truncated { " (limited)" } else { "" }
        );
        return ToolOutput::text(llm.trim().to_string(), summary);
    }
    let term = if count == 1 { "match" } else { "matches" };
    let mut llm = format!(
        "Found {count} {term} for pattern \"{}\" {}{filter}{limited}:\n---\n",
        report.pattern, report.location
    );
    for file in hits {
        llm.push_str(&format!("File: {}\n", display_path(&file.path)));
        for line in &file.lines {
            let sep = if line.is_context { '-' } else { ':' };
            llm.push_str(&format!("L{}{sep} {}\n", line.number, cut_line(&line.text)));
        }
        llm.push_str("---\n");
    }
    let summary = format!(
        "Found {count} {term}{}",
        if truncated { " (limited)" } else { "" }
    );
    ToolOutput::text(llm.trim().to_string(), summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::LlmContent;
    use std::path::PathBuf;

    fn text(out: &ToolOutput) -> &str {
        match &out.llm_content {
            LlmContent::Text(t) => t,
            LlmContent::Parts(_) => panic!("parts"),
        }
    }

    fn report(names_only: bool) -> GrepReport<'static> {
        GrepReport {
            pattern: "foo",
            location: "in path \".\"".into(),
            include: Some("*.rs"),
            names_only,
            total_max: 100,
        }
    }

    fn hit(path: &str, lines: &[(u64, &str, bool)]) -> FileHits {
        FileHits {
            path: PathBuf::from(path),
            lines: lines
                .iter()
                .map(|(n, t, c)| FoundLine {
                    number: *n,
                    text: t.to_string(),
                    is_context: *c,
                })
                .collect(),
        }
    }

    #[test]
    fn gemini_layout() {
        let hits = vec![
            hit("a.rs", &[(3, "x", true), (4, "foo();  ", false)]),
            hit("b.rs", &[(9, "foo", false)]),
        ];
        let out = format_results(&report(false), &hits, |p| p.display().to_string());
        assert_eq!(
            text(&out),
            "Found 2 matches for pattern \"foo\" in path \".\" (filter: \"*.rs\"):\n---\nFile: a.rs\nL3- x\nL4: foo();\n---\nFile: b.rs\nL9: foo\n---"
        );
        assert_eq!(out.display, "Found 2 matches");
        let names = format_results(&report(true), &hits, |p| p.display().to_string());
        assert_eq!(
            text(&names),
            "Found 2 files with matches for pattern \"foo\" in path \".\" (filter: \"*.rs\"):\na.rs\nb.rs"
        );
        let none = format_results(&report(false), &[], |p| p.display().to_string());
        assert_eq!(
            text(&none),
            "No matches found for pattern \"foo\" in path \".\" (filter: \"*.rs\")."
        );
    }

    #[test]
    fn limit_note_and_long_lines() {
        let mut r = report(false);
        r.total_max = 1;
        r.include = None;
        let long = "é".repeat(2100);
        let out = format_results(&r, &[hit("a", &[(1, &long, false)])], |p| {
            p.display().to_string()
        });
        let t = text(&out);
        assert!(t.starts_with(
            "Found 1 match for pattern \"foo\" in path \".\" (results limited to 1 matches for performance):"
        ));
        assert!(t.contains(&format!("L1: {}... [truncated]", "é".repeat(2000))));
        assert_eq!(out.display, "Found 1 match (limited)");
    }

    #[test]
    fn auto_context_radius() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.txt");
        let body: String = (1..=130).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&file, body).unwrap();
        let path = file.display().to_string();
        let mut one = vec![hit(&path, &[(100, "line 100", false)])];
        add_auto_context(&mut one, None, |p| std::fs::read(p).ok());
        assert_eq!(one[0].lines.first().unwrap().number, 50);
        assert_eq!(one[0].lines.last().unwrap().number, 130);
        assert_eq!(one[0].match_count(), 1);
        let mut two = vec![hit(
            &path,
            &[(10, "line 10", false), (100, "line 100", false)],
        )];
        add_auto_context(&mut two, None, |p| std::fs::read(p).ok());
        assert_eq!(two[0].lines.first().unwrap().number, 1);
        assert_eq!(two[0].lines.len(), 25 + 31);
        let mut four = vec![hit(
            &path,
            &[
                (1, "a", false),
                (2, "b", false),
                (3, "c", false),
                (4, "d", false),
            ],
        )];
        add_auto_context(&mut four, None, |p| std::fs::read(p).ok());
        assert_eq!(four[0].lines.len(), 4);
    }
}
