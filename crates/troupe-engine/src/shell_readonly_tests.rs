use super::*;

fn verdict(command: &str) -> Verdict {
    let inside = |p: &Path| p.starts_with("/ws") && !p.starts_with("/ws/out");
    // A stand-in for the tool's expansion: `/ws/src` holds only files inside; what
    // `/ws/links` holds leads outside.
    let glob_inside = |p: &Path| inside(p) && !p.starts_with("/ws/links");
    // A stand-in for the tool's walk: `/ws/conf` holds a `.env.local`.
    let tree_clean = |p: &Path| !Path::new("/ws/conf/.env.local").starts_with(p);
    let scope = PathScope {
        cwd: PathBuf::from("/ws"),
        home: PathBuf::from("/home/u"),
        inside: &inside,
        glob_inside: &glob_inside,
        tree_clean: &tree_clean,
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
        "cd - && cat x",
        "cd -P .. && cat x",
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
    // After `--` git reads pathspecs, not options (found by the shell_command fuzz
    // target: the classifier said read-only, this check said it writes).
    assert_eq!(structure_problem("git diff -- --output=F"), None);
    assert!(structure_problem("git diff --output=F -- a").is_some());
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

/// Issue 42: bash builtins that assign (and evaluate an array subscript in the name
/// they assign) are never read-only.
#[test]
fn builtins_that_assign_ask() {
    for line in [
        "printf -v 'a[$(cat ~/.netrc >&2)]' x",
        "printf -v 'b[`id`]' %s y",
        "printf -vc x",
        "printf -v GIT_CONFIG_VALUE_0 %s x; git status",
        "printf -v PATH %s .; ls",
        "printf -v LD_PRELOAD %s ./x.so; cat f",
        "printf $FMT x",
        "printf -- -v; printf -v BASH_ENV x",
        "read -r 'a[$(id)]' <<< x",
        "read -a 'a[$(id)]'",
        "mapfile -t 'a[$(id)]'",
        "readarray 'a[$(id)]'",
        "declare 'a[$(id)]=1'",
        "typeset 'a[$(id)]=1'",
        "local 'a[$(id)]=1'",
        "export 'a[$(id)]=1'",
        "export GIT_DIR=/tmp/x; git status",
        "declare -x GIT_CONFIG_COUNT=1; git status",
        "a[$(id)]=1",
        "test -v 'a[$(id)]'",
        "let 'a[$(id)]=1'",
    ] {
        assert!(matches!(verdict(line), Verdict::Ask(_)), "{line}");
    }
    for line in ["printf '%s\\n' a b", "printf -- '-v %s' x", "printf x"] {
        assert_eq!(verdict(line), Verdict::ReadOnly, "{line}");
    }
}

/// GNU tools accept any unambiguous prefix of a long option: only options spelled
/// out (and listed as read-only) run unasked.
#[test]
fn abbreviated_and_unknown_long_options_ask() {
    for line in [
        "grep --dereference-r x .",
        "grep --derefer x .",
        "grep -r --dereference x .",
        "sort --out=F in.txt",
        "sort --o F in.txt",
        "sort --compress-prog=./evil.sh in.txt",
        "sort --temp=/tmp in.txt",
        "sort --files0-from=list",
        "wc --files0-from=list",
        "wc --files0=list",
        "head --files0-from=list",
        "cat --show-a f",
        "ls --derefer -R",
        "ls -R --dereference",
        "uniq --count in out",
        "uniq - out",
        "uniq -- - out",
        "git log --outp=F",
        "git log --ext-d",
        "git diff --textc",
        "git log --show-sig",
        "git status --porc",
        "git log --format=%G? -1",
        "git log --pretty=format:%GS",
        "git log --pretty=evil",
        "git log -O order.txt",
        "git log -L 1,2:src/a.rs",
        "git show HEAD -- '*env'",
        "git log -p ':(glob)**'",
        "rg --follow x",
        "rg --fol x",
        "rg -L x",
        "rg --pre-glob '*' --pre sh x",
        "rg --search-z x",
        "find -files0-from list",
        "find . -files0-from list",
        "find . -newer f -exec id ;",
        "find . -fls out",
        "find . -name x -fprint0 out",
        "find . -unknown-predicate",
        "find -D exec . -name x",
        "cut --bytes=1 --output=x f",
        "tail --pid=1 --follow=name --unknown f",
        "base64 --output=x f",
    ] {
        assert!(matches!(verdict(line), Verdict::Ask(_)), "{line}");
    }
    for line in [
        "grep --recursive --line-number --ignore-case x src",
        "grep -rni --include='*.rs' x src",
        "grep -C3 -e x src/a.rs",
        "grep -5 x src/a.rs",
        "sort --numeric-sort --reverse in.txt",
        "sort -k2,2 -t, -n in.txt",
        "uniq -c in.txt",
        "wc --lines src/a.rs",
        "head -n 5 src/a.rs",
        "head -5 src/a.rs",
        "tail -n +3 src/a.rs",
        "ls -la --color=never src",
        "git log --oneline --graph --decorate -n 20",
        "git log --format=%h%x09%s -5",
        "git log --pretty=oneline",
        "git log -p -U5 -- src",
        "git diff --stat=80 HEAD~1",
        "git status -sb",
        "git status --porcelain=v2 --untracked-files=no",
        "git diff --text",
        "find . -type f -name '*.rs' -newer Cargo.toml -print",
        "find src -maxdepth 2 -newermt 2024-01-01",
        "rg -n --hidden x src",
        "rg --files src",
    ] {
        assert_eq!(verdict(line), Verdict::ReadOnly, "{line}");
    }
}

/// sed runs unasked only with a script that prints and edits the stream.
#[test]
fn sed_scripts_that_read_write_or_run_files_ask() {
    for line in [
        "sed -n 1p -er src/a.rs",
        "sed -n 1p -e r src/a.rs",
        "sed -n 1p -ew/tmp/x src/a.rs",
        "sed -n 1p --expression=w src/a.rs",
        "sed -n '1r /etc/passwd' src/a.rs",
        "sed -n '1R /etc/passwd' src/a.rs",
        "sed -n '1w out' src/a.rs",
        "sed -n '1W out' src/a.rs",
        "sed '1e id' src/a.rs",
        "sed 's/x/id/e' src/a.rs",
        "sed 's/x/y/gw out' src/a.rs",
        "sed -n '/x/{p;w out\n}' src/a.rs",
        "sed 's/[/]/x/w out' src/a.rs",
        "sed 's|a|b|;1e id' src/a.rs",
        "sed -f script.sed src/a.rs",
        "sed --file=script.sed src/a.rs",
        "sed -i 1d src/a.rs",
        "sed --in-place 1d src/a.rs",
        "sed --in-pl 1d src/a.rs",
        "sed --follow-symlinks -n 1p src/a.rs",
        "sed -s -n -e 1p -e '$r x' src/a.rs",
        "sed -n 1p /etc/passwd",
        "sed 'a text' src/a.rs",
        "sed 's/a/b/' .env.local",
    ] {
        assert!(matches!(verdict(line), Verdict::Ask(_)), "{line}");
    }
    for line in [
        "sed -n '1,20p' README.md",
        "sed -n -e 1p -e '$p' src/a.rs",
        "sed 's/foo/bar/g' src/a.rs",
        "sed -E 's|[/]+|/|g;/^#/d' src/a.rs",
        "sed -n '/^fn /{p;q}' src/a.rs",
        "sed '1~2d;$!N;y/abc/xyz/' src/a.rs",
        "sed --quiet --expression=10q src/a.rs",
        "sed -n 's/[[:space:]]*$//p' src/a.rs",
    ] {
        assert_eq!(verdict(line), Verdict::ReadOnly, "{line}");
    }
}

/// A command naming (or searching a tree that holds) a file that may hold secrets.
#[test]
fn commands_reaching_secret_files_ask() {
    for line in [
        "cat .env.local",
        "cat .envrc",
        "cat sub/.env.production",
        "cat .ENV.local",
        "head -n 5 .netrc",
        "grep -f .env.local x src",
        "grep -f.env.local x src",
        "wc -l ./id_rsa",
        "base64 deploy.pem",
        "grep -r x",
        "grep -r x .",
        "grep -rn x conf",
        "grep -d recurse x .",
        "grep --directories=rec x .",
        "rg x",
        "rg x conf",
        "rg -uuu x .",
        "git show HEAD:.env",
        "git show HEAD:conf/.env.local",
        "git show REV -- .env",
        "git log -p -- .env.local",
        "git log -p .envrc",
        "git diff HEAD~1 -- conf/.env.local",
        "git diff -- .envrc",
        "git show :.env",
        "bash -c 'cat .env.local'",
    ] {
        assert!(matches!(verdict(line), Verdict::Ask(_)), "{line}");
    }
    for line in [
        "grep -r x src",
        "rg x src",
        "cat env.rs",
        "cat src/environment.txt",
        "git show HEAD:src/main.rs",
    ] {
        assert_eq!(verdict(line), Verdict::ReadOnly, "{line}");
    }
}
