//! `git status`, `log`, `diff`, `show` and `branch` listings: only the options listed
//! here run unasked, spelled out (git's own option parser accepts abbreviations of
//! some), none that writes (`--output`), runs a program (`--ext-diff`, `--textconv`,
//! `--show-signature`, a `%G` format placeholder, which runs the signature checker)
//! or reads a file by name (`-O`, `-L`); and no pathspec with magic or wildcards
//! (git's `*` also matches dot-files: `-- '*env'` reaches `.env`).

use super::options::Arg::{self, No, Optional, Required};

/// The long options of `git log`, `show` and `diff` that only list.
const HISTORY_LONG: &[(&str, Arg)] = &[
    ("oneline", No),
    ("stat", Optional),
    ("numstat", No),
    ("shortstat", No),
    ("dirstat", Optional),
    ("cumulative", No),
    ("compact-summary", No),
    ("summary", No),
    ("name-only", No),
    ("name-status", No),
    ("raw", No),
    ("patch", No),
    ("no-patch", No),
    ("patch-with-stat", No),
    ("patch-with-raw", No),
    ("graph", No),
    ("decorate", Optional),
    ("no-decorate", No),
    ("all", No),
    ("branches", Optional),
    ("tags", Optional),
    ("remotes", Optional),
    ("reverse", No),
    ("first-parent", No),
    ("merges", No),
    ("no-merges", No),
    ("abbrev-commit", No),
    ("no-abbrev-commit", No),
    ("abbrev", Optional),
    ("full-index", No),
    ("relative-date", No),
    ("date", Required),
    ("color", Optional),
    ("no-color", No),
    ("word-diff", Optional),
    ("color-words", Optional),
    ("color-moved", Optional),
    ("no-color-moved", No),
    ("cached", No),
    ("staged", No),
    ("merge-base", No),
    ("ignore-all-space", No),
    ("ignore-space-change", No),
    ("ignore-space-at-eol", No),
    ("ignore-blank-lines", No),
    ("ignore-cr-at-eol", No),
    ("unified", Required),
    ("inter-hunk-context", Required),
    ("function-context", No),
    ("patience", No),
    ("histogram", No),
    ("minimal", No),
    ("diff-algorithm", Required),
    ("indent-heuristic", No),
    ("no-indent-heuristic", No),
    ("find-renames", Optional),
    ("find-copies", Optional),
    ("find-copies-harder", No),
    ("no-renames", No),
    ("diff-filter", Required),
    ("check", No),
    ("exit-code", No),
    ("quiet", No),
    ("text", No),
    ("no-textconv", No),
    ("no-ext-diff", No),
    ("no-prefix", No),
    ("default-prefix", No),
    ("relative", Optional),
    ("no-relative", No),
    ("submodule", Optional),
    ("ignore-submodules", Optional),
    ("follow", No),
    ("full-diff", No),
    ("since", Required),
    ("after", Required),
    ("until", Required),
    ("before", Required),
    ("author", Required),
    ("committer", Required),
    ("grep", Required),
    ("all-match", No),
    ("invert-grep", No),
    ("regexp-ignore-case", No),
    ("basic-regexp", No),
    ("extended-regexp", No),
    ("fixed-strings", No),
    ("max-count", Required),
    ("skip", Required),
    ("max-parents", Required),
    ("min-parents", Required),
    ("no-min-parents", No),
    ("no-max-parents", No),
    ("left-right", No),
    ("cherry-pick", No),
    ("cherry-mark", No),
    ("cherry", No),
    ("boundary", No),
    ("topo-order", No),
    ("date-order", No),
    ("author-date-order", No),
    ("parents", No),
    ("children", No),
    ("full-history", No),
    ("simplify-by-decoration", No),
    ("ancestry-path", No),
    ("no-walk", Optional),
    ("do-walk", No),
    ("source", No),
    ("use-mailmap", No),
    ("no-mailmap", No),
    ("no-notes", No),
    ("expand-tabs", Optional),
    ("no-expand-tabs", No),
    ("cc", No),
    ("combined-all-paths", No),
    ("diff-merges", Required),
    ("remerge-diff", No),
    ("format", Required),
    ("pretty", Optional),
];

/// `git status`'s own long options.
const STATUS_LONG: &[(&str, Arg)] = &[
    ("short", No),
    ("branch", No),
    ("porcelain", Optional),
    ("long", No),
    ("verbose", No),
    ("untracked-files", Optional),
    ("ignored", Optional),
    ("ignore-submodules", Optional),
    ("column", Optional),
    ("no-column", No),
    ("ahead-behind", No),
    ("no-ahead-behind", No),
    ("renames", No),
    ("no-renames", No),
    ("find-renames", Optional),
    ("show-stash", No),
    ("null", No),
];

/// `git branch` arguments of a listing.
const BRANCH_LISTING: [&str; 8] = [
    "--show-current",
    "-a",
    "--all",
    "-r",
    "--remotes",
    "-v",
    "-vv",
    "--list",
];

/// git's built-in pretty formats (any other name may be a `pretty.<name>` alias of
/// the repository's configuration).
const PRETTY_NAMES: [&str; 9] = [
    "oneline",
    "short",
    "medium",
    "full",
    "fuller",
    "reference",
    "email",
    "raw",
    "mboxrd",
];

/// Whether the long option `arg` (`--text`, `--stat=10`) is one of the listed ones,
/// spelled out.
pub(super) fn is_listed(arg: &str) -> bool {
    let Some(key) = arg.strip_prefix("--") else {
        return false;
    };
    let key = key.split('=').next().unwrap_or("");
    HISTORY_LONG
        .iter()
        .chain(STATUS_LONG)
        .any(|(name, _)| *name == key)
}

/// The pathspecs and revisions of a git listing (revisions are told apart by the
/// caller), or why it is not a read-only listing.
pub(super) fn operands(args: &[String]) -> Result<Vec<String>, String> {
    let Some((sub, rest)) = args.split_first() else {
        return Err("`git` without a sub-command".into());
    };
    let long = match sub.as_str() {
        "branch" if rest.iter().all(|a| BRANCH_LISTING.contains(&a.as_str())) => {
            return Ok(Vec::new());
        }
        "status" => STATUS_LONG,
        "log" | "diff" | "show" => HISTORY_LONG,
        _ => return Err("`git` is not status, log, diff, show or a branch listing".into()),
    };
    let mut out = Vec::new();
    let mut words = rest.iter();
    let mut paths_only = false;
    while let Some(arg) = words.next() {
        if paths_only || arg == "-" || !arg.starts_with('-') {
            pathspec_problem(arg)?;
            out.push(arg.clone());
        } else if arg == "--" {
            paths_only = true;
            out.push(arg.clone());
        } else if let Some(option) = arg.strip_prefix("--") {
            long_option(sub, option, long, &mut words)?;
        } else if sub == "status" {
            status_short(arg)?;
        } else {
            history_short(sub, arg, &mut words)?;
        }
    }
    Ok(out)
}

fn long_option<'a>(
    sub: &str,
    option: &str,
    long: &[(&str, Arg)],
    words: &mut impl Iterator<Item = &'a String>,
) -> Result<(), String> {
    let (key, attached) = match option.split_once('=') {
        Some((key, value)) => (key, Some(value)),
        None => (option, None),
    };
    let unknown = || {
        format!("`git {sub} --{key}` is not an option known to be read-only (spell options out)")
    };
    let (_, takes) = long.iter().find(|(n, _)| *n == key).ok_or_else(unknown)?;
    let value = match (takes, attached) {
        (No, Some(_)) => return Err(unknown()),
        (Required, None) => Some(next_value(sub, key, words)?),
        (_, attached) => attached.map(str::to_string),
    };
    if matches!(key, "format" | "pretty") {
        if let Some(format) = value.as_deref() {
            format_problem(format)?;
        }
    }
    Ok(())
}

/// A value given as the next word: never an option (git reads some values only after
/// `=`, and would read that word as an option).
fn next_value<'a>(
    sub: &str,
    key: &str,
    words: &mut impl Iterator<Item = &'a String>,
) -> Result<String, String> {
    match words.next() {
        Some(word) if !word.starts_with('-') => Ok(word.clone()),
        _ => Err(format!("`git {sub} {key}` without a plain value")),
    }
}

/// `--format`/`--pretty`: a built-in name or a format string without `%G` (the
/// signature placeholders, which run the configured signature program).
fn format_problem(format: &str) -> Result<(), String> {
    if format.contains("%G") {
        return Err("`git` format with `%G` runs the signature program".into());
    }
    let custom = format.starts_with("format:") || format.starts_with("tformat:");
    if custom || format.contains('%') || PRETTY_NAMES.contains(&format) {
        Ok(())
    } else {
        Err(format!(
            "`git` pretty format `{format}` may be one the repository defines"
        ))
    }
}

/// `git status -sb`, `-uno`, `-z`, `-v`.
fn status_short(arg: &str) -> Result<(), String> {
    let body = &arg[1..];
    let untracked = body
        .strip_prefix('u')
        .is_some_and(|mode| matches!(mode, "" | "no" | "normal" | "all"));
    if untracked || (!body.is_empty() && body.chars().all(|c| "sbvz".contains(c))) {
        Ok(())
    } else {
        Err(format!("`git status {arg}` is not known to be read-only"))
    }
}

/// `git log -p`, `-5`, `-n 5`, `-U3`, `-M50%`, `-S text`; not `-O FILE`, `-L …`.
fn history_short<'a>(
    sub: &str,
    arg: &str,
    words: &mut impl Iterator<Item = &'a String>,
) -> Result<(), String> {
    let body = &arg[1..];
    let mut chars = body.chars();
    let first = chars.next().unwrap_or('-');
    let rest = chars.as_str();
    let amount = |s: &str| s.chars().all(|c| c.is_ascii_digit() || "%./".contains(c));
    let fine = match first {
        _ if body.chars().all(|c| c.is_ascii_digit()) => true,
        'p' | 'u' | 's' | 'z' | 'w' | 'b' | 'i' | 'R' | 'a' | 'W' | 'm' | 'c' | 't' | 'r' | 'E'
        | 'F' | 'D' => rest.is_empty(),
        'U' | 'M' | 'C' | 'B' | 'l' => amount(rest),
        'X' => true,
        'n' | 'S' | 'G' | 'I' => {
            if rest.is_empty() {
                next_value(sub, arg, words)?;
            }
            true
        }
        _ => false,
    };
    if fine {
        Ok(())
    } else {
        Err(format!("`git {sub} {arg}` is not known to be read-only"))
    }
}

/// A pathspec with magic (`:(glob)…`, `:!x`) or wildcards, which git matches across
/// `/` and dot-files alike (before `--` too: a word with a wildcard is a pathspec).
fn pathspec_problem(arg: &str) -> Result<(), String> {
    let magic = arg.starts_with(":(") || arg.starts_with(":!") || arg.starts_with(":^");
    if magic || arg.contains(['*', '?', '[']) {
        return Err(format!(
            "`git` pathspec `{arg}` may match more than it names (magic or wildcards)"
        ));
    }
    Ok(())
}
