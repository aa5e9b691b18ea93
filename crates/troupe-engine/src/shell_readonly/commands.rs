//! The read-only command list of [`super`]: which commands may run without asking, the
//! options they may use ([`super::specs`]; any other, and any abbreviation of a long
//! option, asks), and what they read — the files named (inside the workspace, none
//! with a secret name) and the trees a recursive search walks (none holding a secret
//! file).

use std::path::PathBuf;

use super::options::{parse, Parsed};
use super::paths::{check_path_operand, resolve, tree_root};
use super::specs::{spec_of, SED};
use super::{classify_line, find, git, sed, PathScope, MAX_DEPTH};
use crate::secret_names::is_secret_file_name;

/// Commands whose arguments are never paths and that set nothing (`printf` apart:
/// without `-v` it only prints). None has an option that reads or writes a file or
/// follows a link, so an abbreviated long option cannot reach one.
const NO_PATHS: [&str; 12] = [
    "echo", "true", "false", "id", "pwd", "whoami", "uname", "seq", "expr", "numfmt", "which", "tr",
];

/// Commands that read the files they are given (and nothing else).
const READ_FILES: [&str; 19] = [
    "cat", "cut", "grep", "head", "tail", "ls", "nl", "paste", "rev", "stat", "wc", "tac", "uniq",
    "sort", "base64", "find", "rg", "git", "sed",
];

/// What a read-only command reads: files by name, and trees it walks.
#[derive(Default)]
struct Reads {
    paths: Vec<String>,
    trees: Vec<String>,
}

pub(super) fn check_command(
    name: &str,
    args: &[Option<String>],
    scope: &PathScope,
    cwd: &mut PathBuf,
    depth: usize,
) -> Result<(), String> {
    if name == "printf" {
        return check_printf(args);
    }
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
        if dir.starts_with('-') {
            return Err("`cd -` goes to $OLDPWD (or is an option)".into());
        }
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
    for arg in &known {
        secret_in(name, arg)?;
    }
    let reads = reads_of(name, &known)?;
    for path in &reads.paths {
        if path == "-" {
            continue;
        }
        secret_in(name, path)?;
        check_path_operand(path, cwd, scope)?;
    }
    for tree in &reads.trees {
        let root = tree_root(tree, cwd, &scope.home)
            .ok_or_else(|| format!("cannot tell where `{tree}` is"))?;
        if !(scope.tree_clean)(&root) {
            return Err(format!(
                "`{name}` searches {} recursively, which holds a file that may hold secrets (or too many files to tell)",
                root.display()
            ));
        }
    }
    Ok(())
}

/// `printf FORMAT ARGS` only prints; `printf -v NAME` assigns a variable, and bash
/// evaluates an array subscript in NAME (`-v 'a[$(id)]'` runs `id`) or sets one
/// that changes what runs next (`PATH`, `GIT_CONFIG_*`, `BASH_ENV`).
fn check_printf(args: &[Option<String>]) -> Result<(), String> {
    match args.first() {
        Some(None) => {
            Err("`printf`'s first argument depends on an expansion (it may be `-v`)".into())
        }
        Some(Some(first)) if first.starts_with('-') && first != "--" => {
            Err("`printf -v` assigns a variable (and bash evaluates its subscript)".into())
        }
        _ => Ok(()),
    }
}

/// Asks when `arg` names a file with a secret name: the whole word, the value of
/// `--opt=value`, either side of `REV:path`, each component of a path.
fn secret_in(name: &str, arg: &str) -> Result<(), String> {
    let hit = arg
        .split(['=', ':', ','])
        .flat_map(|piece| piece.split('/'))
        .find(|component| is_secret_file_name(component));
    match hit {
        Some(file) => Err(format!(
            "`{name}` names `{file}`, a file that may hold secrets"
        )),
        None => Ok(()),
    }
}

/// The files and trees a read-only command line reads, or why it is not read-only.
fn reads_of(name: &str, args: &[String]) -> Result<Reads, String> {
    match name {
        "git" => git_reads(args),
        "find" => Ok(Reads {
            paths: find::starting_points(args)?,
            trees: Vec::new(),
        }),
        "sed" => sed_reads(args),
        _ => {
            let spec = spec_of(name).ok_or_else(|| format!("`{name}` has no option list"))?;
            let parsed = parse(name, spec, args)?;
            match name {
                "grep" | "rg" => search_reads(name, parsed),
                "uniq" if parsed.operands.len() > 1 => {
                    Err("`uniq` writes its second operand".into())
                }
                "ls" if parsed.has(&["-R", "--recursive"])
                    && parsed.has(&["-L", "--dereference"]) =>
                {
                    Err("`ls -RL` follows symbolic links while recursing".into())
                }
                _ => Ok(Reads {
                    paths: parsed.operands,
                    trees: Vec::new(),
                }),
            }
        }
    }
}

/// grep and rg: the pattern (first operand, unless given with `-e`/`-f`), the files
/// searched, the pattern and ignore files, and — recursive (`grep -r`, any `rg`) —
/// the trees walked (the operands, or `.`).
fn search_reads(name: &str, parsed: Parsed) -> Result<Reads, String> {
    if parsed.has(&["-R", "--dereference-recursive"]) && name == "grep" {
        return Err("`grep -R` follows symbolic links while recursing".into());
    }
    let explicit = parsed.has(&["-e", "-f", "--regexp", "--file", "--files", "--type-list"]);
    let mut operands = parsed.operands.clone();
    if !explicit && !operands.is_empty() {
        operands.remove(0);
    }
    let recursive = name == "rg"
        || parsed.has(&["-r", "--recursive"])
        || parsed
            .values(&["-d", "--directories"])
            .any(|v| !v.is_empty() && "recurse".starts_with(v));
    let mut paths = operands.clone();
    paths.extend(
        parsed
            .values(&["-f", "--file", "--exclude-from", "--ignore-file"])
            .map(str::to_string),
    );
    let trees = match (recursive, operands.is_empty()) {
        (false, _) => Vec::new(),
        (true, true) => vec![".".to_string()],
        (true, false) => operands,
    };
    Ok(Reads { paths, trees })
}

/// sed: every script (`-e`, `--expression`, else the first operand) must only print
/// and edit the stream; the other operands are files.
fn sed_reads(args: &[String]) -> Result<Reads, String> {
    let parsed = parse("sed", &SED, args)?;
    let mut scripts: Vec<&str> = parsed.values(&["-e", "--expression"]).collect();
    let mut operands = parsed.operands.as_slice();
    if scripts.is_empty() {
        let (script, rest) = operands.split_first().ok_or("`sed` without a script")?;
        scripts.push(script);
        operands = rest;
    }
    if let Some(problem) = scripts.iter().find_map(|s| sed::script_problem(s)) {
        return Err(problem);
    }
    Ok(Reads {
        paths: operands.to_vec(),
        trees: Vec::new(),
    })
}

/// git: the pathspecs (after `--`, or words that are not revisions).
fn git_reads(args: &[String]) -> Result<Reads, String> {
    let operands = git::operands(args)?;
    let mut paths = Vec::new();
    let mut after_dashdash = false;
    for operand in operands {
        if operand == "--" {
            after_dashdash = true;
        } else if after_dashdash || !is_git_revision_like(&operand) {
            paths.push(operand);
        }
    }
    Ok(Reads {
        paths,
        trees: Vec::new(),
    })
}

/// `HEAD`, `main..topic`, `HEAD~2`: git arguments that are not paths (checked anyway
/// when they contain a slash).
fn is_git_revision_like(arg: &str) -> bool {
    arg != ".." && !arg.contains('/') && !arg.contains(['*', '?', '~']) || arg.starts_with("HEAD~")
}

/// Whether a long option `arg` (`--out=F`) is `full` or an abbreviation of it.
fn abbreviates(arg: &str, full: &[&str]) -> bool {
    let Some(key) = arg.strip_prefix("--") else {
        return false;
    };
    let key = key.split('=').next().unwrap_or("");
    !key.is_empty() && full.iter().any(|f| f.starts_with(key))
}

/// An option or operand that makes a read-only command write a file or run a program
/// (for allow-list entries: `sort` covers `sort -n`, never `sort --out=F`). Long
/// options are matched with their abbreviations.
pub fn writes_or_executes(name: &str, args: &[String]) -> Option<String> {
    let has = |pred: &dyn Fn(&str) -> bool| args.iter().any(|a| pred(a));
    let short = |letters: &[char]| {
        has(&|a| a.starts_with('-') && !a.starts_with("--") && a.contains(letters))
    };
    let why = |what: &str| Some(format!("`{name}` {what}"));
    match name {
        "uniq" => match spec_of("uniq").map(|spec| parse("uniq", spec, args)) {
            Some(Ok(parsed)) if parsed.operands.len() <= 1 => None,
            _ => why("may write its second operand"),
        },
        "sort"
            if short(&['o', 'T'])
                || has(&|a| {
                    abbreviates(a, &["output", "temporary-directory", "compress-program"])
                }) =>
        {
            why("writes with -o/-T or runs --compress-program")
        }
        "base64" if has(&|a| a.starts_with("-o") || abbreviates(a, &["output"])) => {
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
        "rg" if short(&['z'])
            || has(&|a| abbreviates(a, &["search-zip", "pre", "pre-glob", "hostname-bin"])) =>
        {
            why("runs a program with --pre/--search-zip")
        }
        // Options end at `--`: after it, `--output=F` is a pathspec, as git reads it.
        "git" => match args.split_first() {
            Some((sub, rest))
                if matches!(sub.as_str(), "status" | "log" | "diff" | "show")
                    && rest
                        .iter()
                        .take_while(|a| a.as_str() != "--")
                        .any(|a| git_writes(a)) =>
            {
                why("writes or runs a program with this option")
            }
            _ => None,
        },
        "sed" if sed_reads(args).is_err() => why("is not a plain stream edit"),
        _ => None,
    }
}

fn git_writes(a: &str) -> bool {
    !git::is_listed(a)
        && abbreviates(
            a,
            &[
                "output",
                "ext-diff",
                "textconv",
                "show-signature",
                "open-files-in-pager",
                "no-index",
            ],
        )
        || a.starts_with("-O")
        || ((a.starts_with("--format") || a.starts_with("--pretty")) && a.contains("%G"))
}
