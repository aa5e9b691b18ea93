use super::*;

fn verdict(command: &str) -> Verdict {
    let inside = |p: &Path| p.starts_with("/ws") && !p.starts_with("/ws/out");
    // A stand-in for the tool's expansion: `/ws/src` holds only files inside; what
    // `/ws/links` holds leads outside.
    let glob_inside = |p: &Path| inside(p) && !p.starts_with("/ws/links");
    let scope = PathScope {
        cwd: PathBuf::from("/ws"),
        home: PathBuf::from("/home/u"),
        inside: &inside,
        glob_inside: &glob_inside,
    };
    classify(command, &scope)
}

#[test]
fn plain_read_only_lines_run() {
    for line in [
        "ls -la",
        "git status",
        "git status --short && git diff --stat",
        "git log --oneline -n 5",
        "git show HEAD~2",
        "git branch --show-current",
        "cat Cargo.toml | grep -n version | head -5",
        "grep -rn \"fn main\" src",
        "grep -r '/etc' src",
        "cd src && ls",
        "wc -l src/*.rs",
        "echo $HOME",
        "echo \"hello $USER\"",
        "find . -name '*.rs'",
        "sort data.csv | uniq -c",
        "sed -n '1,20p' README.md",
        "bash -c 'git status && ls'",
        "cat -- -",
    ] {
        assert_eq!(verdict(line), Verdict::ReadOnly, "{line}");
    }
}

#[test]
fn executing_expansions_assignments_and_redirections_ask() {
    for line in [
        "x='$(id > F)'; echo ${x@P}",
        "echo ${x@P}",
        "echo \"$(id)\"",
        "echo \"`id`\"",
        "echo `id`",
        "cat <(id)",
        "echo $((a[$(id)]))",
        "echo $((x))",
        "PATH=/tmp/evil; cat f",
        "HOME=/tmp; git status",
        "PAGER=evil git log",
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=x git status",
        "export GIT_CONFIG_PARAMETERS=x; git status",
        "git status > F",
        "cat f >> g",
        "cat <<EOF\nx\nEOF",
        "cat f &",
        "(cat f)",
        "for f in a; do cat $f; done",
        "f() { id; }; f",
        "cat {..,x}/y",
        "cat $FILE",
        "echo 'unterminated",
        "rm -rf target",
        "/bin/cat f",
    ] {
        assert!(matches!(verdict(line), Verdict::Ask(_)), "{line}");
    }
}

#[test]
fn writing_and_executing_options_ask() {
    for line in [
        "uniq in.txt out.txt",
        "sort -o out in",
        "sort -ro out in",
        "sort --output=out in",
        "sort --compress-program=sh in",
        "find . -exec id \\;",
        "find . -execdir id \\;",
        "find . -ok id \\;",
        "find . -delete",
        "find . -fprint out",
        "find . -fprintf out %p",
        "git diff --output=F",
        "git log --ext-diff",
        "git diff --textconv",
        "git log --show-signature",
        "git -c core.pager=sh status",
        "git -C /tmp status",
        "git push",
        "git diff --no-index .. x",
        "rg --pre sh x",
        "rg --pre=sh x",
        "rg -z x",
        "sed 's/a/b/w out' f",
        "sed -i 1d f",
        "base64 -o out in",
    ] {
        assert!(matches!(verdict(line), Verdict::Ask(_)), "{line}");
    }
}

#[test]
fn paths_outside_the_workspace_ask() {
    for line in [
        "cat ../x",
        "cat /etc/passwd",
        "cat ~/.ssh/id_rsa",
        "cat /proc/1/environ",
        "grep -r x /",
        "grep -r x ..",
        "grep -f /etc/shadow x",
        "base64 ../secret",
        "cd .. && cat x",
        "cd /tmp",
        "cd",
        "ls ../*",
        "cat \"..\"/x",
        "cat .\\./x",
        "cat ~other/x",
        "head --files0-from=/etc/list",
        "find / -name x",
        "git log -- ..",
        "stat /etc",
        "bash -c 'cat /etc/passwd'",
        "grep -R x .",
        "grep -rR x src",
        "grep --dereference-recursive x .",
        "rg -L x",
        "rg --follow x",
        "find -L . -name x",
        "find . -follow",
        "ls -RL",
    ] {
        assert!(matches!(verdict(line), Verdict::Ask(_)), "{line}");
    }
}

#[test]
fn allow_list_structure() {
    assert_eq!(structure_problem("git status"), None);
    assert_eq!(structure_problem("npm test && git push"), None);
    for line in [
        "git status > F",
        "PATH=x git status",
        "git status; PATH=x",
        "git status $(id)",
        "git status \"$(id)\"",
        "git diff --output=/tmp/x",
        "uniq a b",
    ] {
        assert!(structure_problem(line).is_some(), "{line}");
    }
}

/// The cases of the old root-command check (`is_known_safe`, removed), on the
/// classifier the shell tool uses.
#[test]
fn known_safe_commands_on_the_tree_classifier() {
    for safe in [
        "ls -la",
        "cat a.txt | grep foo | wc -l",
        "git status",
        "git log --oneline -5",
        "git branch --show-current",
        "find . -name '*.rs'",
        "sed -n '1,20p' src/main.rs",
        "bash -c 'ls && pwd'",
        "echo hello; pwd",
    ] {
        assert_eq!(verdict(safe), Verdict::ReadOnly, "{safe}");
    }
    for unsafe_cmd in [
        "rm -rf /",
        "ls > listing.txt",
        "find . -delete",
        "find . -exec rm {} ;",
        "git push",
        "git branch -D main",
        "sed -i s/a/b/ f",
        "base64 -o out in",
        "echo $(rm -rf x)",
        "FOO=1 ls",
        "./ls",
        "bash -c 'ls > x'",
        "ls && make",
        "f() { rm x; }; ls",
        "echo 'unterminated",
    ] {
        assert!(
            matches!(verdict(unsafe_cmd), Verdict::Ask(_)),
            "{unsafe_cmd}"
        );
    }
}

#[test]
fn glob_brace_and_tilde_arguments_that_may_leave_the_workspace_ask() {
    for line in [
        "cat ../*",
        "cat */../../x",
        "cat src/*/../../../x",
        "cat {..,.}/x",
        "cat ~/.s*/id*",
        "cat ~/.ssh/id_rsa",
        "cat ~root/x",
        "cat .*/x",
        "cat [.]*/x",
        "ls /ws/../*",
        "cat links/*",
        "wc -l links/*.rs",
        "cat ./links/a*",
        "grep -n x out/*",
    ] {
        assert!(matches!(verdict(line), Verdict::Ask(_)), "{line}");
    }
    for line in [
        "wc -l src/*.rs",
        "cat src/a?.txt",
        "ls src/*/mod.rs",
        "cat *.md",
    ] {
        assert_eq!(verdict(line), Verdict::ReadOnly, "{line}");
    }
}
