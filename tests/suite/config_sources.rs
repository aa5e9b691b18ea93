//! `troupe config`: every effective value with its source — the defaults, the user and
//! project files, the environment (including the variables the model providers read
//! when their setting is empty), `-c` flags and run flags — and keys only as set or
//! not set.

use crate::common::*;

#[test]
fn config_shows_provider_variables_files_and_flags_with_their_source_and_hides_keys() {
    let s = Scratch::new();
    std::fs::create_dir_all(s.home().join(".troupe")).unwrap();
    std::fs::write(
        s.home().join(".troupe/config.toml"),
        "[model]\nmax_turns = 7\n",
    )
    .unwrap();
    s.write(".troupe/config.toml", "[tools]\nfs_threads = 3\n");
    let trusted = s.bare_command().arg("trust").output().unwrap();
    assert!(trusted.status.success(), "{}", stderr(&trusted));
    let out = s
        .bare_command()
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        .env("OPENAI_API_KEY", "sk-never-shown")
        .env("TROUPE_MODEL_TEMPERATURE", "0.5")
        .args(["config", "--yolo", "-m", "qwen3", "-c", "log.level=debug"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let line = |key: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("no {key} in:\n{text}"))
            .to_string()
    };
    assert_eq!(
        line("model.openai.base_url"),
        "model.openai.base_url = \"http://127.0.0.1:9/v1\"  # environment variable OPENAI_BASE_URL"
    );
    assert_eq!(
        line("model.openai.api_key"),
        "model.openai.api_key = set  # environment variable OPENAI_API_KEY"
    );
    assert_eq!(
        line("model.gemini.api_key"),
        "model.gemini.api_key = not set  # default"
    );
    assert_eq!(
        line("model.temperature"),
        "model.temperature = 0.5  # environment variable TROUPE_MODEL_TEMPERATURE"
    );
    let user = s.home().join(".troupe/config.toml");
    assert_eq!(
        line("model.max_turns"),
        format!("model.max_turns = 7  # user file {}", user.display())
    );
    let project = s.ws().join(".troupe/config.toml");
    assert_eq!(
        line("tools.fs_threads"),
        format!("tools.fs_threads = 3  # project file {}", project.display())
    );
    assert_eq!(
        line("approval.mode"),
        "approval.mode = \"yolo\"  # flag --yolo"
    );
    assert_eq!(line("model.name"), "model.name = \"qwen3\"  # flag --model");
    assert_eq!(
        line("log.level"),
        "log.level = \"debug\"  # flag -c log.level=debug"
    );
    assert!(!text.contains("sk-never-shown"), "{text}");
    // The sandbox line another part of `troupe config` adds is still there.
    assert!(text.contains("# sandbox: "), "{text}");
}
