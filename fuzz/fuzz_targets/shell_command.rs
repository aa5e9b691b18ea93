//! The shell-command parser and the read-only classifier `run_shell_command` uses
//! (`shell_readonly::classify`; the parser helpers of `shell_syntax` it and the approval
//! keys rely on). Beyond not panicking, a command line classified read-only:
//! - has no command or process substitution, `${…}` expansion (`${x@P}`), backtick or
//!   redirection outside quotes where bash would act on it (an independent scanner);
//! - parses (as the script the tool runs: a `bash -c` wrapper stripped) into plain
//!   commands, with no syntax error, environment prefix or function;
//! - has no path argument that resolves outside the workspace.
#![no_main]

use std::path::{Path, PathBuf};

use libfuzzer_sys::fuzz_target;
use troupe::engine::paths::normalize_lexically;
use troupe::engine::shell_readonly::{classify, structure_problem, PathScope, Verdict};
use troupe::engine::shell_syntax as sh;

/// The first construct bash would expand or redirect, outside the quotes that make it
/// literal: `$(`, `${`, a backtick (also inside double quotes), `<` or `>`.
fn active_construct(command: &str) -> Option<&'static str> {
    #[derive(PartialEq)]
    enum Quote {
        None,
        Single,
        Double,
    }
    let chars: Vec<char> = command.chars().collect();
    let mut quote = Quote::None;
    let mut word_start = true;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match quote {
            Quote::Single => {
                if c == '\'' {
                    quote = Quote::None;
                }
            }
            Quote::Double => match c {
                '\\' => i += 1,
                '"' => quote = Quote::None,
                '`' => return Some("backtick"),
                '$' if next == Some('(') => return Some("$("),
                '$' if next == Some('{') => return Some("${"),
                _ => {}
            },
            Quote::None => match c {
                '\\' => i += 1,
                '\'' => quote = Quote::Single,
                '"' => quote = Quote::Double,
                '#' if word_start => {
                    // A comment, to the end of the line.
                    while i < chars.len() && chars[i] != '\n' {
                        i += 1;
                    }
                }
                '`' => return Some("backtick"),
                '$' if next == Some('(') => return Some("$("),
                '$' if next == Some('{') => return Some("${"),
                '>' => return Some(">"),
                '<' => return Some("<"),
                _ => {}
            },
        }
        word_start =
            quote == Quote::None && (c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')'));
        i += 1;
    }
    None
}

fuzz_target!(|data: &[u8]| {
    let command = String::from_utf8_lossy(data);
    let stripped = sh::strip_shell_wrapper(&command);
    let _ = sh::command_roots(&stripped);
    let _ = sh::approval_keys(&command);
    let _ = sh::allow_list_keys(&command);
    let problem = structure_problem(&command);
    let substitution = sh::has_command_substitution(&stripped);

    let inside = |p: &Path| p.starts_with("/ws");
    let scope = PathScope {
        cwd: PathBuf::from("/ws/sub"),
        home: PathBuf::from("/home/u"),
        inside: &inside,
        // A glob counts as inside when its pattern does, as the lexical check above.
        glob_inside: &inside,
        tree_clean: &|_: &std::path::Path| true,
    };
    if classify(&command, &scope) != Verdict::ReadOnly {
        return;
    }
    // gemini-cli's detector (which `run_shell_command` applies first, refusing the
    // command) does not know comments; bash does: `cat x # `id`` runs no command. So a
    // substitution it reports must lie in a comment, which the scanner below skips.
    if substitution {
        assert!(
            command.contains('#'),
            "read-only with a command substitution"
        );
    }
    assert!(problem.is_none(), "read-only but not plain: {problem:?}");
    if let Some(found) = active_construct(&stripped) {
        panic!("read-only with `{found}` in {stripped:?}");
    }
    // The tool runs the stripped script (as gemini-cli does): as bash parses it, it is
    // plain simple commands.
    let Some(line) = sh::parse(&stripped) else {
        panic!("read-only but the script does not parse");
    };
    assert!(
        !line.has_error,
        "read-only but the script has a syntax error"
    );
    assert!(!line.has_redirection && !line.defines_function);
    for cmd in &line.commands {
        assert!(!cmd.has_assignments, "read-only with an environment prefix");
        // The plain file readers take only paths: none may lead outside.
        if matches!(cmd.name.as_str(), "cat" | "head" | "tail" | "ls" | "wc") {
            for arg in cmd.args.iter().filter(|a| !a.starts_with('-')) {
                let lexical = normalize_lexically(&Path::new("/ws/sub").join(arg));
                // (`~` is literal inside quotes, which the parser's args have dropped.)
                let home = arg.starts_with('~') && !stripped.contains(['\'', '"', '\\']);
                assert!(
                    !home && lexical.starts_with("/ws"),
                    "read-only `{}` of {arg:?} outside the workspace",
                    cmd.name
                );
            }
        }
    }
});
