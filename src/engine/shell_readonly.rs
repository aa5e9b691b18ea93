//! Which shell command lines are read-only, decided on the tree-sitter-bash syntax tree
//! and conservatively: anything the classifier does not positively know to be a plain
//! read-only command asks.
//!
//! A line is read-only only when (1) its tree holds nothing but lists, pipelines and
//! simple commands made of literal words, quoted strings and plain `$VAR` expansions —
//! so any command or process substitution (quoted or not, backticks included), any
//! `${…}` expansion (`${x@P}` runs prompt expansion), any arithmetic, any assignment or
//! environment prefix, any redirection, subshell, loop, function or background job
//! makes it ask; (2) every command is on the read-only list and uses no option that
//! writes or executes (`uniq IN OUT`, `sort -o`, `find -exec`, `git --output`,
//! `rg --pre`, …); and (3) every path argument resolves inside the workspace roots
//! (`cat ../x`, `cat /etc/passwd`, `cat ~/.ssh/id_rsa` ask).

use std::path::{Path, PathBuf};

use tree_sitter::Node;

use super::shell_syntax::strip_shell_wrapper;
use super::workspace::normalize_lexically;

/// Longest command line classified; longer ones ask.
const MAX_LEN: usize = 100_000;
const MAX_DEPTH: usize = 4;

/// Tree nodes a read-only line may contain (named kinds).
const PLAIN_NAMED: [&str; 14] = [
    "program",
    "list",
    "pipeline",
    "command",
    "command_name",
    "word",
    "string",
    "string_content",
    "raw_string",
    "concatenation",
    "number",
    "comment",
    "simple_expansion",
    "variable_name",
];

/// Anonymous tokens a read-only line may contain.
const PLAIN_TOKENS: [&str; 7] = ["&&", "||", "|", "|&", ";", "\"", "$"];

/// Where paths of a command line resolve, and how to tell inside from outside.
pub struct PathScope<'a> {
    /// The directory the command runs in.
    pub cwd: PathBuf,
    /// What `~` expands to.
    pub home: PathBuf,
    /// Whether an absolute path lies inside the workspace roots; the caller follows
    /// symlinks (`..` after a link is resolved physically, as the kernel does). Asked
    /// with the path as written and with its lexically normalised form.
    pub inside: &'a dyn Fn(&Path) -> bool,
    /// Whether every existing path an absolute glob pattern may expand to (bash's
    /// `*`, `?`, `[…]` after a glob-free directory prefix inside the roots; no `..`,
    /// no brace, no dot-leading glob component) lies inside the roots.
    pub glob_inside: &'a dyn Fn(&Path) -> bool,
}

/// The classifier's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Runs without asking in default mode.
    ReadOnly,
    /// Needs the user's approval, and why.
    Ask(String),
}

/// Classifies `command` (a `bash -c` wrapper is looked through).
pub fn classify(command: &str, scope: &PathScope) -> Verdict {
    let stripped = strip_shell_wrapper(command);
    let mut cwd = scope.cwd.clone();
    match classify_line(&stripped, scope, &mut cwd, 0) {
        Ok(()) => Verdict::ReadOnly,
        Err(reason) => Verdict::Ask(reason),
    }
}

/// Why a command line is not plain enough for an allow-list entry to cover it (its
/// structure, or an option that writes or executes); `None` when it is plain.
pub fn structure_problem(command: &str) -> Option<String> {
    let stripped = strip_shell_wrapper(command);
    let (tree, src) = match parse(&stripped) {
        Ok(parsed) => parsed,
        Err(reason) => return Some(reason),
    };
    if let Err(reason) = check_structure(tree.root_node()) {
        return Some(reason);
    }
    let mut problem = None;
    each_command(tree.root_node(), &mut |node| {
        if problem.is_some() {
            return;
        }
        let Some((name, args)) = words_of(node, src.as_bytes()) else {
            problem = Some("a command word is not a literal".to_string());
            return;
        };
        let args: Vec<String> = args.into_iter().map(|a| a.unwrap_or_default()).collect();
        if let Some(reason) = writes_or_executes(&name, &args) {
            problem = Some(reason);
        } else if matches!(name.as_str(), "bash" | "sh" | "zsh") {
            if let Some(at) = args.iter().position(|a| a == "-c") {
                problem = args
                    .get(at + 1)
                    .and_then(|script| structure_problem(script));
            }
        }
    });
    problem
}

fn parse(command: &str) -> Result<(tree_sitter::Tree, String), String> {
    if command.trim().is_empty() || command.len() > MAX_LEN {
        return Err("empty or over-long command".into());
    }
    let tree = crate::engine::shell_syntax::parse_tree(command)
        .ok_or_else(|| "the command does not parse".to_string())?;
    if tree.root_node().has_error() {
        return Err("the command does not parse cleanly".into());
    }
    Ok((tree, command.to_string()))
}

fn classify_line(
    command: &str,
    scope: &PathScope,
    cwd: &mut PathBuf,
    depth: usize,
) -> Result<(), String> {
    let (tree, src) = parse(command)?;
    let root = tree.root_node();
    check_structure(root)?;
    let mut commands = Vec::new();
    each_command(root, &mut |node| commands.push(node));
    if commands.is_empty() {
        return Err("no command".into());
    }
    for node in commands {
        let (name, args) =
            words_of(node, src.as_bytes()).ok_or("a command name is not a literal word")?;
        check_command(&name, &args, scope, cwd, depth)?;
    }
    Ok(())
}

/// Every node is one of the plain kinds.
fn check_structure(node: Node<'_>) -> Result<(), String> {
    let kind = node.kind();
    let plain = if node.is_named() {
        PLAIN_NAMED.contains(&kind)
    } else {
        PLAIN_TOKENS.contains(&kind) || kind.trim().is_empty()
    };
    if !plain {
        return Err(format!("contains `{kind}`"));
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        check_structure(child)?;
    }
    Ok(())
}

fn each_command<'t>(node: Node<'t>, f: &mut dyn FnMut(Node<'t>)) {
    if node.kind() == "command" {
        f(node);
        return;
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        each_command(child, f);
    }
}

/// The command's name and its arguments' values (`None`: not known before it runs).
fn words_of(node: Node<'_>, src: &[u8]) -> Option<(String, Vec<Option<String>>)> {
    let name_node = node.child_by_field_name("name")?;
    let name = value(name_node, src)?;
    let mut args = Vec::new();
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        if child.id() == name_node.id() || !child.is_named() {
            continue;
        }
        args.push(value(child, src));
    }
    Some((name, args))
}

/// What bash makes of a word, or `None` when it depends on an expansion.
fn value(node: Node<'_>, src: &[u8]) -> Option<String> {
    let text = node.utf8_text(src).ok()?;
    match node.kind() {
        "command_name" => value(node.named_child(0)?, src),
        "word" | "number" => Some(unescape_word(text)),
        "raw_string" => Some(text.trim_matches('\'').to_string()),
        "string" => {
            let mut out = String::new();
            let mut cursor = node.walk();
            for child in node.children(&mut cursor) {
                match child.kind() {
                    "\"" => {}
                    "string_content" => out.push_str(&unescape_double(child.utf8_text(src).ok()?)),
                    _ => return None,
                }
            }
            Some(out)
        }
        "concatenation" => {
            let mut out = String::new();
            let mut cursor = node.walk();
            for child in node.children(&mut cursor) {
                out.push_str(&value(child, src)?);
            }
            Some(out)
        }
        _ => None,
    }
}

fn unescape_word(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn unescape_double(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && matches!(chars.peek(), Some('$' | '`' | '"' | '\\')) {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Commands whose arguments are never paths.
const NO_PATHS: [&str; 13] = [
    "echo", "true", "false", "id", "pwd", "whoami", "uname", "seq", "expr", "numfmt", "which",
    "tr", "printf",
];

/// Commands that read the files they are given (and nothing else).
const READ_FILES: [&str; 19] = [
    "cat", "cut", "grep", "head", "tail", "ls", "nl", "paste", "rev", "stat", "wc", "tac", "uniq",
    "sort", "base64", "find", "rg", "git", "sed",
];

fn check_command(
    name: &str,
    args: &[Option<String>],
    scope: &PathScope,
    cwd: &mut PathBuf,
    depth: usize,
) -> Result<(), String> {
    if NO_PATHS.contains(&name) {
        return Ok(());
    }
    if matches!(name, "bash" | "sh" | "zsh") {
        return match args {
            [Some(flag), Some(script)] if flag == "-c" && depth < MAX_DEPTH => {
                classify_line(script, scope, cwd, depth + 1)
            }
            _ => Err(format!("`{name}` is not a plain -c script")),
        };
    }
    if name == "cd" {
        let [Some(dir)] = args else {
            return Err("`cd` without one literal directory".into());
        };
        let target = resolve(dir, cwd, &scope.home).ok_or("`cd` to an unknown place")?;
        if !(scope.inside)(&target) {
            return Err(format!("`cd` leaves the workspace ({})", target.display()));
        }
        *cwd = target;
        return Ok(());
    }
    if !READ_FILES.contains(&name) {
        return Err(format!("`{name}` is not a known read-only command"));
    }
    let known: Vec<String> = args
        .iter()
        .map(|a| a.clone().ok_or("an argument depends on an expansion"))
        .collect::<Result<_, _>>()?;
    if let Some(reason) = writes_or_executes(name, &known) {
        return Err(reason);
    }
    if follows_symlinks_recursively(name, &known) {
        return Err(format!(
            "`{name}` follows symbolic links while recursing (they may lead outside)"
        ));
    }
    if name == "git" {
        if let Some(problem) = git_problem(&known) {
            return Err(format!("`git` {problem}"));
        }
    }
    for path in path_operands(name, &known) {
        if path == "-" {
            continue;
        }
        check_path_operand(&path, cwd, scope)?;
    }
    Ok(())
}

/// Whether a word holds a glob character bash expands (`*`, `?`, `[`).
fn has_glob(text: &str) -> bool {
    text.contains(['*', '?', '['])
}

/// Asks unless everything `path` (an operand of a read-only command run in `cwd`) can
/// name lies inside the roots: brace expansion and `~user` ask; a glob asks when a
/// `..` follows it or a glob component starts with `.` or `[` (it may match `.` or
/// `..`), and otherwise every match is checked by the caller ([`PathScope::glob_inside`]).
fn check_path_operand(path: &str, cwd: &Path, scope: &PathScope) -> Result<(), String> {
    let unknown = || format!("cannot tell where `{path}` is");
    if path.contains(['{', '}']) {
        return Err(format!("{} (brace expansion)", unknown()));
    }
    let written = absolute(path, cwd, &scope.home).ok_or_else(unknown)?;
    let resolved = normalize_lexically(&written);
    let outside = || {
        Err(format!(
            "reads outside the workspace ({})",
            resolved.display()
        ))
    };
    if !has_glob(path) {
        if (scope.inside)(&resolved) && (scope.inside)(&written) {
            return Ok(());
        }
        return outside();
    }
    let mut globbed = false;
    for component in written.components() {
        let text = component.as_os_str().to_string_lossy();
        if globbed && text == ".." {
            return Err(format!("{} (`..` after a glob pattern)", unknown()));
        }
        if has_glob(&text) {
            if text.starts_with(['.', '[']) {
                return Err(format!("{} (the glob may match `.` or `..`)", unknown()));
            }
            globbed = true;
        }
    }
    let prefix = glob_free_prefix(&written);
    if !(scope.inside)(&normalize_lexically(&prefix)) || !(scope.inside)(&prefix) {
        return outside();
    }
    if !(scope.glob_inside)(&written) {
        return Err(format!(
            "`{path}` may match a path outside the workspace ({})",
            resolved.display()
        ));
    }
    Ok(())
}

/// `~`, relative and absolute paths made absolute (not normalised); `None` for `~user`.
fn absolute(path: &str, cwd: &Path, home: &Path) -> Option<PathBuf> {
    if path == "~" {
        Some(home.to_path_buf())
    } else if let Some(rest) = path.strip_prefix("~/") {
        Some(home.join(rest))
    } else if path.starts_with('~') {
        None
    } else {
        Some(cwd.join(path))
    }
}

/// `~`, relative and absolute paths made absolute and normalised; `None` for `~user`.
fn resolve(path: &str, cwd: &Path, home: &Path) -> Option<PathBuf> {
    absolute(path, cwd, home).map(|p| normalize_lexically(&p))
}

/// The directory part of a path before its first glob character.
fn glob_free_prefix(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        let text = component.as_os_str().to_string_lossy();
        if has_glob(&text) {
            break;
        }
        out.push(component.as_os_str());
    }
    out
}

/// The arguments of a read-only command that may name files: every operand that is not
/// an option, the value of `--opt=value`, and any single-dash option holding a path
/// (asked about as such). A grep/rg/sed pattern or script given as first operand is
/// not a path.
fn path_operands(name: &str, args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let explicit_pattern = args.iter().any(|a| {
        matches!(a.as_str(), "-e" | "-f" | "--regexp" | "--file")
            || a.starts_with("--regexp=")
            || a.starts_with("--file=")
    });
    let mut skip_first = matches!(name, "grep" | "rg" | "sed") && !explicit_pattern;
    let mut after_dashdash = false;
    let mut find_expression = false;
    for arg in args {
        if find_expression {
            continue;
        }
        if !after_dashdash && arg == "--" {
            after_dashdash = true;
            continue;
        }
        if !after_dashdash && arg.starts_with('-') && arg.len() > 1 {
            if name == "find" && !matches!(arg.as_str(), "-L" | "-H" | "-P") {
                find_expression = true;
                continue;
            }
            if let Some((_, value)) = arg.split_once('=') {
                out.push(value.to_string());
            } else if !arg.starts_with("--") && arg.contains(['/', '~']) {
                out.push(arg.trim_start_matches('-').to_string());
            }
            continue;
        }
        if name == "find" && (arg == "(" || arg == "!") {
            find_expression = true;
            continue;
        }
        if skip_first {
            skip_first = false;
            continue;
        }
        if name == "git" && !after_dashdash && is_git_revision_like(arg) {
            continue;
        }
        out.push(arg.clone());
    }
    out
}

/// A recursive listing or search that follows every symbolic link it meets (`grep -R`,
/// `rg -L`, `find -L`): a link inside the workspace may point anywhere.
fn follows_symlinks_recursively(name: &str, args: &[String]) -> bool {
    let short = |letter: char| {
        args.iter()
            .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains(letter))
    };
    let long = |option: &str| args.iter().any(|a| a == option);
    match name {
        "grep" => short('R') || long("--dereference-recursive"),
        "rg" => short('L') || long("--follow"),
        "find" => args.iter().any(|a| a == "-L" || a == "-follow"),
        "ls" => short('R') && (short('L') || long("--dereference")),
        _ => false,
    }
}

/// `HEAD`, `main..topic`, `HEAD~2`: git arguments that are not paths (checked anyway
/// when they contain a slash).
fn is_git_revision_like(arg: &str) -> bool {
    arg != ".." && !arg.contains('/') && !arg.contains(['*', '?', '~']) || arg.starts_with("HEAD~")
}

/// An option or operand that makes a read-only command write a file or run a program.
pub fn writes_or_executes(name: &str, args: &[String]) -> Option<String> {
    let has = |pred: &dyn Fn(&str) -> bool| args.iter().any(|a| pred(a));
    let operands: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let why = |what: &str| Some(format!("`{name}` {what}"));
    match name {
        "uniq" if operands.len() > 1 => why("writes its second operand"),
        "sort"
            if has(&|a| {
                a.starts_with("--output")
                    || a.starts_with("--temporary-directory")
                    || a.starts_with("--compress-program")
                    || (a.starts_with('-') && !a.starts_with("--") && a.contains(['o', 'T']))
            }) =>
        {
            why("writes with -o/-T or runs --compress-program")
        }
        "base64" if has(&|a| a.starts_with("-o") || a.starts_with("--output")) => {
            why("writes with -o")
        }
        "find"
            if has(&|a| {
                matches!(
                    a,
                    "-exec"
                        | "-execdir"
                        | "-ok"
                        | "-okdir"
                        | "-delete"
                        | "-fls"
                        | "-fprint"
                        | "-fprint0"
                        | "-fprintf"
                )
            }) =>
        {
            why("runs or writes with -exec/-ok/-delete/-fprint")
        }
        "rg" if has(&|a| {
            matches!(a, "--search-zip" | "-z")
                || a.starts_with("--pre")
                || a.starts_with("--hostname-bin")
        }) =>
        {
            why("runs a program with --pre/--search-zip")
        }
        "git" => match args.split_first() {
            Some((sub, rest))
                if matches!(sub.as_str(), "status" | "log" | "diff" | "show")
                    && rest.iter().any(git_writes) =>
            {
                why("writes or runs a program with this option")
            }
            _ => None,
        },
        "sed" if !safe_sed(args) => why("is not a plain `sed -n 'Np'`"),
        _ => None,
    }
}

fn git_writes(a: &String) -> bool {
    a.starts_with("--output")
        || a.starts_with("--ext-diff")
        || a.starts_with("--textconv")
        || a.starts_with("--show-signature")
        || a.starts_with("--open-files-in-pager")
        || a == "--no-index"
        || a == "-O"
}

/// Why a git command line is not a read-only listing.
fn git_problem(args: &[String]) -> Option<&'static str> {
    let Some((sub, rest)) = args.split_first() else {
        return Some("without a sub-command");
    };
    match sub.as_str() {
        "status" | "log" | "diff" | "show" if !rest.iter().any(git_writes) => None,
        "branch"
            if rest.iter().all(|a| {
                matches!(
                    a.as_str(),
                    "--show-current"
                        | "-a"
                        | "--all"
                        | "-r"
                        | "--remotes"
                        | "-v"
                        | "-vv"
                        | "--list"
                )
            }) =>
        {
            None
        }
        "status" | "log" | "diff" | "show" => Some("writes or runs a program with this option"),
        _ => Some("is not status, log, diff, show or a branch listing"),
    }
}

fn safe_sed(args: &[String]) -> bool {
    let print = |s: &str| {
        let body = s.strip_suffix('p').unwrap_or("x");
        !body.is_empty()
            && body
                .split(',')
                .all(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
            && body.split(',').count() <= 2
    };
    match args {
        [n, script] | [n, script, _] => n == "-n" && print(script),
        _ => false,
    }
}

#[cfg(test)]
#[path = "shell_readonly_tests.rs"]
mod tests;
