//! gemini-cli 0.61's extensions: a folder with `gemini-extension.json` installed with
//! `troupe extensions install` (or laid out in `~/.gemini/extensions/` as gemini-cli
//! installs it) brings its MCP server, context file, `excludeTools`, commands,
//! skills, hooks and policies to a session; the `troupe extensions` subcommands and
//! the `-e`/`-l` flags; workspace extension folders are never loaded, and say so.
//!
//! The expected result lines, file formats (`.gemini-extension-install.json`,
//! `extension-enablement.json`) and the `list` layout are gemini-cli 0.61's, read in
//! its bundle (`handleInstall`, `handleList`, `toOutputString`,
//! `ExtensionEnablementManager`, `handleNew`, `handleValidate`).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::mcp::fixture;
use crate::common::*;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn sha(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn ext(s: &Scratch, args: &[&str]) -> std::process::Output {
    s.bare_command()
        .arg("extensions")
        .args(args)
        .output()
        .unwrap()
}

fn extensions_dir(s: &Scratch) -> PathBuf {
    s.home().join(".gemini").join("extensions")
}

fn declared(request: &Value) -> Vec<String> {
    request["tools"][0]["functionDeclarations"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|d| d["name"].as_str().map(str::to_string))
        .collect()
}

/// The texts of the last user content of a request.
fn last_user_texts(request: &Value) -> Vec<String> {
    request["contents"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|c| c["role"] == "user")
        .unwrap()["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["text"].as_str().map(str::to_string))
        .collect()
}

/// An extension folder `demo` outside the workspace: the MCP fixture as server `fx`,
/// a context file, `excludeTools`, a command and a policy.
fn demo_source(s: &Scratch) -> PathBuf {
    let src = s.root().join("src").join("demo-ext");
    let manifest = json!({
        "name": "demo",
        "version": "1.2.0",
        "mcpServers": {"fx": {"command": fixture(), "args": [], "cwd": "${extensionPath}", "trust": true}},
        "contextFileName": "CTX.md",
        "excludeTools": ["glob", "run_shell_command(rm -rf)", "mcp_fx_image", "audio"]
    });
    write(&src.join("gemini-extension.json"), &manifest.to_string());
    write(
        &src.join("CTX.md"),
        "The demo extension's marker: ctx-7731.",
    );
    write(
        &src.join("commands").join("greet.toml"),
        "description = \"Greets\"\nprompt = \"Say hello to {{args}} from the demo extension.\"\n",
    );
    write(
        &src.join("policies").join("rules.toml"),
        "[[rule]]\ntoolName = \"read_file\"\ndecision = \"deny\"\npriority = 10\ndenyMessage = \"demo forbids reads\"\n\n[[rule]]\ntoolName = \"write_file\"\ndecision = \"allow\"\npriority = 10\n",
    );
    src
}

#[test]
fn an_installed_extension_brings_its_server_context_exclusions_and_command() {
    let s = Scratch::new();
    let src = demo_source(&s);
    let out = ext(&s, &["install", src.to_str().unwrap(), "--consent"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "Extension \"demo\" installed successfully and enabled.\n"
    );
    // gemini-cli's layout: a copy, its install metadata, the enablement rule.
    let dir = extensions_dir(&s).join("demo");
    assert!(dir.join("CTX.md").is_file() && dir.join("commands/greet.toml").is_file());
    assert_eq!(
        std::fs::read_to_string(dir.join(".gemini-extension-install.json")).unwrap(),
        format!(
            "{{\n  \"source\": \"{}\",\n  \"type\": \"local\"\n}}",
            src.display()
        )
    );
    assert_eq!(
        std::fs::read_to_string(extensions_dir(&s).join("extension-enablement.json")).unwrap(),
        format!(
            "{{\n  \"demo\": {{\n    \"overrides\": [\n      \"{}/*\"\n    ]\n  }}\n}}",
            s.home().display()
        )
    );
    // A session in an untrusted folder: the extension is the user's, so it loads.
    let out = s.run(&[turn(vec![text("ok")])], &["-p", "/greet Ada"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let request = &s.requests()[0];
    let names = declared(request);
    assert!(names.contains(&"mcp_fx_echo".to_string()), "{names:?}");
    for gone in ["glob", "mcp_fx_image", "mcp_fx_audio"] {
        assert!(!names.contains(&gone.to_string()), "{names:?}");
    }
    assert!(names.contains(&"read_file".to_string()));
    assert!(request.to_string().contains("ctx-7731"));
    assert!(request
        .to_string()
        .contains(&dir.join("CTX.md").display().to_string()));
    assert_eq!(
        last_user_texts(request),
        ["Say hello to Ada from the demo extension."]
    );
    // Installing it again is refused, as gemini-cli refuses it.
    let again = ext(&s, &["install", src.to_str().unwrap(), "--consent"]);
    assert!(!again.status.success());
    assert!(stderr(&again)
        .contains("Extension \"demo\" is already installed. Please uninstall it first."));
}

#[test]
fn exclude_tools_with_a_command_and_extension_policies_refuse_calls() {
    let s = Scratch::new();
    let src = demo_source(&s);
    assert!(ext(&s, &["install", src.to_str().unwrap(), "--consent"])
        .status
        .success());
    s.write("a.txt", "x");
    let turns = [
        turn(vec![
            call("run_shell_command", json!({"command": "rm -rf a.txt"})),
            call("read_file", json!({"file_path": "a.txt"})),
            call("write_file", json!({"file_path": "b.txt", "content": "y"})),
        ]),
        turn(vec![text("done")]),
    ];
    // Refused calls make a headless run say so (and exit non-zero); the model is told.
    let out = s.run(&turns, &["-p", "go", "--yolo"]);
    assert!(
        stderr(&out).contains("2 tool calls were refused"),
        "{}",
        stderr(&out)
    );
    let responses = function_responses(&s.requests()[1]);
    let shell = responses[0]["response"].to_string();
    assert!(shell.contains("excludes `rm -rf` commands"), "{shell}");
    assert!(s.ws().join("a.txt").exists());
    let read = responses[1]["response"].to_string();
    assert!(read.contains("demo forbids reads"), "{read}");
    // The extension's `allow` rule is ignored; yolo lets the write run anyway.
    assert!(s.ws().join("b.txt").exists());
}

#[test]
fn an_extension_laid_out_by_gemini_cli_loads_unchanged() {
    let s = Scratch::new();
    let dir = extensions_dir(&s).join("gx");
    write(
        &dir.join("gemini-extension.json"),
        r#"{"name": "gx", "version": "0.3.0", "description": "from gemini"}"#,
    );
    write(&dir.join("GEMINI.md"), "gx context: marker-5512");
    write(
        &dir.join(".gemini-extension-install.json"),
        "{\n  \"source\": \"/somewhere/gx\",\n  \"type\": \"local\"\n}",
    );
    write(
        &dir.join("skills").join("gx-skill").join("SKILL.md"),
        "---\nname: gx-skill\ndescription: A skill from the gx extension.\n---\nRun ${extensionPath}${/}tool.sh first.\n",
    );
    write(
        &dir.join("hooks").join("hooks.json"),
        r#"{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "touch ${extensionPath}${/}started"}]}]}}"#,
    );
    write(
        &dir.join("agents").join("gx-agent.md"),
        "---\nname: gx-agent\ndescription: An agent of the gx extension.\n---\nYou help.\n",
    );
    let out = s.run(&[turn(vec![text("ok")])], &["-p", "go"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let request = &s.requests()[0];
    assert!(request.to_string().contains("marker-5512"));
    assert!(declared(request).contains(&"activate_skill".to_string()));
    assert!(request.to_string().contains("gx-skill"));
    assert!(
        request.to_string().contains("gx-agent"),
        "agent not offered"
    );
    assert!(
        dir.join("started").exists(),
        "SessionStart hook did not run"
    );
    // The skill's instructions are hydrated as gemini-cli hydrates them.
    std::fs::remove_file(s.requests_path()).unwrap();
    let turns = [
        turn(vec![call("activate_skill", json!({"name": "gx-skill"}))]),
        turn(vec![text("ok")]),
    ];
    let out = s.run(&turns, &["-p", "go", "--yolo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let answer = function_responses(&s.requests()[1])[0]["response"].to_string();
    let expected = format!("Run {}/tool.sh first.", dir.display());
    assert!(answer.contains(&expected), "{answer}");
    // `troupe config` says which extensions are loaded.
    let config = s.bare_command().arg("config").output().unwrap();
    let listing = stdout(&config);
    assert!(
        listing.contains(&format!(
            "#   extensions: 1 in {}\n#     gx 0.3.0 (enabled): {}\n",
            extensions_dir(&s).display(),
            dir.display()
        )),
        "{listing}"
    );
    // A command whose name the user's own commands hold becomes `/gx.hello`.
    write(
        &dir.join("commands").join("hello.toml"),
        "prompt = \"gx says hello\"\n",
    );
    write(
        &s.home().join(".gemini").join("commands").join("hello.toml"),
        "prompt = \"user says hello\"\n",
    );
    for (typed, expanded) in [
        ("/hello", "user says hello"),
        ("/gx.hello", "gx says hello"),
    ] {
        std::fs::remove_file(s.requests_path()).unwrap();
        let out = s.run(&[turn(vec![text("ok")])], &["-p", typed]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(last_user_texts(&s.requests()[0]), [expanded]);
    }
    // `-l` lists it as gemini-cli does.
    let list = s.bare_command().arg("-l").output().unwrap();
    assert!(list.status.success(), "{}", stderr(&list));
    assert_eq!(stdout(&list), "Installed extensions:\n- gx\n");
    // A gemini-cli disable for this folder (its enablement file) is obeyed.
    write(
        &extensions_dir(&s).join("extension-enablement.json"),
        &format!(r#"{{"gx": {{"overrides": ["!{}/*"]}}}}"#, s.ws().display()),
    );
    std::fs::remove_file(s.requests_path()).unwrap();
    let out = s.run(&[turn(vec![text("ok")])], &["-p", "go"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!s.requests()[0].to_string().contains("marker-5512"));
}

/// Two extensions, `alpha` and `beta`, each with a context file naming it.
fn two_extensions(s: &Scratch) {
    for name in ["alpha", "beta"] {
        let dir = extensions_dir(s).join(name);
        write(
            &dir.join("gemini-extension.json"),
            &format!(r#"{{"name": "{name}", "version": "1.0.0"}}"#),
        );
        write(&dir.join("GEMINI.md"), &format!("context of {name}-ext"));
    }
}

#[test]
fn the_e_flag_enables_only_the_named_extensions() {
    let s = Scratch::new();
    two_extensions(&s);
    let context = |args: &[&str]| {
        let _ = std::fs::remove_file(s.requests_path());
        let mut all = vec!["-p", "go"];
        all.extend_from_slice(args);
        let out = s.run(&[turn(vec![text("ok")])], &all);
        assert!(out.status.success(), "{}", stderr(&out));
        let body = s.requests()[0].to_string();
        let has = |n: &str| body.contains(&format!("context of {n}-ext"));
        (has("alpha"), has("beta"), stderr(&out))
    };
    let (a, b, _) = context(&[]);
    assert_eq!((a, b), (true, true));
    let (a, b, _) = context(&["-e", "BETA"]);
    assert_eq!((a, b), (false, true));
    let (a, b, _) = context(&["--extensions", "alpha,beta"]);
    assert_eq!((a, b), (true, true));
    let (a, b, _) = context(&["-e", "none"]);
    assert_eq!((a, b), (false, false));
    let (a, b, err) = context(&["-e", "alpha", "-e", "gamma"]);
    assert_eq!((a, b), (true, false));
    assert!(err.contains("Extension not found: gamma"), "{err}");
    // `-l` lists every installed extension, whatever `-e` says.
    let list = s
        .bare_command()
        .args(["-l", "-e", "none"])
        .output()
        .unwrap();
    assert_eq!(stdout(&list), "Installed extensions:\n- alpha\n- beta\n");
}

#[test]
fn workspace_extension_folders_are_not_loaded_trusted_or_not_and_say_so() {
    let s = Scratch::new();
    s.write(
        ".gemini/extensions/proj/gemini-extension.json",
        r#"{"name": "proj", "version": "1.0.0"}"#,
    );
    s.write(
        ".gemini/extensions/proj/GEMINI.md",
        "project ext marker-9090",
    );
    for trust in [false, true] {
        let _ = std::fs::remove_file(s.requests_path());
        let args: &[&str] = if trust {
            &["-p", "go", "--skip-trust"]
        } else {
            &["-p", "go"]
        };
        let out = s.run(&[turn(vec![text("ok")])], args);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(!s.requests()[0].to_string().contains("marker-9090"));
        assert!(
            stderr(&out).contains("Not loading 1 extension(s) of this workspace"),
            "{}",
            stderr(&out)
        );
    }
    let list = ext(&s, &["list"]);
    assert_eq!(stdout(&list), "No extensions installed.\n");
}

#[test]
fn new_validate_link_list_disable_enable_and_uninstall() {
    let s = Scratch::new();
    let path = s.root().join("work").join("mine");
    let path_s = path.to_str().unwrap();
    let out = ext(&s, &["new", path_s]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("Successfully created new extension at {path_s}.\nYou can install this using \"troupe extensions link {path_s}\" to test it out.\n")
    );
    assert_eq!(
        std::fs::read_to_string(path.join("gemini-extension.json")).unwrap(),
        "{\n  \"name\": \"mine\",\n  \"version\": \"1.0.0\"\n}"
    );
    let again = ext(&s, &["new", path_s]);
    assert!(!again.status.success());
    assert!(stderr(&again).contains(&format!("Path already exists: {path_s}")));
    // Templates.
    let cmds = s.root().join("work").join("cmds");
    let out = ext(&s, &["new", cmds.to_str().unwrap(), "custom-commands"]);
    assert!(stdout(&out).starts_with(&format!(
        "Successfully created new extension from template \"custom-commands\" at {}.",
        cmds.display()
    )));
    assert!(cmds.join("commands/files/largest.toml").is_file());
    let bad = ext(&s, &["new", "/nonexistent/x", "no-such"]);
    assert!(!bad.status.success() && stderr(&bad).contains("\"mcp-server\""));
    for template in [
        "context",
        "exclude-tools",
        "hooks",
        "mcp-server",
        "policies",
        "skills",
    ] {
        let dir = s.root().join("t").join(template);
        assert!(ext(&s, &["new", dir.to_str().unwrap(), template])
            .status
            .success());
        let v = ext(&s, &["validate", dir.to_str().unwrap()]);
        assert!(v.status.success(), "{template}: {}", stderr(&v));
    }

    // Validate.
    let out = ext(&s, &["validate", path_s]);
    assert_eq!(
        stdout(&out),
        format!("Extension {path_s} has been successfully validated.\n")
    );
    let broken = s.root().join("work").join("broken");
    write(
        &broken.join("gemini-extension.json"),
        r#"{"name": "broken", "version": "one", "contextFileName": ["NOPE.md", "../up.md"]}"#,
    );
    let out = ext(&s, &["validate", broken.to_str().unwrap()]);
    assert!(!out.status.success());
    // gemini-cli 0.61's stderr, byte for byte (checked by running it on this folder).
    assert_eq!(
        stderr(&out),
        "Validation warnings:\n  - Warning: Version 'one' does not appear to be standard semver (e.g., 1.0.0).\nValidation failed with the following errors:\n  - Invalid context file path: \"../up.md\". Relative parent directory references (\"..\") are not allowed.\n  - The following context files referenced in gemini-extension.json are missing: NOPE.md\nExtension validation failed.\n"
    );

    // Link: read in place.
    write(&path.join("GEMINI.md"), "linked context v1");
    let out = ext(&s, &["link", path_s, "--consent"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "Extension \"mine\" linked successfully and enabled.\n"
    );
    let installed = extensions_dir(&s).join("mine");
    assert!(!installed.join("gemini-extension.json").exists());
    write(&path.join("GEMINI.md"), "linked context v2");
    let out = s.run(&[turn(vec![text("ok")])], &["-p", "go"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(s.requests()[0].to_string().contains("linked context v2"));

    // List: gemini-cli's lines.
    let out = ext(&s, &["list"]);
    let expected = format!(
        "\u{2713} mine (1.0.0)\n ID: {}\n name: {}\n Path: {path_s}\n Source: {path_s} (Type: link)\n Enabled (User): true\n Enabled (Workspace): true\n Context files:\n  {path_s}/GEMINI.md\n",
        sha(path_s),
        sha("mine")
    );
    assert_eq!(stdout(&out), expected);

    // Disable for this folder, enable again.
    let out = ext(&s, &["disable", "mine", "--scope", "workspace"]);
    assert_eq!(
        stdout(&out),
        "Extension \"mine\" successfully disabled for scope \"workspace\".\n"
    );
    let listed = stdout(&ext(&s, &["list"]));
    assert!(listed.starts_with("\u{2717} mine (1.0.0)\n"), "{listed}");
    assert!(listed.contains(" Enabled (User): true\n Enabled (Workspace): false\n"));
    let out = ext(&s, &["enable", "mine", "--scope", "workspace"]);
    assert_eq!(
        stdout(&out),
        "Extension \"mine\" successfully enabled for scope \"workspace\".\n"
    );
    assert!(stdout(&ext(&s, &["list"])).starts_with("\u{2713} mine"));
    // A user-scope disable covers the home folder (as gemini-cli's), and says so here.
    let out = ext(&s, &["disable", "mine"]);
    assert!(stdout(&out).starts_with(
        "Extension \"mine\" successfully disabled for scope \"User\".\nNote: this folder is not under"
    ));
    assert!(stdout(&ext(&s, &["list"]))
        .contains(" Enabled (User): false\n Enabled (Workspace): true\n"));
    let out = ext(&s, &["enable", "mine"]);
    assert_eq!(
        stdout(&out),
        "Extension \"mine\" successfully enabled in all scopes.\n"
    );
    let missing = ext(&s, &["enable", "nosuch"]);
    assert!(!missing.status.success());
    assert!(stderr(&missing).contains("Extension with name nosuch does not exist."));

    // Uninstall: the folder and its enablement go; the linked source stays.
    let out = ext(&s, &["uninstall", "mine"]);
    assert_eq!(
        stdout(&out),
        "Extension \"mine\" successfully uninstalled.\n"
    );
    assert!(!installed.exists() && path.join("gemini-extension.json").exists());
    assert_eq!(
        std::fs::read_to_string(extensions_dir(&s).join("extension-enablement.json")).unwrap(),
        "{}"
    );
    let out = ext(&s, &["uninstall", "mine"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("Failed to uninstall \"mine\": Extension not found."));
    assert_eq!(stdout(&ext(&s, &["list"])), "No extensions installed.\n");
}

#[test]
fn a_git_url_without_the_network_fails_naming_a_local_clone() {
    let s = Scratch::new();
    // git refuses https at once (no network is reached).
    let out = s
        .bare_command()
        .env("GIT_ALLOW_PROTOCOL", "file")
        .args([
            "extensions",
            "install",
            "https://example.invalid/ext.git",
            "--consent",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("Failed to clone https://example.invalid/ext.git (installing from a git URL needs the network)"), "{err}");
    assert!(
        err.contains("`git clone https://example.invalid/ext.git DIR`"),
        "{err}"
    );
    assert!(err.contains("`troupe extensions install DIR`"), "{err}");
    assert!(!extensions_dir(&s).join("ext").exists());
    // A local source that is not there: gemini-cli's words.
    let out = ext(&s, &["install", "/no/such/folder"]);
    assert!(stderr(&out).contains("Install source not found."));
}

#[test]
fn an_unanswered_consent_installs_nothing() {
    let s = Scratch::new();
    let src = demo_source(&s);
    let out = ext(&s, &["install", src.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("Installing extension \"demo\"."), "{err}");
    assert!(err.contains("  * fx (local): "), "{err}");
    assert!(!extensions_dir(&s).join("demo").exists());
}

#[test]
fn the_mcp_server_template_works_as_created_and_unsupported_commands_are_refused() {
    let s = Scratch::new();
    let dir = s.root().join("wc");
    let out = ext(&s, &["new", dir.to_str().unwrap(), "mcp-server"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = ext(&s, &["install", dir.to_str().unwrap(), "--consent"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let turns = [
        turn(vec![call(
            "mcp_wc_word_count",
            json!({"text": "one two three"}),
        )]),
        turn(vec![text("done")]),
    ];
    let out = s.run(&turns, &["-p", "go", "--yolo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = s.requests();
    assert!(declared(&requests[0]).contains(&"mcp_wc_word_count".to_string()));
    // Troupe wraps an MCP server's text as untrusted.
    assert_eq!(
        function_responses(&requests[1])[0]["response"],
        json!({"output": "<untrusted_context>\n3\n</untrusted_context>"})
    );
    // What Troupe does not offer is refused, not half done.
    for args in [
        &["update", "wc"][..],
        &["config", "wc"],
        &["list", "-o", "json"],
    ] {
        let out = ext(&s, args);
        assert!(!out.status.success(), "{args:?}: {}", stdout(&out));
    }
}

#[test]
fn the_repl_lists_the_extensions_with_slash_extensions() {
    let s = Scratch::new();
    two_extensions(&s);
    let t = crate::suite::repl::term::Term::start(&s, &[], &[], &["-e", "beta"]);
    t.line("/extensions");
    t.wait_for("2 extension(s)");
    t.wait_for("beta (1.0.0) enabled");
    t.wait_for("alpha (1.0.0) disabled here");
    t.line("/help");
    t.wait_for("/extensions [list]");
    t.line("/quit");
    t.wait_for("[troupe exited 0]");
}

#[test]
fn an_extensions_env_settings_reach_its_server_and_its_arguments() {
    let s = Scratch::new();
    let dir = extensions_dir(&s).join("keyed");
    let manifest = json!({
        "name": "keyed",
        "version": "1.0.0",
        "settings": [{"name": "Key", "description": "The key.", "envVar": "KEYED_TOKEN"}],
        "mcpServers": {"fx": {
            "command": fixture(),
            "args": ["--prefix", "${KEYED_PREFIX}", "--env-file", "${extensionPath}${/}env.txt"]
        }}
    });
    write(&dir.join("gemini-extension.json"), &manifest.to_string());
    // What `gemini extensions config` writes for the user scope.
    write(&dir.join(".env"), "KEYED_TOKEN=tok-4242\nKEYED_PREFIX=k_\n");
    // A secret-named variable of Troupe's own environment stays out of the server's, as
    // for every configured server (the children's environment policy).
    let out = s
        .command()
        .arg("--fake-responses")
        .arg(s.script(&[turn(vec![text("ok")])]))
        .args(["-p", "go"])
        .env("EXT_CHECK_SECRET", "leak-1717")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let names = declared(&s.requests()[0]);
    assert!(names.contains(&"mcp_fx_k_echo".to_string()), "{names:?}");
    let env = std::fs::read_to_string(dir.join("env.txt")).unwrap();
    assert!(env.lines().any(|l| l == "KEYED_TOKEN=tok-4242"), "{env}");
    assert!(env.lines().any(|l| l == "TROUPE_CLI=1"), "{env}");
    assert!(!env.contains("leak-1717"), "{env}");
}
