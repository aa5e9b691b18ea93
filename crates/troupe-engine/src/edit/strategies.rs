//! The four matching strategies, tried in order: exact → flexible → regex → fuzzy,
//! with gemini-cli 0.61's semantics. Every strategy that ignores indentation re-indents
//! the replacement to the indentation of the block it matched.

use regex::Regex;

use super::js::{self, JS_SPACE_CLASS};
use super::{LineRange, Occurrences, Replacement, Strategy};
use crate::text::utf16_len;

/// Fuzzy matching: the highest weighted distance accepted, per character of the search.
const FUZZY_THRESHOLD: f64 = 0.1;
/// Fuzzy matching: what a whitespace-only difference costs relative to another one.
const WHITESPACE_PENALTY: f64 = 0.1;
/// Fuzzy matching is skipped when `lines × old_len²` passes this (about a second).
const FUZZY_WORK_LIMIT: f64 = 4e8;
/// Fuzzy matching is skipped for a search shorter than this (UTF-16 units).
const FUZZY_MIN_LEN: usize = 10;

/// Replaces `old` by `new` in `content` (LF-normalised) with the first strategy that
/// finds it. `old_raw` is the string as the model sent it (its length gates fuzzy).
pub fn calculate(content: &str, old_raw: &str, new_raw: &str, want: Occurrences) -> Replacement {
    let old = old_raw.replace("\r\n", "\n");
    let new = new_raw.replace("\r\n", "\n");
    let many = want.allows_many();
    let found = if old.is_empty() {
        None
    } else {
        exact(content, &old, &new, many)
            .or_else(|| flexible(content, &old, &new))
            .or_else(|| regex_match(content, &old, &new, many))
            .or_else(|| fuzzy(content, old_raw, &old, &new))
    };
    found
        .unwrap_or_else(|| Replacement {
            new_content: content.to_string(),
            occurrences: 0,
            strategy: None,
            ranges: Vec::new(),
            final_old: old.clone(),
            final_new: new.clone(),
        })
        .with_strings(old, new)
}

impl Replacement {
    fn with_strings(mut self, old: String, new: String) -> Self {
        self.final_old = old;
        self.final_new = new;
        self
    }

    fn found(new_content: String, strategy: Strategy, ranges: Vec<LineRange>) -> Self {
        Self {
            new_content,
            occurrences: ranges.len(),
            strategy: Some(strategy),
            ranges,
            final_old: String::new(),
            final_new: String::new(),
        }
    }
}

/// gemini-cli's `restoreTrailingNewline`: an edit never adds or removes the file's
/// final newline.
pub fn restore_trailing_newline(original: &str, mut modified: String) -> String {
    match (original.ends_with('\n'), modified.ends_with('\n')) {
        (true, false) => modified.push('\n'),
        (false, true) => {
            modified.pop();
        }
        _ => {}
    }
    modified
}

/// gemini-cli's `applyIndentation`: re-bases `lines` from the indentation of their first
/// line onto `target`, keeping relative indentation; blank lines become empty.
pub fn apply_indentation(lines: &[&str], target: &str) -> Vec<String> {
    let Some(first) = lines.first() else {
        return Vec::new();
    };
    let reference = js::leading_indent(first);
    lines
        .iter()
        .map(|line| {
            if js::trim(line).is_empty() {
                String::new()
            } else if let Some(rest) = line.strip_prefix(reference) {
                format!("{target}{rest}")
            } else {
                format!("{target}{}", js::trim_start(line))
            }
        })
        .collect()
}

/// Re-indents `new_lines` using how the matched `window` of the file indents the lines of
/// `old_lines`: when the model indented `old_string` wrongly but consistently (say 0/2
/// where the file has 4/8) and `new_string` in the same frame, each indentation of
/// `new_string` is mapped to the file's. `None` when the mapping is not clear (an
/// indentation of `new_string` that `old_string` does not use, or one indentation of
/// `old_string` matched to two of the file); callers then fall back to
/// [`apply_indentation`], gemini-cli's rule.
pub fn apply_indentation_mapped(
    new_lines: &[&str],
    old_lines: &[&str],
    window: &[&str],
) -> Option<Vec<String>> {
    let first_old = old_lines.first()?;
    let first_new = new_lines.first()?;
    if js::leading_indent(first_old) != js::leading_indent(first_new) {
        return None;
    }
    let mut map: Vec<(&str, &str)> = Vec::new();
    for (old, file) in old_lines.iter().zip(window) {
        if js::trim(old).is_empty() || js::trim(file).is_empty() {
            continue;
        }
        let (o, f) = (js::leading_indent(old), js::leading_indent(file));
        match map.iter().find(|(k, _)| *k == o) {
            Some((_, v)) if *v != f => return None,
            Some(_) => {}
            None => map.push((o, f)),
        }
    }
    new_lines
        .iter()
        .map(|line| {
            if js::trim(line).is_empty() {
                return Some(String::new());
            }
            let indent = js::leading_indent(line);
            let rest = &line[indent.len()..];
            map.iter()
                .find(|(k, _)| *k == indent)
                .map(|(_, f)| format!("{f}{rest}"))
        })
        .collect()
}

/// 1-based line numbers of byte offsets, computed in one forward pass.
struct LineCounter<'a> {
    text: &'a str,
    pos: usize,
    line: usize,
}

impl<'a> LineCounter<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            pos: 0,
            line: 1,
        }
    }

    /// The line holding byte `offset`; offsets must not decrease.
    fn line_at(&mut self, offset: usize) -> usize {
        let offset = offset.min(self.text.len());
        if offset > self.pos {
            self.line += self.text.as_bytes()[self.pos..offset]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            self.pos = offset;
        }
        self.line
    }
}

/// The range of lines a match `[start, end)` covers.
fn byte_range_lines(counter: &mut LineCounter, start: usize, end: usize) -> LineRange {
    let first = counter.line_at(start);
    let last_byte = if end > start { end - 1 } else { start };
    LineRange {
        start: first,
        end: counter.line_at(last_byte),
    }
}

fn exact(content: &str, old: &str, new: &str, many: bool) -> Option<Replacement> {
    let mut counter = LineCounter::new(content);
    let ranges: Vec<LineRange> = content
        .match_indices(old)
        .map(|(at, m)| byte_range_lines(&mut counter, at, at + m.len()))
        .collect();
    if ranges.is_empty() {
        return None;
    }
    let new_content = if !many && ranges.len() > 1 {
        content.to_string()
    } else {
        restore_trailing_newline(content, content.replace(old, new))
    };
    Some(Replacement::found(new_content, Strategy::Exact, ranges))
}

fn flexible(content: &str, old: &str, new: &str) -> Option<Replacement> {
    let source = js::lines_with_ends(content);
    let trimmed: Vec<&str> = source.iter().map(|l| js::trim(l)).collect();
    let old_lines: Vec<&str> = old.split('\n').collect();
    let search: Vec<&str> = old_lines.iter().map(|l| js::trim(l)).collect();
    let replace: Vec<&str> = new.split('\n').collect();
    let len = search.len();
    let mut out = String::with_capacity(content.len());
    let mut ranges = Vec::new();
    let mut i = 0;
    while i < source.len() {
        let fits = i + len <= source.len();
        if fits && trimmed[i..i + len] == search[..] {
            let window = &source[i..i + len];
            let indent = js::leading_indent(window[0]);
            let mut text = apply_indentation_mapped(&replace, &old_lines, window)
                .unwrap_or_else(|| apply_indentation(&replace, indent))
                .join("\n");
            if !new.is_empty() && window[len - 1].ends_with('\n') && !text.ends_with('\n') {
                text.push('\n');
            }
            out.push_str(&text);
            ranges.push(LineRange {
                start: i + 1,
                end: i + len,
            });
            i += len;
        } else {
            out.push_str(source[i]);
            i += 1;
        }
    }
    if ranges.is_empty() {
        return None;
    }
    Some(Replacement::found(
        restore_trailing_newline(content, out),
        Strategy::Flexible,
        ranges,
    ))
}

fn regex_delimiters() -> &'static [char; 10] {
    &['(', ')', ':', '[', ']', '{', '}', '>', '<', '=']
}

/// The pattern gemini-cli builds: the tokens of `old` (delimiters split off), joined by
/// `\s*`, anchored after a line's indentation.
pub fn token_pattern(old: &str) -> Option<String> {
    let mut processed = old.to_string();
    for d in regex_delimiters() {
        processed = processed.replace(*d, &format!(" {d} "));
    }
    let tokens: Vec<String> = processed
        .split(js::is_js_space)
        .filter(|t| !t.is_empty())
        .map(regex::escape)
        .collect();
    if tokens.is_empty() {
        return None;
    }
    Some(format!(
        "(?m)^([ \\t]*){}",
        tokens.join(&format!("{JS_SPACE_CLASS}*"))
    ))
}

fn regex_match(content: &str, old: &str, new: &str, many: bool) -> Option<Replacement> {
    let pattern = token_pattern(old)?;
    let re = Regex::new(&pattern).ok()?;
    let new_lines: Vec<&str> = new.split('\n').collect();
    let mut counter = LineCounter::new(content);
    let mut out = String::with_capacity(content.len() + new.len());
    let mut ranges = Vec::new();
    let mut last = 0;
    for caps in re.captures_iter(content) {
        let Some(whole) = caps.get(0) else { continue };
        ranges.push(byte_range_lines(&mut counter, whole.start(), whole.end()));
        if many || ranges.len() == 1 {
            let indent = caps.get(1).map_or("", |m| m.as_str());
            out.push_str(&content[last..whole.start()]);
            out.push_str(&apply_indentation(&new_lines, indent).join("\n"));
            last = whole.end();
        }
    }
    if ranges.is_empty() {
        return None;
    }
    out.push_str(&content[last..]);
    Some(Replacement::found(
        restore_trailing_newline(content, out),
        Strategy::Regex,
        ranges,
    ))
}

fn utf16(s: &str) -> Vec<u16> {
    s.encode_utf16().collect()
}

/// Levenshtein distance over UTF-16 code units, as fast-levenshtein counts.
fn distance(a: &str, b: &[u16]) -> usize {
    let a: Vec<u16> = utf16(a);
    let b: Vec<u16> = b.to_vec();
    strsim::generic_levenshtein(&a, &b)
}

fn fuzzy(content: &str, old_raw: &str, old: &str, new: &str) -> Option<Replacement> {
    let old_len = utf16_len(old_raw);
    if old_len < FUZZY_MIN_LEN {
        return None;
    }
    let source = js::lines_with_ends(content);
    let old_lines = js::lines_with_ends(old);
    let search: Vec<&str> = old_lines.iter().map(|l| js::trim_end(l)).collect();
    if source.len() as f64 * (old_len as f64).powi(2) > FUZZY_WORK_LIMIT || search.is_empty() {
        return None;
    }
    let n = search.len();
    if source.len() < n {
        return None;
    }
    let block = search.join("\n");
    let block16 = utf16(&block);
    let block_stripped = utf16(&js::strip_space(&block));
    if block16.is_empty() {
        return None;
    }
    let block_len = block16.len() as f64;
    let trimmed: Vec<&str> = source.iter().map(|l| js::trim_end(l)).collect();
    let mut candidates: Vec<(f64, usize)> = Vec::new();
    for i in 0..=source.len() - n {
        let window = trimmed[i..i + n].join("\n");
        let window16 = utf16(&window);
        let length_diff = (window16.len() as f64 - block_len).abs();
        if length_diff / block_len > FUZZY_THRESHOLD / WHITESPACE_PENALTY {
            continue;
        }
        let raw = strsim::generic_levenshtein(&window16, &block16) as f64;
        let norm = distance(&js::strip_space(&window), &block_stripped) as f64;
        let score = (norm + (raw - norm) * WHITESPACE_PENALTY) / block_len;
        if score <= FUZZY_THRESHOLD {
            candidates.push((score, i));
        }
    }
    if candidates.is_empty() {
        return None;
    }
    candidates.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut selected: Vec<usize> = Vec::new();
    for (_, i) in candidates {
        if selected.iter().all(|&s| s.abs_diff(i) >= n) {
            selected.push(i);
        }
    }
    selected.sort_unstable();
    let new_lines: Vec<&str> = new.split('\n').collect();
    let mut out = String::with_capacity(content.len());
    let mut next = 0;
    let mut ranges = Vec::new();
    for &i in &selected {
        for line in &source[next..i] {
            out.push_str(line);
        }
        let indent = js::leading_indent(source[i]);
        let lines = apply_indentation_mapped(&new_lines, &old_lines, &source[i..i + n])
            .unwrap_or_else(|| apply_indentation(&new_lines, indent));
        out.push_str(&lines.join("\n"));
        if source[i + n - 1].ends_with('\n') {
            out.push('\n');
        }
        ranges.push(LineRange {
            start: i + 1,
            end: i + n,
        });
        next = i + n;
    }
    for line in &source[next..] {
        out.push_str(line);
    }
    Some(Replacement::found(
        restore_trailing_newline(content, out),
        Strategy::Fuzzy,
        ranges,
    ))
}
