//! The read-only sandbox against commands the classifier might accept or the user
//! might approve: each group runs as one batch under `--sandbox read-only --yolo` (so
//! nothing asks), or in default mode through the classifier's auto-approval, and must
//! leave no trace: nothing in the scratch dir changed, no workspace program ran, no
//! connection reached the test's listener, no secret in what the model got.

use std::process::{Command, Stdio};

use super::*;

/// One attack: the command, and whether bash may *interpret* workspace code for it
/// (`bash evil.sh`, `BASH_ENV`): it then runs, confined, so only its effects are
/// checked.
struct Attack {
    command: String,
    interprets: bool,
}

fn attack(command: impl Into<String>) -> Attack {
    Attack {
        command: command.into(),
        interprets: false,
    }
}

fn interpreted(command: impl Into<String>) -> Attack {
    Attack {
        command: command.into(),
        interprets: true,
    }
}

/// Runs `attacks` with `args` and checks that none left a trace; returns the responses.
fn no_trace(fx: &Fixture, attacks: &[Attack], args: &[&str]) -> Vec<String> {
    let before = fx.snapshot();
    let commands: Vec<&str> = attacks.iter().map(|a| a.command.as_str()).collect();
    let (responses, out) = fx.run(&commands, args, &[("GEMINI_API_KEY", "sekrit")]);
    let changed = changes(&before, &fx.snapshot());
    assert!(
        changed.is_empty(),
        "traces: {changed:?}\nresponses: {responses:#?}\nstderr: {}",
        stderr(&out)
    );
    assert!(
        !fx.connected(),
        "the listener saw a connection: {responses:#?}"
    );
    for (a, response) in attacks.iter().zip(&responses) {
        let command = &a.command;
        for leak in [
            "CONNECTED",
            "PRIVATE KEY",
            "CONFIG-MARKER",
            "sekrit",
            ENVIRON_MARK,
        ] {
            assert!(
                !response.contains(leak),
                "`{command}` leaked {leak}: {response}"
            );
        }
        if !a.interprets {
            assert!(
                !response.contains("EVIL"),
                "`{command}` ran evil.sh: {response}"
            );
        }
    }
    responses
}

fn read_only(fx: &Fixture, attacks: &[Attack]) -> Vec<String> {
    no_trace(fx, attacks, &["--sandbox", "read-only", "--yolo"])
}

#[test]
fn classifier_approved_commands_run_under_read_only_in_default_mode() {
    require_landlock!();
    let fx = Fixture::new();
    // `ls` passes the read-only classifier: in default mode it runs without asking,
    // and with `.` first in PATH (unsandboxed) it would run the workspace's `ls`.
    let path = format!(".:{}", std::env::var("PATH").unwrap_or_default());
    let before = fx.snapshot();
    let (responses, _) = fx.run(&["ls"], &[], &[("PATH", &path)]);
    assert!(changes(&before, &fx.snapshot()).is_empty(), "{responses:?}");
    assert!(!responses[0].contains(DENIED_BY_POLICY), "{}", responses[0]);
    assert!(!responses[0].contains("EVIL"), "{}", responses[0]);
    assert!(responses[0].contains(RO_NOTE), "{}", responses[0]);
    assert!(responses[0].contains("without asking"), "{}", responses[0]);
}

/// Issue 42: lines the classifier once let run unasked (bash evaluates the array
/// subscript of `printf -v`, abbreviated long options, `uniq -`) now ask, and — in
/// `-p` default mode, which cannot ask — are refused.
#[test]
fn commands_the_classifier_let_through_now_ask_in_default_mode() {
    require_landlock!();
    let fx = Fixture::new();
    let attacks = [
        attack("printf -v 'a[$(touch P1)]' x"),
        attack("printf -v PATH %s .; ls"),
        attack("echo x | uniq - F3"),
        attack("echo x | uniq -- - F4"),
        attack("sort --out=F5 in.txt"),
        attack("sort --compress-prog=./evil.sh -S 1 bigfile"),
    ];
    let responses = no_trace(&fx, &attacks, &[]);
    for (a, response) in attacks.iter().zip(&responses) {
        assert!(
            response.contains(DENIED_BY_POLICY),
            "`{}` ran without asking: {response}",
            a.command
        );
    }
}

/// Issue 42, held out: assignments through builtins, options that read names or
/// scripts from files, abbreviations of options that follow links, and commands that
/// print secret files. Each asks (refused in `-p` default mode); a plain read in the
/// same batch still runs, so the classifier's auto-approval was live.
#[test]
fn assignments_abbreviations_and_secret_reads_ask_in_default_mode() {
    require_landlock!();
    let fx = Fixture::new();
    let home = fx.s.home();
    std::fs::write(home.join(".netrc"), "machine x password NETRC-SECRET\n").expect("netrc");
    fx.s.write(".env.local", "API_KEY=ENV-LOCAL-SECRET\n");
    fx.s.write(".envrc", "export TOKEN=ENVRC-SECRET\n");
    fx.s.write("1p", "line\n");
    fx.s.write("names0", "in.txt\0");
    secret_repository(&fx);
    let key = home.join(".ssh/id_rsa");
    let commands = [
        "printf -v 'a[$(cat ~/.netrc >&2)]' x".to_string(),
        "printf -v GIT_CONFIG_VALUE_0 %s x; git status".to_string(),
        "find -files0-from names0".to_string(),
        format!("sed -n 1p -er{}", key.display()),
        format!("sed -n 1p --expression=r{}", key.display()),
        "grep --dereference-r PRIVATE sub".to_string(),
        "cat .env.local".to_string(),
        "cat .envrc".to_string(),
        "grep -r SECRET".to_string(),
        "git show HEAD:.env".to_string(),
        "git log -p -- .env.local".to_string(),
        "git diff HEAD~1 -- .envrc".to_string(),
    ];
    let mut batch: Vec<&str> = commands.iter().map(String::as_str).collect();
    batch.push("cat in.txt");
    let (responses, out) = fx.run(&batch, &[], &[]);
    let (plain, asked) = responses.split_last().expect("responses");
    assert!(
        !plain.contains(DENIED_BY_POLICY) && plain.contains("b\\na"),
        "the plain read did not run unasked: {plain}\n{}",
        stderr(&out)
    );
    for (command, response) in commands.iter().zip(asked) {
        assert!(
            response.contains(DENIED_BY_POLICY),
            "`{command}` ran without asking: {response}"
        );
        for secret in [
            "NETRC-SECRET",
            "ENV-LOCAL-SECRET",
            "ENVRC-SECRET",
            "PRIVATE KEY",
            "COMMITTED-SECRET",
        ] {
            assert!(
                !response.contains(secret),
                "`{command}` leaked {secret}: {response}"
            );
        }
    }
}

/// A workspace repository with `.env`, `.env.local` and `.envrc` in its history.
fn secret_repository(fx: &Fixture) {
    let git = |args: &[&str]| {
        test_git(fx, args, None);
    };
    git(&["init", "-q"]);
    fx.s.write(".env", "TOKEN=COMMITTED-SECRET\n");
    git(&["add", "-f", ".env", ".env.local", ".envrc", "in.txt"]);
    git(&["commit", "-qm", "one"]);
    fx.s.write(".envrc", "export TOKEN=ENVRC-SECRET-2\n");
    git(&["commit", "-qam", "two"]);
}

#[test]
fn read_only_stops_bash_builtin_tricks() {
    require_landlock!();
    let fx = Fixture::new();
    let mut attacks = vec![
        attack("printf -v 'a[$(id > P01)]' x"),
        attack("printf -v PATH %s .; ls"),
        attack("read -r 'a[$(touch P03)]' <<< x"),
        attack("mapfile -t 'a[$(touch P04)]' <<< x"),
        attack("declare 'a[$(touch P05)]=1'"),
        attack("test -v 'a[$(touch P06)]'"),
        attack("s='a[$(touch P07)]'; [[ -v $s ]]"),
        attack("let 'a[$(touch P08)]=1'"),
        attack("hash -p ./evil.sh ls; ls"),
        attack("trap './evil.sh' EXIT"),
        interpreted("BASH_ENV=./evil.sh bash -c true"),
        attack("CDPATH=. cd x && touch P12"),
        attack("./evil.sh"),
        interpreted("bash ./evil.sh"),
        interpreted(". ./evil.sh"),
        attack("exec ./evil.sh"),
    ];
    if build_evil_so(&fx) {
        // Loading a shared object is not an execve: its code runs, confined.
        attacks.push(interpreted("enable -f ./evil.so evil"));
    }
    let responses = read_only(&fx, &attacks);
    assert!(responses[0].contains(RO_NOTE), "{}", responses[0]);
}

#[test]
fn read_only_stops_writes_of_ordinary_tools() {
    require_landlock!();
    let fx = Fixture::new();
    let tmp_file = format!("echo x > \"$TMPDIR/troupe-test-{}\"", std::process::id());
    let attacks = [
        attack("echo x | uniq - F1"),
        attack("echo x | uniq -- - F2"),
        attack("sort --out=F3 in.txt"),
        attack("sort --compress-program=./evil.sh -S 1 bigfile"),
        attack("ln -s / L"),
        attack("mkfifo F6"),
        attack("cp /etc/passwd F7"),
        attack("echo x | tee F8"),
        attack("echo x | dd of=F9"),
        attack("touch ~/x"),
        attack(tmp_file),
        attack("rm -f in.txt"),
        attack("mv sub moved"),
        attack("chmod 777 in.txt"),
        attack("touch -d 2000-01-01 in.txt"),
        attack("chown 12345 in.txt"),
        attack("chattr +i in.txt || setfattr -n user.x -v 1 in.txt"),
        attack("sed -i s/a/z/ in.txt"),
        attack("truncate -s 0 bigfile"),
        attack("mkdir newdir"),
        attack("echo x > ../outside"),
    ];
    let responses = read_only(&fx, &attacks);
    for (a, response) in attacks.iter().zip(&responses) {
        assert!(response.contains(RO_NOTE), "`{}`: {response}", a.command);
    }
}

#[test]
fn read_only_stops_programs_a_repository_names() {
    require_landlock!();
    let fx = Fixture::new();
    evil_repository(&fx);
    let attacks = [
        attack("git --no-pager diff"),
        attack("git --no-pager show HEAD~1"),
        attack("git --no-pager log -p"),
        attack("git --no-pager log --format=%G? -1"),
        attack("GIT_PAGER=./evil.sh git log"),
        attack("git -c core.pager=./evil.sh -p log"),
        attack("git -c core.fsmonitor=./evil.sh status"),
        attack("git -c core.sshCommand=./evil.sh ls-remote ssh://example.invalid/r"),
        attack("git -c alias.x='!./evil.sh' x"),
        attack("git --no-pager diff --ext-diff"),
        attack("git add in.txt"),
        attack("echo x >> .git/config"),
    ];
    read_only(&fx, &attacks);
}

#[test]
fn read_only_reaches_no_listener() {
    require_landlock!();
    let fx = Fixture::new();
    let port = fx.port;
    let mut attacks = vec![
        attack(format!(
            "exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED"
        )),
        attack(format!(
            "bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' && echo CONNECTED"
        )),
        attack(format!(
            "git ls-remote http://127.0.0.1:{port}/r && echo CONNECTED"
        )),
    ];
    if std::path::Path::new("/usr/bin/python3").exists() {
        attacks.push(attack(format!(
            "/usr/bin/python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port})); print(\"CONNECTED\")'"
        )));
    }
    if std::path::Path::new("/usr/bin/curl").exists() {
        attacks.push(attack(format!(
            "/usr/bin/curl -sS -m 5 http://127.0.0.1:{port}/ && echo CONNECTED"
        )));
    }
    read_only(&fx, &attacks);
}

#[test]
fn read_only_reads_no_secret_and_kills_nothing_outside() {
    require_landlock!();
    let fx = Fixture::new();
    let home = fx.s.home();
    let attacks = [
        attack("cat ~/.ssh/id_rsa"),
        attack(format!("cat {}/config.toml", fx.troupe_home().display())),
        attack(format!(
            "grep -r --dereference-recursive -e PRIVATE -e CONFIG-MARKER {}",
            home.display()
        )),
        attack("find ~ -name id_rsa -exec cat {} +"),
        attack("cat /proc/$PPID/environ"),
        attack("tr '\\0' '\\n' < /proc/$PPID/environ"),
        attack("kill -9 $PPID"),
    ];
    // `fx.run` checks that Troupe lived to send the results to the model.
    let responses = read_only(&fx, &attacks);
    assert!(responses[6].contains(RO_NOTE), "{}", responses[6]);
}

/// A workspace repository whose configuration and attributes name `./evil.sh` for
/// every program git may run, with a commit carrying a (fake) signature.
fn evil_repository(fx: &Fixture) {
    let ws = fx.s.ws();
    let git = |args: &[&str], input: Option<&str>| test_git(fx, args, input);
    git(&["init", "-q"], None);
    git(&["add", "in.txt"], None);
    git(&["commit", "-qm", "one"], None);
    fx.s.write("in.txt", "c\nd\n");
    let tree = git(&["write-tree"], None);
    let parent = git(&["rev-parse", "HEAD"], None);
    let signed = format!(
        "tree {tree}\nparent {parent}\nauthor t <t@t> 0 +0000\ncommitter t <t@t> 0 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n\nsigned\n"
    );
    let commit = git(
        &["hash-object", "-t", "commit", "-w", "--stdin"],
        Some(&signed),
    );
    git(&["update-ref", "HEAD", &commit], None);
    fx.s.write("in.txt", "e\nf\n");
    fx.s.write(".git/info/attributes", "* diff=evil filter=evil\n");
    let config = std::fs::read_to_string(ws.join(".git/config")).expect("config");
    std::fs::write(
        ws.join(".git/config"),
        format!(
            "{config}[diff \"evil\"]\n\ttextconv = ./evil.sh\n\tcommand = ./evil.sh\n[filter \"evil\"]\n\tclean = ./evil.sh\n\tsmudge = ./evil.sh\n[gpg]\n\tprogram = ./evil.sh\n[core]\n\tpager = ./evil.sh\n\tfsmonitor = ./evil.sh\n[diff]\n\texternal = ./evil.sh\n"
        ),
    )
    .expect("config");
}

/// Builds `ws/evil.so`, whose constructor says it ran, tries to write a marker and to
/// connect to the listener; false when there is no C compiler.
fn build_evil_so(fx: &Fixture) -> bool {
    let c = format!(
        r#"#include <stdio.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>
__attribute__((constructor)) static void evil(void) {{
    puts("EVIL-SO-LOADED");
    FILE *f = fopen("{root}/so-marker", "w");
    if (f) fclose(f);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {{0}};
    a.sin_family = AF_INET;
    a.sin_port = htons({port});
    a.sin_addr.s_addr = htonl(0x7f000001);
    if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) == 0) puts("EVIL-CONNECTED");
}}
"#,
        root = fx.root().display(),
        port = fx.port
    );
    let src = fx.root().join("tmp/evil.c");
    std::fs::write(&src, c).expect("evil.c");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(fx.s.ws().join("evil.so"))
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    let _ = std::fs::remove_file(&src);
    if !built {
        eprintln!("no C compiler: enable -f is not tried");
    }
    built
}

/// Runs git in the fixture's workspace (no system config, the fixture's HOME, a fixed
/// identity), feeding it `input`; its trimmed output. Panics when git fails.
fn test_git(fx: &Fixture, args: &[&str], input: Option<&str>) -> String {
    let mut child = Command::new("git")
        .args(args)
        .current_dir(fx.s.ws())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", fx.s.home())
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("git");
    if let Some(input) = input {
        use std::io::Write;
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write");
    }
    let out = child.wait_with_output().expect("git");
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
