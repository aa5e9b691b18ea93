//! Files Troupe writes outside the workspace for the user (the memory file) go through
//! the same atomic write as edits (issue 10, point 3): a link is followed and stays a
//! link, the mode is kept, nothing is left beside the file.

use std::os::unix::fs::PermissionsExt;

use serde_json::json;

use crate::common::*;

#[test]
fn the_memory_file_keeps_its_mode_and_its_link() {
    let s = Scratch::new();
    let dotfiles = s.home().join("dotfiles");
    std::fs::create_dir_all(&dotfiles).unwrap();
    let target = dotfiles.join("AGENTS.md");
    std::fs::write(&target, "# Mine\n").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
    let troupe_home = s.home().join(".troupe");
    std::fs::create_dir_all(&troupe_home).unwrap();
    let link = troupe_home.join("AGENTS.md");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let turns = [
        turn(vec![call(
            "save_memory",
            json!({"fact": "the build uses cargo"}),
        )]),
        turn(vec![text("done")]),
    ];
    let out = s.run(&turns, &["-p", "go", "--approval-mode", "yolo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link was replaced by a file"
    );
    let text = std::fs::read_to_string(&target).unwrap();
    assert!(text.starts_with("# Mine\n"), "{text}");
    assert!(text.contains("the build uses cargo"), "{text}");
    let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o640, "mode not kept");
    let stray: Vec<_> = std::fs::read_dir(&dotfiles)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".troupe-write-"))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
}
