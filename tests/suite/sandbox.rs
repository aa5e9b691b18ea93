//! Issue 29: every command Troupe starts runs in the kernel sandbox. The real binary,
//! a scripted `run_shell_command` batch, HOME and TROUPE_HOME in the scratch dir and
//! TMPDIR too (so the sandbox's writable temp dir is `<scratch>/tmp`, not `/tmp`, and
//! `../outside` is really outside). Each command's traces are looked for in a snapshot
//! of the scratch dir and at a 127.0.0.1 listener the test opens.

mod attacks;
mod real_work;
mod repl;
mod world;

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::json;

use crate::common::*;

const DENIED_BY_POLICY: &str = "denied by policy";
const WW_NOTE: &str = "[sandbox] workspace-write denied this command";
const RO_NOTE: &str = "[sandbox] read-only denied this command";
/// A line of Troupe's own environment: whoever reads `/proc/$PPID/environ` sees it.
const ENVIRON_MARK: &str = "TROUPE_HOME=";

pub(crate) use crate::common::landlock::require_landlock;

/// The scratch dir with a workspace full of bait, a HOME holding secrets, and a
/// listener on 127.0.0.1.
pub struct Fixture {
    pub s: Scratch,
    pub listener: TcpListener,
    pub port: u16,
}

impl Fixture {
    pub fn new() -> Self {
        let s = Scratch::new();
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let root = s.root().to_path_buf();
        std::fs::create_dir_all(root.join("tmp")).expect("tmp");
        s.write("in.txt", "b\na\n");
        s.write("sub/keep.txt", "keep\n");
        s.write("x/keep.txt", "keep\n");
        let big: String = (0..20_000)
            .map(|i| format!("line {}\n", 20_000 - i))
            .collect();
        s.write("bigfile", &big);
        // The workspace's program: says it ran, leaves a marker and calls home.
        let evil = format!(
            "#!/bin/bash\necho EVIL-RAN\necho EVIL-RAN >&2\ntouch {root}/evil-ran-$$\nexec 3<>/dev/tcp/127.0.0.1/{port} && echo EVIL-CONNECTED\n",
            root = root.display()
        );
        for name in ["evil.sh", "ls"] {
            let path = s.write(name, &evil);
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        std::fs::create_dir_all(s.home().join(".ssh")).expect("ssh");
        std::fs::write(s.home().join(".ssh/id_rsa"), "PRIVATE KEY\n").expect("key");
        std::fs::write(s.home().join(".bashrc"), "# my bashrc\n").expect("bashrc");
        std::fs::create_dir_all(s.home().join(".troupe")).expect("troupe home");
        std::fs::write(
            s.home().join(".troupe/config.toml"),
            "# CONFIG-MARKER\n[model]\nmax_turns = 50\n",
        )
        .expect("config");
        Self { s, listener, port }
    }

    pub fn root(&self) -> PathBuf {
        self.s.root().to_path_buf()
    }

    pub fn troupe_home(&self) -> PathBuf {
        self.s.home().join(".troupe")
    }

    /// Runs `commands` as one batch of `run_shell_command` calls (`-p go` plus `args`,
    /// `env` added to Troupe's environment); the response the model got for each, and
    /// the process's output.
    pub fn run(
        &self,
        commands: &[&str],
        args: &[&str],
        env: &[(&str, &str)],
    ) -> (Vec<String>, Output) {
        let calls = commands
            .iter()
            .map(|c| call("run_shell_command", json!({"command": c})))
            .collect();
        let _ = std::fs::remove_file(self.s.requests_path());
        let script = self.s.script(&[turn(calls), turn(vec![text("done")])]);
        let mut cmd = self.s.command();
        cmd.arg("--fake-responses")
            .arg(script)
            .args(["-p", "go"])
            .args(args)
            .env("TMPDIR", self.root().join("tmp"));
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run troupe");
        let requests = self.s.requests();
        assert!(
            requests.len() >= 2,
            "the run did not complete: {}",
            stderr(&out)
        );
        let responses: Vec<String> = function_responses(&requests[1])
            .iter()
            .map(|r| r.to_string())
            .collect();
        assert_eq!(responses.len(), commands.len(), "{}", stderr(&out));
        (responses, out)
    }

    /// Everything under the scratch dir but Troupe's own files (its logs and sessions,
    /// the script and the request log): path -> kind, mode and content.
    pub fn snapshot(&self) -> BTreeMap<PathBuf, String> {
        let mut out = BTreeMap::new();
        let skip = [self.s.requests_path(), self.root().join("responses.jsonl")];
        let mut stack = vec![self.root()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).expect("read_dir") {
                let path = entry.expect("entry").path();
                let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
                if skip.contains(&path) || name.is_some_and(|n| n.starts_with("tmux-")) {
                    continue;
                }
                // Troupe's home: only the file commands could have aimed at.
                if path == self.troupe_home() {
                    let config = path.join("config.toml");
                    out.insert(config.clone(), describe(&config));
                    continue;
                }
                let meta = std::fs::symlink_metadata(&path).expect("meta");
                out.insert(path.clone(), describe(&path));
                if meta.is_dir() {
                    stack.push(path);
                }
            }
        }
        out
    }

    /// Whether anything connected to the listener since the last call.
    pub fn connected(&self) -> bool {
        match self.listener.accept() {
            Ok(_) => true,
            Err(e) if e.kind() == ErrorKind::WouldBlock => false,
            Err(e) => panic!("accept: {e}"),
        }
    }
}

fn describe(path: &Path) -> String {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return "missing".into();
    };
    let mode = meta.permissions().mode();
    if meta.file_type().is_symlink() {
        return format!("link -> {:?}", std::fs::read_link(path).ok());
    }
    if meta.is_dir() {
        return format!("dir {mode:o}");
    }
    if !meta.is_file() {
        return format!("special {mode:o}");
    }
    let content = std::fs::read(path).unwrap_or_default();
    let mtime = meta.modified().ok();
    format!(
        "file {mode:o} uid {} {mtime:?} {}",
        std::os::unix::fs::MetadataExt::uid(&meta),
        String::from_utf8_lossy(&content)
    )
}

/// What changed between two snapshots, one line per path.
pub fn changes(
    before: &BTreeMap<PathBuf, String>,
    after: &BTreeMap<PathBuf, String>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (path, was) in before {
        match after.get(path) {
            None => out.push(format!("removed {}", path.display())),
            Some(now) if now != was => out.push(format!("changed {}", path.display())),
            _ => {}
        }
    }
    for path in after.keys().filter(|p| !before.contains_key(*p)) {
        out.push(format!("created {}", path.display()));
    }
    out
}

#[test]
fn workspace_write_confines_yolo_commands_and_off_does_not() {
    require_landlock!();
    let fx = Fixture::new();
    let config = fx.troupe_home().join("config.toml");
    let cat_config = format!("cat {}", config.display());
    let commands = [
        "touch ../outside",
        "echo x > ~/.bashrc",
        "echo x > inside.txt && echo WROTE-INSIDE",
        "cat ~/.ssh/id_rsa",
        cat_config.as_str(),
        "cat /proc/$PPID/environ",
    ];
    let env = [("GEMINI_API_KEY", "sekrit")];
    let (r, out) = fx.run(&commands, &["--yolo"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        r[0].contains(WW_NOTE)
            && (r[0].contains("Permission denied") || r[0].contains("Read-only file system")),
        "{}",
        r[0]
    );
    assert!(r[0].contains("sandbox.writable_roots") && r[0].contains("--sandbox off"));
    assert!(
        !fx.root().join("outside").exists(),
        "../outside was created"
    );
    assert!(r[1].contains(WW_NOTE), "{}", r[1]);
    assert_eq!(
        std::fs::read_to_string(fx.s.home().join(".bashrc")).expect("bashrc"),
        "# my bashrc\n"
    );
    assert!(
        r[2].contains("WROTE-INSIDE") && !r[2].contains("[sandbox]"),
        "{}",
        r[2]
    );
    assert_eq!(fx.s.read("inside.txt"), "x\n");
    assert!(
        !r[3].contains("PRIVATE KEY") && r[3].contains(WW_NOTE),
        "{}",
        r[3]
    );
    assert!(
        !r[4].contains("CONFIG-MARKER") && r[4].contains(WW_NOTE),
        "{}",
        r[4]
    );
    assert!(
        !r[5].contains(ENVIRON_MARK) && r[5].contains(WW_NOTE),
        "{}",
        r[5]
    );
    for response in &r {
        assert!(!response.contains("sekrit"), "{response}");
    }
    // Text mode: the refusal reaches stderr too.
    assert!(stderr(&out).contains(WW_NOTE), "{}", stderr(&out));

    // The same commands without the sandbox: each behaves as it would anyway.
    let (r, out) = fx.run(&commands, &["--yolo", "--sandbox", "off"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(r.iter().all(|r| !r.contains("[sandbox]")), "{r:?}");
    assert!(fx.root().join("outside").exists(), "{}", r[0]);
    assert_eq!(
        std::fs::read_to_string(fx.s.home().join(".bashrc")).expect("bashrc"),
        "x\n"
    );
    assert!(r[3].contains("PRIVATE KEY"), "{}", r[3]);
    assert!(r[4].contains("CONFIG-MARKER"), "{}", r[4]);
    assert!(r[5].contains(ENVIRON_MARK), "{}", r[5]);
    // Troupe took its key out of its environment block: not even there.
    assert!(!r[5].contains("sekrit"), "{}", r[5]);
}

#[test]
fn without_network_a_connect_to_a_local_listener_fails() {
    require_landlock!();
    let fx = Fixture::new();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{} && echo CONNECTED", fx.port);
    let (r, out) = fx.run(&[&connect], &["--yolo", "-c", "sandbox.network=false"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!r[0].contains("CONNECTED"), "{}", r[0]);
    assert!(
        r[0].contains(WW_NOTE) && r[0].contains("sandbox.network = true"),
        "{}",
        r[0]
    );
    assert!(!fx.connected(), "the listener saw a connection");
    let (r, _) = fx.run(&[&connect], &["--yolo", "--sandbox", "off"], &[]);
    assert!(r[0].contains("CONNECTED"), "{}", r[0]);
    assert!(fx.connected(), "fixture: the listener is reachable");
}

#[test]
fn the_flag_sets_the_mode_and_a_bare_flag_means_workspace_write() {
    require_landlock!();
    let fx = Fixture::new();
    let commands = ["echo x > inside.txt", "touch ../outside"];
    let (r, _) = fx.run(&commands, &["--yolo", "-s"], &[]);
    assert!(!r[0].contains("[sandbox]"), "{}", r[0]);
    assert_eq!(fx.s.read("inside.txt"), "x\n");
    assert!(r[1].contains(WW_NOTE), "{}", r[1]);
    std::fs::remove_file(fx.s.ws().join("inside.txt")).expect("rm");
    let (r, _) = fx.run(&commands, &["--yolo", "--sandbox", "read-only"], &[]);
    assert!(
        r[0].contains(RO_NOTE) && r[0].contains("--sandbox workspace-write"),
        "{}",
        r[0]
    );
    assert!(!fx.s.ws().join("inside.txt").exists());
    // A setting does the same as the flag.
    let (r, _) = fx.run(
        &commands[..1],
        &["--yolo", "-c", "sandbox.mode=\"read-only\""],
        &[],
    );
    assert!(r[0].contains(RO_NOTE), "{}", r[0]);
    assert!(!fx.root().join("outside").exists());
}

#[test]
fn an_unknown_mode_is_a_clear_error() {
    let s = Scratch::new();
    let out = s.run(
        &[turn(vec![text("no")])],
        &["-p", "go", "--sandbox", "bogus"],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("--sandbox: `bogus` is not one of workspace-write, read-only, off"),
        "{}",
        stderr(&out)
    );
    let out = s.run(
        &[turn(vec![text("no")])],
        &["-p", "go", "-c", "sandbox.mode=\"rw\""],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("unknown sandbox mode \"rw\""),
        "{}",
        stderr(&out)
    );
}

#[test]
fn troupe_config_shows_the_sandbox_in_force() {
    let s = Scratch::new();
    let out = s.bare_command().arg("config").output().expect("config");
    let text = stdout(&out);
    assert!(
        text.contains("sandbox.mode = \"workspace-write\""),
        "{text}"
    );
    match troupe::platform::sandbox::landlock_abi() {
        Some(abi) => assert!(
            text.contains(&format!(
                "# sandbox: workspace-write, an allow-listed world (namespaces) with Landlock ABI {abi} inside"
            )),
            "{text}"
        ),
        None => assert!(text.contains("Landlock is unavailable"), "{text}"),
    }
    let out = s
        .bare_command()
        .args(["config", "-c", "sandbox.mode=\"off\""])
        .output()
        .expect("config");
    assert!(
        stdout(&out).contains("# sandbox: off: commands run unsandboxed"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn without_landlock_commands_run_unsandboxed_say_so_once_and_all_ask() {
    let fx = Fixture::new();
    let no_landlock = [("TROUPE_TEST_NO_LANDLOCK", "1")];
    let (r, out) = fx.run(&["ls", "cat in.txt"], &[], &no_landlock);
    for response in &r {
        assert!(response.contains(DENIED_BY_POLICY), "{response}");
    }
    let warning = "commands run unsandboxed";
    assert_eq!(stderr(&out).matches(warning).count(), 1, "{}", stderr(&out));
    // What the user approves runs as it is: nothing claims a sandbox.
    let (r, out) = fx.run(&["touch ../outside"], &["--yolo"], &no_landlock);
    assert!(!r[0].contains("[sandbox]"), "{}", r[0]);
    assert!(fx.root().join("outside").exists());
    assert_eq!(stderr(&out).matches(warning).count(), 1, "{}", stderr(&out));
    let out =
        fx.s.bare_command()
            .arg("config")
            .env("TROUPE_TEST_NO_LANDLOCK", "1")
            .output()
            .expect("config");
    assert!(
        stdout(&out).contains(
            "# sandbox: workspace-write requested, but Landlock is unavailable: commands run unsandboxed"
        ),
        "{}",
        stdout(&out)
    );
}

#[test]
fn with_the_sandbox_off_read_only_commands_ask_too() {
    let fx = Fixture::new();
    let (r, _) = fx.run(&["ls", "cat in.txt"], &["--sandbox", "off"], &[]);
    for response in &r {
        assert!(response.contains(DENIED_BY_POLICY), "{response}");
    }
}
