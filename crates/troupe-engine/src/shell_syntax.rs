//! What a shell command line is made of, read with a real bash parser (tree-sitter-bash,
//! the grammar gemini-cli uses): its simple commands and their arguments, whether it
//! redirects, and from that the "root commands" an approval remembers, the command
//! substitution check, and the known-safe read-only commands that run without asking.

use std::sync::OnceLock;

use regex::Regex;
use tree_sitter::{Node, Parser};

/// Longest command line handed to the parser; longer ones are treated as unparsable
/// (and so always ask).
const MAX_PARSE_LEN: usize = 100_000;

/// How deep `bash -c '…'` wrappers are followed.
const MAX_WRAPPER_DEPTH: usize = 4;

/// One simple command of a command line (`git status -s` in `cd a && git status -s`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The command name with surrounding quotes removed.
    pub name: String,
    /// The arguments after the name, quotes removed (`"a b"` → `a b`).
    pub args: Vec<String>,
    /// Whether the command is prefixed by variable assignments (`FOO=1 cmd`).
    pub has_assignments: bool,
}

/// A parsed command line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CommandLine {
    /// Every simple command, in source order, including those nested in
    /// substitutions, subshells, loops and functions.
    pub commands: Vec<SimpleCommand>,
    /// Any `>`, `>>`, `<`, here-doc or here-string.
    pub has_redirection: bool,
    /// The parser had to recover from a syntax error.
    pub has_error: bool,
    /// Defines a shell function (its body runs later, under any name).
    pub defines_function: bool,
}

/// Parses `command` with tree-sitter-bash into its syntax tree, whose byte ranges index
/// `command`. The parser is given a copy in which every byte of a non-ASCII character is
/// `x` (same length, so the ranges are unchanged): tree-sitter-bash 0.25's scanner calls
/// C's `isdigit` on the raw code point after a `{`, which reads outside the table and
/// crashed the process on characters above U+00FF (found by the shell-parser property
/// test). Bash's syntax is all ASCII and it takes such bytes as word characters, so the
/// tree is the one bash would see.
pub fn parse_tree(command: &str) -> Option<tree_sitter::Tree> {
    let masked: Vec<u8> = command
        .bytes()
        .map(|b| if b.is_ascii() { b } else { b'x' })
        .collect();
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .ok()?;
    parser.parse(&masked, None)
}

/// Parses `command` with tree-sitter-bash; `None` when the parser cannot be used
/// (empty or over-long input).
pub fn parse(command: &str) -> Option<CommandLine> {
    if command.trim().is_empty() || command.len() > MAX_PARSE_LEN {
        return None;
    }
    let tree = parse_tree(command)?;
    let root = tree.root_node();
    let mut line = CommandLine {
        has_error: root.has_error(),
        ..CommandLine::default()
    };
    collect(root, command.as_bytes(), &mut line);
    if line.commands.is_empty() {
        line.has_error = true;
    }
    Some(line)
}

fn collect(node: Node<'_>, src: &[u8], line: &mut CommandLine) {
    match node.kind() {
        "command" => {
            if let Some(cmd) = simple_command(node, src) {
                line.commands.push(cmd);
            }
        }
        "declaration_command" | "unset_command" | "test_command" => {
            if let Some(first) = node.child(0) {
                line.commands.push(SimpleCommand {
                    name: unquote(text(first, src)),
                    args: Vec::new(),
                    has_assignments: false,
                });
            }
        }
        "file_redirect" | "heredoc_redirect" | "herestring_redirect" => {
            line.has_redirection = true;
        }
        "function_definition" => line.defines_function = true,
        _ => {}
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        collect(child, src, line);
    }
}

fn simple_command(node: Node<'_>, src: &[u8]) -> Option<SimpleCommand> {
    let name_node = node.child_by_field_name("name")?;
    let mut args = Vec::new();
    let mut has_assignments = false;
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        if child.start_byte() < name_node.start_byte() {
            if child.kind() == "variable_assignment" {
                has_assignments = true;
            }
            continue;
        }
        if child.id() == name_node.id() {
            continue;
        }
        match child.kind() {
            "file_redirect" | "heredoc_redirect" | "herestring_redirect" => {}
            _ if child.is_named() => args.push(unquote(text(child, src))),
            _ => {}
        }
    }
    Some(SimpleCommand {
        name: unquote(text(name_node, src)),
        args,
        has_assignments,
    })
}

fn text<'a>(node: Node<'_>, src: &'a [u8]) -> &'a str {
    node.utf8_text(src).unwrap_or("")
}

/// Removes one pair of surrounding quotes and, inside double quotes, the escapes
/// bash would remove.
fn unquote(raw: &str) -> String {
    let raw = raw.trim();
    if raw.len() >= 2 && raw.starts_with('\'') && raw.ends_with('\'') {
        return raw[1..raw.len() - 1].to_string();
    }
    if raw.len() >= 2 && raw.starts_with('"') && raw.ends_with('"') {
        let inner = &raw[1..raw.len() - 1];
        let mut out = String::with_capacity(inner.len());
        let mut chars = inner.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\\' {
                if let Some(&next) = chars.peek() {
                    if matches!(next, '$' | '`' | '"' | '\\') {
                        out.push(next);
                        chars.next();
                        continue;
                    }
                }
            }
            out.push(c);
        }
        return out;
    }
    raw.to_string()
}

/// gemini-cli's `stripShellWrapper`: drops a leading `bash -c`, `sh -c`, `zsh -c`,
/// `cmd.exe /c` or `powershell -Command` and the quotes around the script.
pub fn strip_shell_wrapper(command: &str) -> String {
    static WRAPPER: OnceLock<Option<Regex>> = OnceLock::new();
    let wrapper = WRAPPER.get_or_init(|| {
        Regex::new(
            r"(?i)^\s*(?:(?:(?:\S+/)?(?:sh|bash|zsh))\s+-c|cmd\.exe\s+/c|powershell(?:\.exe)?\s+(?:-NoProfile\s+)?-Command|pwsh(?:\.exe)?\s+(?:-NoProfile\s+)?-Command)\s+",
        )
        .ok()
    });
    if let Some(found) = wrapper.as_ref().and_then(|re| re.find(command)) {
        let rest = command[found.end()..].trim();
        let quoted = rest.len() >= 2
            && ((rest.starts_with('"') && rest.ends_with('"'))
                || (rest.starts_with('\'') && rest.ends_with('\'')));
        return if quoted {
            rest[1..rest.len() - 1].to_string()
        } else {
            rest.to_string()
        };
    }
    command.trim().to_string()
}

/// gemini-cli's `detectBashSubstitution`: `$(…)` or a backtick anywhere outside single
/// quotes, or `<(…)` / `>(…)` outside any quotes, would run a command bash substitutes.
pub fn has_command_substitution(command: &str) -> bool {
    let chars: Vec<char> = command.chars().collect();
    let mut in_single = false;
    let mut in_double = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if in_single {
            if c == '\'' {
                in_single = false;
            }
            i += 1;
            continue;
        }
        if c == '\\' {
            if !in_double || matches!(next, Some('$' | '`' | '"' | '\\' | '\n')) {
                i += 2;
                continue;
            }
            i += 1;
            continue;
        }
        match c {
            '\'' if !in_double => in_single = true,
            '"' => in_double = !in_double,
            '$' if next == Some('(') => return true,
            '`' => return true,
            '<' | '>' if next == Some('(') && !in_double => return true,
            _ => {}
        }
        i += 1;
    }
    false
}

/// gemini-cli's `getCommandRoots`: the distinct command names of a command line, in
/// order (empty when it does not parse cleanly).
pub fn command_roots(command: &str) -> Vec<String> {
    let Some(line) = parse(command) else {
        return Vec::new();
    };
    if line.has_error {
        return Vec::new();
    }
    let mut roots: Vec<String> = Vec::new();
    for cmd in &line.commands {
        if !roots.contains(&cmd.name) {
            roots.push(cmd.name.clone());
        }
    }
    roots
}

/// What "allow for this session" remembers for a command line: one key per simple
/// command — its name plus its sub-command word when it has one (`git status`,
/// `npm test`, `ls`) — so allowing `git status` never allows `git push`. `bash -c`
/// scripts contribute the keys of their inner commands. A command line that does not
/// parse is its own, exact key.
pub fn approval_keys(command: &str) -> Vec<String> {
    let stripped = strip_shell_wrapper(command);
    let mut keys = Vec::new();
    if !keys_of(&stripped, 0, &mut keys) {
        return vec![stripped.split_whitespace().collect::<Vec<_>>().join(" ")];
    }
    keys
}

fn keys_of(command: &str, depth: usize, keys: &mut Vec<String>) -> bool {
    let Some(line) = parse(command) else {
        return false;
    };
    if line.has_error {
        return false;
    }
    for cmd in &line.commands {
        if let Some(script) = inner_script(cmd) {
            if depth < MAX_WRAPPER_DEPTH && keys_of(script, depth + 1, keys) {
                continue;
            }
        }
        let key = match cmd.args.first() {
            Some(word) if is_subcommand_word(word) => format!("{} {word}", cmd.name),
            _ => cmd.name.clone(),
        };
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    true
}

/// [`approval_keys`] for allow-list matching: a command line that is not plain (a
/// redirection, an assignment or environment prefix, a substitution or `${…}`
/// expansion, an option that writes or executes, …) gets one exact key, marked with a
/// leading `=`, so that no `tool(prefix)` rule covers it: `run_shell_command(git
/// status)` allows `git status` and nothing that rides on it.
pub fn allow_list_keys(command: &str) -> Vec<String> {
    match super::shell_readonly::structure_problem(command) {
        None => approval_keys(command),
        Some(_) => vec![format!(
            "={}",
            strip_shell_wrapper(command)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        )],
    }
}

/// A plain word such as `status`, `test`, `run`, `build.rs` (not an option, a path,
/// an assignment or an expansion).
fn is_subcommand_word(word: &str) -> bool {
    let mut chars = word.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric())
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '@' | '+'))
}

/// The script of `bash -c 'script'` (also `sh`, `zsh`, with a path).
fn inner_script(cmd: &SimpleCommand) -> Option<&str> {
    let base = cmd.name.rsplit('/').next().unwrap_or(&cmd.name);
    if !matches!(base, "bash" | "sh" | "zsh") {
        return None;
    }
    let at = cmd.args.iter().position(|a| a == "-c")?;
    cmd.args.get(at + 1).map(String::as_str)
}

#[cfg(test)]
#[path = "shell_syntax_tests.rs"]
mod tests;
