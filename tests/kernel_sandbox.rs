//! The kernel sandbox (platform::sandbox) on its own: real `bash -c` children.
//! End-to-end tests: real `bash -c` children under the sandbox.

use std::collections::BTreeMap;
use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use tempfile::TempDir;
use troupe::platform::sandbox::{
    PreparedSandbox, Protection, ProtectionStrategy, SandboxMode, SandboxPolicy,
};

#[path = "common/landlock.rs"]
mod landlock;
use landlock::require_landlock;

/// A test directory outside every root the sandbox makes writable: `<base>/ws` is the
/// workspace, `<base>` its parent, which the tests expect commands cannot write.
struct Fixture {
    _tmp: TempDir,
    base: PathBuf,
    ws: PathBuf,
}

/// The directories a workspace-write sandbox lets commands write besides the workspace:
/// the temp dir (`TMPDIR`, else `/tmp`), `/tmp` and `/dev/shm` (the world's own), and
/// `/var/tmp` (a link to `/tmp` in the world).
fn writable_temp_dirs() -> Vec<PathBuf> {
    [
        std::env::temp_dir(),
        PathBuf::from("/tmp"),
        PathBuf::from("/dev/shm"),
        PathBuf::from("/var/tmp"),
    ]
    .into_iter()
    .map(|p| p.canonicalize().unwrap_or(p))
    .collect()
}

/// Where the fixture's directory goes: cargo's temp dir for the tests
/// (`CARGO_TARGET_TMPDIR`, inside the target dir) unless that lies beneath a temp dir
/// the sandbox opens (a checkout under `/tmp`, say), else the user's cache directory
/// (or home). The parent of the workspace must be outside them all, or `touch ../x`
/// would rightly succeed.
fn fixture_parent() -> PathBuf {
    let temp = writable_temp_dirs();
    let outside = |p: &Path| !temp.iter().any(|t| p.starts_with(t));
    let target_tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let target_tmp = target_tmp.canonicalize().unwrap_or(target_tmp);
    if outside(&target_tmp) {
        return target_tmp;
    }
    // The tests' directories are temp dirs made (and removed) inside it.
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let candidates = [
        std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from),
        home.as_ref().map(|h| h.join(".cache")),
        home,
    ];
    for dir in candidates.into_iter().flatten() {
        if let Ok(dir) = dir.canonicalize() {
            if dir.is_dir() && outside(&dir) {
                return dir;
            }
        }
    }
    panic!(
        "these tests need a directory outside the temp dirs the sandbox lets commands \
         write ({temp:?}); CARGO_TARGET_TMPDIR ({}) is beneath one, and so are \
         XDG_CACHE_HOME, ~/.cache and HOME (or they are missing): set CARGO_TARGET_DIR to \
         a directory outside them",
        target_tmp.display()
    )
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir_in(fixture_parent()).expect("tempdir");
    let base = tmp.path().canonicalize().expect("canonicalize");
    let temp = writable_temp_dirs();
    assert!(
        !temp.iter().any(|t| base.starts_with(t)),
        "the fixture {} lies beneath a temp dir the sandbox makes writable ({temp:?})",
        base.display()
    );
    let ws = base.join("ws");
    fs::create_dir(&ws).expect("mkdir ws");
    fs::write(ws.join("existing.txt"), "original\n").expect("write");
    fs::write(
        ws.join("evil.sh"),
        "#!/bin/bash\necho EVIL-RAN\ntouch pwned\n",
    )
    .expect("write");
    fs::set_permissions(ws.join("evil.sh"), fs::Permissions::from_mode(0o755)).expect("chmod");
    fs::create_dir_all(ws.join(".git/hooks")).expect("mkdir .git");
    fs::write(ws.join(".git/config"), "[core]\n").expect("write");
    fs::create_dir(ws.join("src")).expect("mkdir src");
    Fixture {
        _tmp: tmp,
        base,
        ws,
    }
}

fn policy(mode: SandboxMode, ws: &Path) -> SandboxPolicy {
    SandboxPolicy {
        mode,
        workspace_roots: vec![ws.to_path_buf()],
        writable_roots: vec![],
        network: false,
        deny_read: vec![],
        readable_roots: vec![],
        home: std::path::PathBuf::from("/nonexistent-home"),
    }
}

fn prepare(p: &SandboxPolicy) -> PreparedSandbox {
    p.prepare().expect("prepare").expect("sandbox")
}

fn run(sb: Option<&PreparedSandbox>, cwd: &Path, script: &str) -> Output {
    let mut cmd = Command::new("/bin/bash");
    cmd.arg("-c").arg(script).current_dir(cwd);
    if let Some(sb) = sb {
        sb.apply_to(&mut cmd);
    }
    cmd.output().expect("spawn")
}

fn ok(sb: &PreparedSandbox, cwd: &Path, script: &str) -> String {
    let out = run(Some(sb), cwd, script);
    assert!(
        out.status.success(),
        "expected success: {script}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn fails(sb: &PreparedSandbox, cwd: &Path, script: &str) -> String {
    let out = run(Some(sb), cwd, script);
    assert!(
        !out.status.success(),
        "expected failure: {script}\n(run in {}, whose parent is assumed outside every \
         root the sandbox makes writable: the workspace, the temp dirs {:?})\nstdout: {}",
        cwd.display(),
        writable_temp_dirs(),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Path -> content (None for directories) of everything beneath `dir`.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).expect("read_dir") {
            let p = e.expect("entry").path();
            let meta = fs::symlink_metadata(&p).expect("meta");
            if meta.is_dir() {
                stack.push(p.clone());
                out.insert(p, None);
            } else {
                out.insert(p.clone(), Some(fs::read(&p).unwrap_or_default()));
            }
        }
    }
    out
}

fn listener() -> (TcpListener, u16) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    (l, port)
}

#[test]
fn mode_parses_and_displays() {
    for s in ["read-only", "workspace-write", "off"] {
        let m: SandboxMode = s.parse().expect("parse");
        assert_eq!(m.to_string(), s);
    }
    assert!("readonly".parse::<SandboxMode>().is_err());
}

#[test]
fn read_only_forbids_writes_and_workspace_exec() {
    require_landlock!();
    let fx = fixture();
    let sb = prepare(&policy(SandboxMode::ReadOnly, &fx.ws));
    let expected = if sb.is_world() {
        Protection::World
    } else {
        Protection::NotNeeded
    };
    assert_eq!(sb.protection(), expected);
    let before = snapshot(&fx.base);
    for script in [
        "touch inside",
        "echo x > inside",
        "echo x > existing.txt",
        "echo x >> existing.txt",
        "printf 'a\\na\\n' | uniq - F",
        "mkdir d",
        "mkdir src/d",
        "ln -s existing.txt link",
        "rm existing.txt",
        "mv existing.txt moved.txt",
        "truncate -s 0 existing.txt",
        "echo x > .git/config",
        "touch ../outside",
        "echo x > /tmp/sandbox-proto-ro-test",
    ] {
        fails(&sb, &fx.ws, script);
    }
    assert_eq!(before, snapshot(&fx.base), "filesystem changed");
    assert!(!Path::new("/tmp/sandbox-proto-ro-test").exists());

    assert_eq!(ok(&sb, &fx.ws, "cat existing.txt"), "original\n");
    assert_eq!(ok(&sb, &fx.ws, "/bin/echo hi"), "hi\n");
    ok(
        &sb,
        &fx.ws,
        "echo x > /dev/null && head -c1 /dev/zero >/dev/null",
    );
    ok(&sb, &fx.ws, "echo piped | cat | cat");

    let err = fails(&sb, &fx.ws, "./evil.sh");
    assert!(err.contains("Permission denied"), "{err}");
    // `bash evil.sh` only *reads* the script: it runs, but can still write nothing.
    let out = run(Some(&sb), &fx.ws, "bash evil.sh");
    assert!(String::from_utf8_lossy(&out.stdout).contains("EVIL-RAN"));
    assert!(!fx.ws.join("pwned").exists());
    // Nothing outside the system directories executes.
    fs::copy("/bin/true", fx.ws.join("mytrue")).expect("copy");
    fails(&sb, &fx.ws, "./mytrue");
}

#[test]
fn read_only_has_no_network_even_if_allowed() {
    require_landlock!();
    let fx = fixture();
    let (_l, port) = listener();
    let mut p = policy(SandboxMode::ReadOnly, &fx.ws);
    p.network = true; // ignored in read-only
    let sb = prepare(&p);
    let err = fails(&sb, &fx.ws, &format!("exec 3<>/dev/tcp/127.0.0.1/{port}"));
    assert!(err.contains("Operation not permitted"), "{err}");
    // AF_UNIX stays usable (socketpair, unix sockets).
    if Path::new("/usr/bin/python3").exists() {
        let py = format!(
            "/usr/bin/python3 -c 'import socket; socket.socketpair(); \
             socket.socket(socket.AF_UNIX); socket.create_connection((\"127.0.0.1\", {port}))'"
        );
        let err = fails(&sb, &fx.ws, &py);
        assert!(err.contains("PermissionError"), "{err}");
    } else {
        eprintln!("python3 not found in /usr/bin: python check skipped");
    }
}

fn workspace_write_common(sb: &PreparedSandbox, fx: &Fixture) {
    ok(
        sb,
        &fx.ws,
        "echo x > existing.txt && mkdir -p src/a/b && echo y > src/a/b/f",
    );
    assert_eq!(
        fs::read_to_string(fx.ws.join("existing.txt"))
            .ok()
            .as_deref(),
        Some("x\n")
    );
    let before = snapshot(&fx.base);
    for script in [
        "touch ../outside",
        "echo x > .git/config",
        "echo x >> .git/config",
        "touch .git/hooks/x",
        "rm .git/config",
        "ln .git/config src/hard",
        "mknod src/disk b 254 0",
    ] {
        fails(sb, &fx.ws, script);
    }
    if sb.is_world() {
        // In the world, objects and refs stay writable (`git commit` works); only the
        // parts that name programs are read-only.
        ok(sb, &fx.ws, "mkdir .git/x && rmdir .git/x");
    } else {
        fails(sb, &fx.ws, "mkdir .git/x");
    }
    assert_eq!(before, snapshot(&fx.base), "filesystem changed");
    ok(sb, &fx.ws, "cat .git/config >/dev/null && ls .git/hooks");
    // `mv` may fall back to copy + unlink: the unlink must fail.
    let _ = run(Some(sb), &fx.ws, "mv .git/config src/");
    assert!(fx.ws.join(".git/config").exists());
    // The temp dir is writable, and workspace scripts may run.
    let unique = fx
        .base
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    let tmp_file = std::env::temp_dir().join(format!("sandbox-proto-{unique}"));
    ok(
        sb,
        &fx.ws,
        &format!("echo t > {0} && rm {0}", tmp_file.display()),
    );
    let out = run(Some(sb), &fx.ws, "./evil.sh");
    assert!(String::from_utf8_lossy(&out.stdout).contains("EVIL-RAN"));
}

#[test]
fn workspace_write_with_mount_namespace() {
    require_landlock!();
    let fx = fixture();
    let sb = prepare(&policy(SandboxMode::WorkspaceWrite, &fx.ws));
    if sb.protection() == Protection::Enumeration {
        // Same rule as Landlock's guard: no silent pass where nothing was checked.
        if std::env::var("TROUPE_ALLOW_NO_LANDLOCK").as_deref() == Ok("1") {
            eprintln!("SKIPPED: no mount namespace available here (TROUPE_ALLOW_NO_LANDLOCK=1)");
            return;
        }
        panic!(
            "no mount namespace here, so the workspace-write strategy cannot be checked; \
             set TROUPE_ALLOW_NO_LANDLOCK=1 to skip it"
        );
    }
    workspace_write_common(&sb, &fx);
    // New entries directly in the workspace root work in this strategy...
    ok(
        &sb,
        &fx.ws,
        "echo x > inside.txt && mkdir target && rm inside.txt && mv target t2",
    );
    // ...but `.git` cannot be replaced.
    fails(&sb, &fx.ws, "mv .git g");
    fails(&sb, &fx.ws, "rm -rf .git");
    assert!(fx.ws.join(".git/config").exists());
}

#[test]
fn workspace_write_with_enumeration() {
    require_landlock!();
    let fx = fixture();
    let p = policy(SandboxMode::WorkspaceWrite, &fx.ws);
    let sb = p
        .prepare_with(ProtectionStrategy::Enumerate)
        .expect("prepare")
        .expect("sandbox");
    assert_eq!(sb.protection(), Protection::Enumeration);
    workspace_write_common(&sb, &fx);
    // Documented limitation: nothing can be created directly in the root.
    fails(&sb, &fx.ws, "echo x > inside.txt");
    fails(&sb, &fx.ws, "mkdir .troupe");
    fails(&sb, &fx.ws, "mv .git g");
}

#[test]
fn deny_read_hides_secrets() {
    require_landlock!();
    let fx = fixture();
    let home = fx.base.join("home");
    fs::create_dir_all(home.join(".ssh")).expect("mkdir");
    fs::write(home.join(".ssh/id_rsa"), "SECRET").expect("write");
    fs::write(home.join("other.txt"), "public").expect("write");
    for mode in [SandboxMode::ReadOnly, SandboxMode::WorkspaceWrite] {
        let mut p = policy(mode, &fx.ws);
        p.deny_read = vec![home.join(".ssh"), home.join(".aws")]; // missing .aws is skipped
        p.writable_roots = vec![home.clone()];
        let sb = prepare(&p);
        let cwd = &fx.ws;
        fails(&sb, cwd, &format!("cat {}/.ssh/id_rsa", home.display()));
        fails(&sb, cwd, &format!("cp {}/.ssh/id_rsa x", home.display()));
        fails(
            &sb,
            cwd,
            &format!("echo k >> {}/.ssh/authorized_keys", home.display()),
        );
        assert_eq!(
            ok(&sb, cwd, &format!("cat {}/other.txt", home.display())),
            "public"
        );
        ok(&sb, cwd, &format!("ls {}", home.display()));
        if mode == SandboxMode::WorkspaceWrite {
            ok(
                &sb,
                cwd,
                &format!("echo more >> {}/other.txt", home.display()),
            );
        }
    }
    assert!(!home.join(".ssh/authorized_keys").exists());
}

#[test]
fn workspace_write_network_switch() {
    require_landlock!();
    let fx = fixture();
    let (_l, port) = listener();
    let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port}");
    let mut p = policy(SandboxMode::WorkspaceWrite, &fx.ws);
    fails(&prepare(&p), &fx.ws, &script);
    p.network = true;
    ok(&prepare(&p), &fx.ws, &script);
}

#[test]
fn off_is_unsandboxed() {
    let fx = fixture();
    let p = policy(SandboxMode::Off, &fx.ws);
    assert!(p.prepare().expect("prepare").is_none());
    let out = run(None, &fx.ws, "touch ../outside && echo x > .git/config");
    assert!(out.status.success());
    assert!(fx.base.join("outside").exists());
}

#[test]
fn parent_proc_is_protected_and_self_proc_works() {
    require_landlock!();
    let fx = fixture();
    let sb = prepare(&policy(SandboxMode::WorkspaceWrite, &fx.ws));
    for f in ["environ", "maps", "mem", "auxv", "fd/0"] {
        fails(&sb, &fx.ws, &format!("cat /proc/$PPID/{f} > /dev/null"));
    }
    fails(&sb, &fx.ws, "ls /proc/$PPID/cwd/ > /dev/null");
    ok(
        &sb,
        &fx.ws,
        "ls /proc/self/fd && cat /proc/self/status /proc/self/environ >/dev/null",
    );
    // The ruleset fd does not leak into the executed program.
    let fds = ok(&sb, &fx.ws, "ls -l /proc/$$/fd");
    assert!(!fds.contains("landlock"), "{fds}");
}

#[test]
fn concurrent_spawns_from_many_threads() {
    require_landlock!();
    let fx = Arc::new(fixture());
    let shared = prepare(&policy(SandboxMode::WorkspaceWrite, &fx.ws));
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let fx = Arc::clone(&fx);
            let shared = shared.clone();
            std::thread::spawn(move || {
                // 8 threads x 6 or 7 = 50 commands; odd ones prepare their own sandbox.
                let n = if t < 2 { 7 } else { 6 };
                for i in 0..n {
                    let own;
                    let sb = if i % 2 == 0 {
                        &shared
                    } else {
                        own = prepare(&policy(SandboxMode::WorkspaceWrite, &fx.ws));
                        &own
                    };
                    let script = format!("echo ok-{t}-{i} > src/f-{t}-{i} && cat src/f-{t}-{i}");
                    assert_eq!(ok(sb, &fx.ws, &script), format!("ok-{t}-{i}\n"));
                    fails(sb, &fx.ws, &format!("touch ../outside-{t}-{i}"));
                }
                n
            })
        })
        .collect();
    let total: usize = threads.into_iter().map(|h| h.join().expect("thread")).sum();
    assert_eq!(total, 50);
    assert!(!fs::read_dir(&fx.base).expect("read_dir").any(|e| e
        .expect("entry")
        .file_name()
        .to_string_lossy()
        .starts_with("outside")));
}

/// A protected directory that vanishes between `prepare` and the spawn (another
/// command's check moved it aside, say) is left out of the world, nothing is made in
/// its place, the command still starts, and one it then makes is moved aside.
#[test]
fn a_protected_directory_gone_before_the_spawn_is_neither_fatal_nor_plantable() {
    require_landlock!();
    let fx = fixture();
    fs::create_dir(fx.ws.join(".troupe")).expect("mkdir");
    let sb = prepare(&policy(SandboxMode::WorkspaceWrite, &fx.ws));
    assert!(
        sb.is_world(),
        "namespaces are unavailable: the world cannot be tested"
    );
    fs::remove_dir(fx.ws.join(".troupe")).expect("rmdir");
    ok(
        &sb,
        &fx.ws,
        "mkdir .troupe && echo '[hooks]' > .troupe/config.toml",
    );
    let moved = sb.refuse_created_protected();
    assert_eq!(moved.len(), 1, "{moved:?}");
    assert_eq!(moved[0].0, fx.ws.join(".troupe"));
    assert!(!fx.ws.join(".troupe").exists());
    assert!(fx.ws.join(".troupe.made-by-command/config.toml").exists());
}
