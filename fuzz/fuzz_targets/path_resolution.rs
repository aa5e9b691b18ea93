//! Path resolution and confinement: `Workspace::resolve` / `resolve_defensive` (what a
//! tool does with a model's `file_path`), `Workspace::check` (symlinks followed) and
//! the FileSystem actor's confined open. In a workspace with symlinks leading out, a
//! secret beside it and blocked segments (`.git`, `.env`): a resolved path is absolute
//! and free of `.`/`..`; an accepted path is inside the root and in no blocked segment;
//! a confined open never lands outside or reads the secret.
//!
//! Input: the path text (lossy UTF-8); `@WS@` stands for the workspace's absolute path
//! and `@OUT@` for the directory around it.
#![no_main]

use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use troupe::platform::filesystem::{Confined, OpenMode};
use troupe::platform::workspace::Workspace;

const SECRET: &str = "OUTSIDE-SECRET";

struct World {
    base: PathBuf,
    ws: PathBuf,
    confined: Confined,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        // Kept for the process's life; fuzz/run.sh points TMPDIR at a directory it removes.
        let dir = tempfile::Builder::new()
            .prefix("troupe-fuzz-paths")
            .tempdir()
            .expect("tempdir")
            .keep();
        let base = dir.canonicalize().expect("canonical");
        let ws = base.join("ws");
        for d in ["sub/deep", ".git", "node_modules/m"] {
            std::fs::create_dir_all(ws.join(d)).expect("dirs");
        }
        std::fs::write(base.join("secret"), SECRET).expect("secret");
        std::fs::write(ws.join(".env"), SECRET).expect("env");
        std::fs::write(ws.join(".git/config"), SECRET).expect("git config");
        std::fs::write(ws.join("sub/a"), "inside").expect("inside");
        let link = |target: &Path, at: &str| {
            std::os::unix::fs::symlink(target, ws.join(at)).expect("symlink");
        };
        link(&base, "link_out");
        link(Path::new("../../.."), "sub/deep/up");
        link(&ws.join("sub"), "abs_in");
        link(&base.join("secret"), "secret_link");
        link(Path::new("missing/../../.."), "dangling");
        link(Path::new("loop"), "loop");
        let workspace = Arc::new(Workspace::new(&ws, &[]).expect("workspace"));
        let confined = Confined::new(workspace).expect("confined");
        World { base, ws, confined }
    })
}

fn is_blocked(segment: &str) -> bool {
    let head = segment.split(':').next().unwrap_or("");
    let head = head.trim_end_matches([' ', '.']).to_ascii_lowercase();
    matches!(head.as_str(), ".git" | ".env" | "node_modules")
}

fn check_resolved(world: &World, raw: &str, path: &Path) {
    assert!(path.is_absolute(), "{raw:?} resolved to relative {path:?}");
    assert!(
        !path
            .components()
            .any(|c| matches!(c, Component::CurDir | Component::ParentDir)),
        "{raw:?} resolved to unnormalised {path:?}"
    );
    if let Ok(real) = world.confined.check(path) {
        let rel = real
            .strip_prefix(&world.ws)
            .unwrap_or_else(|_| panic!("{raw:?} accepted outside: {}", real.display()));
        assert!(
            !rel.components()
                .any(|c| is_blocked(&c.as_os_str().to_string_lossy())),
            "{raw:?} accepted in a blocked segment: {}",
            real.display()
        );
    }
    if let Ok(mut opened) = world.confined.open(path, OpenMode::Read) {
        assert!(
            opened.real_path.starts_with(&world.ws),
            "{raw:?} opened {}",
            opened.real_path.display()
        );
        let mut text = String::new();
        let _ = opened.file.read_to_string(&mut text);
        assert!(!text.contains(SECRET), "{raw:?} read the secret");
    }
    for mode in [OpenMode::Handle, OpenMode::Directory] {
        if let Ok(opened) = world.confined.open(path, mode) {
            assert!(
                opened.real_path.starts_with(&world.ws),
                "{raw:?} opened {}",
                opened.real_path.display()
            );
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() > 4096 {
        return;
    }
    let world = world();
    let raw = String::from_utf8_lossy(data)
        .replace("@WS@", &world.ws.to_string_lossy())
        .replace("@OUT@", &world.base.to_string_lossy());
    check_resolved(world, &raw, &world.confined.resolve(&raw));
    check_resolved(world, &raw, &world.confined.resolve_defensive(&raw));
});
