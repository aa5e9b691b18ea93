//! Issue 42: a command sees an allow-listed world. Each break an attacker found is
//! tried from every mode — `--yolo` (workspace-write, network on), `--yolo` without
//! network, `--yolo --sandbox read-only`, and default mode, where a command the
//! classifier accepts runs unasked — and, to show the test can fail, with the sandbox
//! off, where each one works.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixListener;

use super::*;

/// The modes every attack is tried from.
const MODES: [&[&str]; 4] = [
    &["--yolo"],
    &["--yolo", "-c", "sandbox.network=false"],
    &["--yolo", "--sandbox", "read-only"],
    &[],
];
const OFF: &[&str] = &["--yolo", "--sandbox", "off"];

/// A Python one-liner (the system's interpreter) connecting to a UNIX socket; prints
/// CONNECTED on success. `name` starting with `@` is an abstract socket.
fn connect(name: &str) -> String {
    let addr = match name.strip_prefix('@') {
        Some(abstract_name) => format!("'\\0{abstract_name}'"),
        None => format!("'{name}'"),
    };
    format!(
        "/usr/bin/python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect({addr}); print('CON' + 'NECTED')\""
    )
}

fn accepted(listener: &UnixListener) -> bool {
    listener.set_nonblocking(true).expect("nonblocking");
    listener.accept().is_ok()
}

#[test]
fn host_sockets_exist_for_no_command_in_any_mode() {
    require_landlock!();
    let fx = Fixture::new();
    let root = fx.root();
    // Stand-ins for a tmux server in the temp dir, an ssh-agent in HOME, and an
    // abstract socket (a D-Bus or X11 one).
    let tmux_path = root.join("tmp/tmux-0/default");
    std::fs::create_dir_all(tmux_path.parent().expect("parent")).expect("mkdir");
    let agent_path = fx.s.home().join(".ssh/agent.sock");
    let abstract_name = format!("troupe-test-{}", std::process::id());
    let tmux = UnixListener::bind(&tmux_path).expect("bind tmux");
    let agent = UnixListener::bind(&agent_path).expect("bind agent");
    use std::os::linux::net::SocketAddrExt;
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes())
        .expect("abstract addr");
    let abstract_listener = UnixListener::bind_addr(&addr).expect("bind abstract");
    let commands = [
        connect(&tmux_path.to_string_lossy()),
        connect(&agent_path.to_string_lossy()),
        connect(&format!("@{abstract_name}")),
    ];
    let commands: Vec<&str> = commands.iter().map(String::as_str).collect();
    let env = [
        ("TMUX", format!("{},1,0", tmux_path.display())),
        ("SSH_AUTH_SOCK", agent_path.display().to_string()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    for mode in MODES {
        let (r, out) = fx.run(&commands, mode, &env);
        for (command, response) in commands.iter().zip(&r) {
            assert!(
                !response.contains("CONNECTED"),
                "{mode:?} `{command}`: {response}\n{}",
                stderr(&out)
            );
        }
        for (name, listener) in [
            ("tmux", &tmux),
            ("agent", &agent),
            ("abstract", &abstract_listener),
        ] {
            assert!(
                !accepted(listener),
                "{mode:?}: the {name} socket was reached"
            );
        }
    }
    let (r, _) = fx.run(&commands, OFF, &env);
    assert!(r.iter().all(|r| r.contains("CONNECTED")), "fixture: {r:#?}");
    // The variables that name them are not passed either.
    let (r, _) = fx.run(&["echo \"[$TMUX][$SSH_AUTH_SOCK]\""], &["--yolo"], &env);
    assert!(r[0].contains("[][]"), "{}", r[0]);
}

/// Fake credentials where the usual tools keep them: (path under HOME, marker).
fn plant_credentials(fx: &Fixture) -> Vec<String> {
    let files = [
        ".netrc",
        ".git-credentials",
        ".config/gh/hosts.yml",
        ".docker/config.json",
        ".kube/config",
        ".npmrc",
        ".pypirc",
        ".cargo/credentials.toml",
        ".cargo/credentials",
        ".gemini/oauth_creds.json",
        ".bash_history",
        ".zsh_history",
        ".python_history",
        ".ssh/id_ed25519",
        ".gnupg/private-keys-v1.d/key.key",
        ".aws/credentials",
        ".config/gcloud/application_default_credentials.json",
        ".azure/accessTokens.json",
        ".terraform.d/credentials.tfrc.json",
        ".pgpass",
        ".my.cnf",
        ".gem/credentials",
        ".config/hub",
    ];
    files
        .iter()
        .enumerate()
        .map(|(i, rel)| {
            let path = fx.s.home().join(rel);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(&path, format!("FAKE-SECRET-{i}\n")).expect("write");
            path.display().to_string()
        })
        .collect()
}

#[test]
fn no_credential_in_home_is_read_by_any_command_in_any_mode() {
    require_landlock!();
    let fx = Fixture::new();
    let paths = plant_credentials(&fx);
    assert_eq!(paths.len(), 23);
    // Each file by name (classed read-only: runs unasked in default mode), and a
    // sweep of HOME that does not name them.
    let mut commands: Vec<String> = paths.iter().map(|p| format!("cat {p}")).collect();
    commands.push("find ~ -type f -exec cat {} + 2>&1 | head -c 4000".into());
    commands.push("printf -v 'a[$(cat ~/.netrc >&2)]' x".into());
    let commands: Vec<&str> = commands.iter().map(String::as_str).collect();
    for mode in MODES {
        let (r, out) = fx.run(&commands, mode, &[]);
        for (command, response) in commands.iter().zip(&r) {
            assert!(
                !response.contains("FAKE-SECRET"),
                "{mode:?} `{command}` read it: {response}\n{}",
                stderr(&out)
            );
        }
    }
    let (r, _) = fx.run(&commands[..1], OFF, &[]);
    assert!(r[0].contains("FAKE-SECRET-0"), "fixture: {}", r[0]);
}

#[test]
fn a_process_outside_the_sandbox_is_not_signalled() {
    require_landlock!();
    let fx = Fixture::new();
    let mut outside = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .expect("sleep");
    let pid = outside.id();
    let commands = [format!("kill -9 {pid}; echo sent")];
    let commands: Vec<&str> = commands.iter().map(String::as_str).collect();
    for mode in [&["--yolo"][..], &["--yolo", "--sandbox", "read-only"]] {
        let (r, _) = fx.run(&commands, mode, &[]);
        assert!(r[0].contains("sent"), "{}", r[0]);
        assert!(
            outside.try_wait().expect("try_wait").is_none(),
            "{mode:?}: the outside process was killed"
        );
    }
    let (_, _) = fx.run(&commands[..1], OFF, &[]);
    let status = outside.wait().expect("wait");
    assert!(
        !status.success(),
        "fixture: the outside process is reachable unsandboxed"
    );
}

#[test]
fn a_command_never_reaches_the_users_terminal() {
    require_landlock!();
    let fx = Fixture::new();
    // The user's terminal: a pseudo-terminal whose other end the test holds.
    let pty = nix::pty::openpty(None, None).expect("openpty");
    let tty =
        std::fs::read_link(format!("/proc/self/fd/{}", pty.slave.as_raw_fd())).expect("tty path");
    let mut master = std::fs::File::from(pty.master);
    nix::fcntl::fcntl(
        &master,
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
    )
    .expect("nonblock");
    let tty = tty.display().to_string();
    let commands = [
        format!("printf 'Allow? [y/N] FAKE-PROMPT' > {tty}; echo wrote"),
        format!("timeout 2 head -c 5 {tty}; echo read"),
        "printf 'X' > /dev/tty; ls /dev/pts".to_string(),
    ];
    let commands: Vec<&str> = commands.iter().map(String::as_str).collect();
    for mode in [&["--yolo"][..], &["--yolo", "--sandbox", "read-only"]] {
        std::io::Write::write_all(&mut master, b"KEYS\n").expect("type");
        let (r, _) = fx.run(&commands, mode, &[]);
        let mut screen = Vec::new();
        let _ = master.read_to_end(&mut screen);
        let screen = String::from_utf8_lossy(&screen);
        assert!(
            !screen.contains("FAKE-PROMPT"),
            "{mode:?}: drawn on the terminal: {screen}"
        );
        assert!(
            !r[1].contains("KEYS"),
            "{mode:?}: read a keystroke: {}",
            r[1]
        );
        assert!(
            !r[2].lines().any(|l| l.trim().parse::<u32>().is_ok()),
            "{mode:?}: host terminals listed: {}",
            r[2]
        );
    }
    let (_, _) = fx.run(&commands[..1], OFF, &[]);
    let mut screen = Vec::new();
    let _ = master.read_to_end(&mut screen);
    assert!(
        String::from_utf8_lossy(&screen).contains("FAKE-PROMPT"),
        "fixture: the terminal is reachable unsandboxed"
    );
}

#[test]
fn a_command_cannot_create_or_replace_git_troupe_gemini_or_agents() {
    require_landlock!();
    let fx = Fixture::new();
    let commands = [
        "mkdir -p .troupe && printf '[hooks]\\n' > .troupe/config.toml; echo made",
        "mkdir -p .gemini && echo '{}' > .gemini/settings.json; echo made",
        "git init -q . ; echo made",
        "mkdir -p .agents/skills/x && printf -- '---\\nname: x\\ndescription: y\\n---\\n' > .agents/skills/x/SKILL.md; echo made",
    ];
    // One run each: a command's check moves aside what it made, not another's.
    for (sub, command) in [".troupe", ".gemini", ".git", ".agents"]
        .iter()
        .zip(commands)
    {
        let (r, out) = fx.run(&[command], &["--yolo"], &[]);
        let response = &r[0];
        assert!(
            !fx.s.ws().join(sub).exists(),
            "{sub} was left in place: {response}\n{}",
            stderr(&out)
        );
        assert!(
            fx.s.ws().join(format!("{sub}.made-by-command")).exists(),
            "{response}"
        );
        assert!(
            response.contains("commands may not create .git, .troupe, .gemini or .agents"),
            "{response}"
        );
    }
    // An existing .git: its config and hooks are read-only and it cannot be swapped
    // for another, but commits work.
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(fx.s.ws())
            .status()
            .expect("git");
        assert!(status.success(), "git {args:?}");
    };
    std::fs::remove_dir_all(fx.s.ws().join(".git.made-by-command")).expect("rm");
    git(&["init", "-q", "."]);
    let commands = [
        "git config core.fsmonitor ./evil.sh; echo tried",
        "echo ./evil.sh > .git/hooks/pre-commit; echo tried",
        "mv .git .git-old && mkdir .git; echo tried",
        "git add in.txt && git -c user.name=t -c user.email=t@t commit -qm one && echo COMMITTED",
    ];
    let (r, _) = fx.run(&commands, &["--yolo"], &[]);
    let config = std::fs::read_to_string(fx.s.ws().join(".git/config")).expect("config");
    assert!(!config.contains("fsmonitor"), "{config}\n{}", r[0]);
    assert!(
        !fx.s.ws().join(".git/hooks/pre-commit").exists(),
        "{}",
        r[1]
    );
    assert!(!fx.s.ws().join(".git-old").exists(), "{}", r[2]);
    assert!(r[3].contains("COMMITTED"), "{}", r[3]);
}

#[test]
fn a_background_command_cannot_plant_a_protected_directory_either() {
    require_landlock!();
    let fx = Fixture::new();
    let plant =
        json!({"command": "sleep 0.2; mkdir .troupe && echo planted", "is_background": true});
    // The next call waits (a barrier on the file system, not a time) until Troupe has
    // moved it aside, and shows the workspace.
    let wait = "timeout 30 sh -c 'until [ -e .troupe.made-by-command ]; do sleep 0.1; done'; ls -a";
    let script = fx.s.script(&[
        turn(vec![call("run_shell_command", plant)]),
        turn(vec![call("run_shell_command", json!({"command": wait}))]),
        turn(vec![text("done")]),
    ]);
    let out =
        fx.s.command()
            .arg("--fake-responses")
            .arg(script)
            .args(["-p", "go", "--yolo"])
            .output()
            .expect("run troupe");
    assert!(out.status.success(), "{}", stderr(&out));
    let listing = function_responses(fx.s.requests().last().expect("requests"))[0].to_string();
    assert!(!fx.s.ws().join(".troupe").exists(), "{listing}");
    assert!(
        fx.s.ws().join(".troupe.made-by-command").exists(),
        "{listing}"
    );
    assert!(listing.contains(".troupe.made-by-command"), "{listing}");
}
