//! The read-only command list of [`super`]: which commands may run without asking, which
//! of their options write or run a program, and which of their arguments are paths.

use std::path::PathBuf;

use super::paths::{check_path_operand, resolve};
use super::{classify_line, PathScope, MAX_DEPTH};

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

pub(super) fn check_command(
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
