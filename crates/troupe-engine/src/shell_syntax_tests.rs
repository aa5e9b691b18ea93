use super::*;

fn roots(cmd: &str) -> Vec<String> {
    command_roots(cmd)
}

#[test]
fn roots_of_real_command_lines() {
    let cases: &[(&str, &[&str])] = &[
        ("ls -la", &["ls"]),
        ("git status", &["git"]),
        ("git status && git diff --stat", &["git"]),
        ("cargo build --release; cargo test", &["cargo"]),
        (
            "cat Cargo.toml | grep -n version | head -5",
            &["cat", "grep", "head"],
        ),
        ("npm install && npm test || echo failed", &["npm", "echo"]),
        ("cd src && ls", &["cd", "ls"]),
        ("echo 'a | b && c' > out.txt", &["echo"]),
        ("grep -r \"fn main\" src/ 2>/dev/null", &["grep"]),
        ("python3 -m pytest -q tests/ > log.txt 2>&1", &["python3"]),
        ("find . -name '*.rs' | xargs wc -l", &["find", "xargs"]),
        ("FOO=1 make test", &["make"]),
        (
            "export PATH=$PATH:/opt/bin && which rustc",
            &["export", "which"],
        ),
        ("(cd web && npm run build)", &["cd", "npm"]),
        ("for f in *.txt; do wc -l \"$f\"; done", &["wc"]),
        ("if [ -f Makefile ]; then make; fi", &["[", "make"]),
        (
            "sort data.csv | uniq -c | sort -rn > counts.txt",
            &["sort", "uniq"],
        ),
        ("cat <<EOF > notes.md\nhello\nEOF", &["cat"]),
        ("tr a-z A-Z <<< 'hi'", &["tr"]),
        ("docker compose up -d && docker ps", &["docker"]),
        ("bash -c 'git pull && cargo check'", &["bash"]),
        ("\"git\" log --oneline -n 3", &["git"]),
        ("rm -rf target; mkdir -p target/tmp", &["rm", "mkdir"]),
        ("curl -s https://example.com | jq .name", &["curl", "jq"]),
        ("echo $(whoami)", &["echo", "whoami"]),
    ];
    for (line, expected) in cases {
        let expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
        assert_eq!(roots(line), expected, "roots of {line:?}");
    }
}

#[test]
fn redirection_and_errors_are_seen() {
    assert!(parse("echo hi > f").unwrap().has_redirection);
    assert!(parse("sort < in.txt").unwrap().has_redirection);
    assert!(!parse("echo 'a > b'").unwrap().has_redirection);
    assert!(parse("echo 'unterminated").unwrap().has_error);
    assert!(roots("echo 'unterminated").is_empty());
    assert!(parse("   ").is_none());
}

#[test]
fn arguments_are_unquoted() {
    let line = parse("bash -c \"git status && echo \\\"done\\\"\"").unwrap();
    assert_eq!(line.commands[0].name, "bash");
    assert_eq!(
        line.commands[0].args,
        vec!["-c", "git status && echo \"done\""]
    );
}

#[test]
fn approval_keys_separate_subcommands() {
    assert_eq!(approval_keys("git status"), vec!["git status"]);
    assert_eq!(approval_keys("git status -s"), vec!["git status"]);
    assert_eq!(approval_keys("git push origin main"), vec!["git push"]);
    assert_eq!(approval_keys("ls -la src"), vec!["ls"]);
    assert_eq!(
        approval_keys("npm test && npm run lint"),
        vec!["npm test", "npm run"]
    );
    assert_eq!(
        approval_keys("bash -c 'cargo fmt && git diff'"),
        vec!["cargo fmt", "git diff"]
    );
    assert_eq!(approval_keys("pytest tests/test_a.py -q"), vec!["pytest"]);
    assert_eq!(approval_keys("echo 'broken"), vec!["echo 'broken"]);
}

#[test]
fn substitution_detection_follows_bash_quoting() {
    for blocked in [
        "echo $(whoami)",
        "echo `id`",
        "echo \"$(id)\"",
        "echo \"`id`\"",
        "diff <(ls a) <(ls b)",
        "tee >(wc -l)",
        "bash -c 'echo $(id)'",
    ] {
        assert!(
            has_command_substitution(&strip_shell_wrapper(blocked)),
            "{blocked}"
        );
    }
    for allowed in [
        "echo '$(whoami)'",
        "echo '`id`'",
        "echo \\$(id)",
        "echo \"\\$(id)\"",
        "echo \"<(x)\"",
        "echo $HOME ${USER}",
        "cat < input.txt > out.txt",
        "echo $$",
    ] {
        assert!(!has_command_substitution(allowed), "{allowed}");
    }
}

#[test]
fn shell_wrappers_are_stripped() {
    assert_eq!(strip_shell_wrapper("bash -c 'ls -la'"), "ls -la");
    assert_eq!(strip_shell_wrapper("/bin/sh -c \"echo hi\""), "echo hi");
    assert_eq!(strip_shell_wrapper("  ls  "), "ls");
    assert_eq!(strip_shell_wrapper("bashful -c x"), "bashful -c x");
}

#[test]
fn characters_above_latin1_after_a_brace_do_not_crash_the_parser() {
    // tree-sitter-bash's scanner read outside C's ctype table here (a SIGSEGV).
    for c in ['\u{20AC}', '\u{FFFD}', '\u{10FFFF}', '\u{1F600}'] {
        for line in [
            format!("{{{c}"),
            format!("echo {{{c}.."),
            format!("cat a {{ {c}"),
            format!("x=$( {{{c} )"),
        ] {
            let _ = parse(&line);
            let _ = crate::shell_readonly::structure_problem(&line);
        }
    }
    // Non-ASCII words keep their text.
    let line = parse("cat résumé-€.txt").expect("parses");
    assert_eq!(line.commands[0].args, vec!["résumé-€.txt".to_string()]);
}
