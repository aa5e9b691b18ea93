//! Which shell command lines are read-only, decided on the tree-sitter-bash syntax tree
//! and conservatively: anything the classifier does not positively know to be a plain
//! read-only command asks.
//!
//! A line is read-only only when (1) its tree holds nothing but lists, pipelines and
//! simple commands made of literal words, quoted strings and plain `$VAR` expansions —
//! so any command or process substitution (quoted or not, backticks included), any
//! `${…}` expansion (`${x@P}` runs prompt expansion), any arithmetic, any assignment or
//! environment prefix, any redirection, subshell, loop, function or background job
//! makes it ask; (2) every command is on the read-only list and uses only options
//! listed for it, spelled out (GNU tools take any unambiguous abbreviation of a long
//! option: `--dereference-r`, `--out=F`), none that writes or executes (`uniq IN OUT`,
//! `sort -o`, `find -exec`, `git --output`, `rg --pre`, a sed `w`, `r` or `e`, …);
//! `printf -v` (which assigns, and evaluates an array subscript) asks; (3) every path
//! argument resolves inside the workspace roots (`cat ../x`, `cat /etc/passwd`,
//! `cat ~/.ssh/id_rsa` ask); and (4) no argument names a file that may hold secrets
//! (`.env`, `.env.*`, `.envrc`, … — [`crate::secret_names::is_secret_file_name`];
//! `git show HEAD:.env` asks) and no recursive search walks a tree holding one.

mod commands;
mod find;
mod git;
mod options;
mod paths;
mod sed;
mod specs;

use std::path::{Path, PathBuf};

use tree_sitter::Node;

use super::shell_syntax::strip_shell_wrapper;
use commands::check_command;
pub use commands::writes_or_executes;

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
    /// Whether a recursive search from this absolute path (`grep -r`, `rg`; symbolic
    /// links met on the way not followed) reaches no file with a secret name
    /// ([`crate::secret_names::is_secret_file_name`]); the caller looks, and a tree
    /// too large to look through is not clean.
    pub tree_clean: &'a dyn Fn(&Path) -> bool,
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
    let tree = crate::shell_syntax::parse_tree(command)
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

#[cfg(test)]
#[path = "shell_readonly_tests.rs"]
mod tests;
