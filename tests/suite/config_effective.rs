//! `troupe config` says what a run would talk to: the provider in effect and why, the
//! model, the base URL, where the API key comes from (never the key) and the MCP
//! servers; `--json` gives the same as one object; a mistyped key gets the nearest one.

use serde_json::Value;

use super::mcp::{configure, server};
use crate::common::*;

/// `troupe config ARGS` with the extra environment `vars`.
fn config(s: &Scratch, args: &[&str], vars: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = s.bare_command();
    cmd.arg("config").args(args);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.output().expect("run troupe config")
}

#[test]
fn config_names_the_provider_model_url_and_key_source_in_effect() {
    let s = Scratch::new();
    let vars = [
        ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
        ("OPENAI_API_KEY", "sk-never-shown"),
    ];
    let out = config(&s, &[], &vars);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("#   provider: openai  (auto: an OpenAI-compatible URL or key is set)\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "#   base URL: http://127.0.0.1:9/v1  (environment variable OPENAI_BASE_URL)\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("#   API key: set, from environment variable OPENAI_API_KEY\n"),
        "{text}"
    );
    assert!(
        text.contains("#   model: (asked from the server)  (model.name is empty: the first model http://127.0.0.1:9/v1/models lists, asked at start)\n"),
        "{text}"
    );
    assert!(text.contains("#   MCP servers: 0\n"), "{text}");
    assert!(!text.contains("sk-never-shown"), "{text}");

    // A model chosen by flag, and Gemini chosen by its key.
    let out = config(
        &s,
        &["-m", "gemini-2.5-pro"],
        &[("GEMINI_API_KEY", "k-hidden")],
    );
    let text = stdout(&out);
    assert!(
        text.contains("#   provider: gemini  (auto: a Gemini API key is set)\n"),
        "{text}"
    );
    assert!(
        text.contains("#   model: gemini-2.5-pro  (flag --model)\n"),
        "{text}"
    );
    assert!(
        text.contains("#   API key: set, from environment variable GEMINI_API_KEY\n"),
        "{text}"
    );
    assert!(!text.contains("k-hidden"), "{text}");

    // Nothing configured: says so, with what to set.
    let text = stdout(&config(&s, &[], &[]));
    assert!(
        text.contains("#   provider: none: no model is configured: set GEMINI_API_KEY"),
        "{text}"
    );
}

#[test]
fn config_lists_the_mcp_servers() {
    let s = Scratch::new();
    configure(
        &s,
        &format!(
            "{}{}",
            server("ev", &["--prefix", "x_"], "trust = true"),
            "[mcp_servers.off]\nurl = \"http://127.0.0.1:9/mcp\"\ntype = \"http\"\nenabled = false\n"
        ),
    );
    let out = config(&s, &[], &[("GEMINI_API_KEY", "k")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("#   MCP servers: 2\n"), "{text}");
    assert!(
        text.contains(&format!(
            "#     ev (user, stdio: {} --prefix x_; trusted)\n",
            super::mcp::fixture()
        )),
        "{text}"
    );
    assert!(
        text.contains("#     off (user, http: http://127.0.0.1:9/mcp; disabled)\n"),
        "{text}"
    );
}

#[test]
fn config_json_holds_settings_and_what_is_in_effect() {
    let s = Scratch::new();
    configure(&s, &server("ev", &[], ""));
    let vars = [
        ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
        ("OPENAI_API_KEY", "sk-never-shown"),
    ];
    let out = config(&s, &["--json", "-m", "qwen3"], &vars);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stdout(&out).contains("sk-never-shown"));
    let all: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    let effective = &all["effective"];
    assert_eq!(effective["provider"], "openai", "{all:#}");
    assert_eq!(effective["model"], "qwen3", "{all:#}");
    assert_eq!(effective["model_source"], "flag --model", "{all:#}");
    assert_eq!(effective["base_url"], "http://127.0.0.1:9/v1", "{all:#}");
    assert_eq!(
        effective["api_key_source"], "environment variable OPENAI_API_KEY",
        "{all:#}"
    );
    assert_eq!(effective["mcp_servers"][0]["name"], "ev", "{all:#}");
    assert_eq!(effective["mcp_servers"][0]["transport"], "stdio", "{all:#}");
    assert_eq!(all["settings"]["model.name"]["value"], "qwen3", "{all:#}");
    assert_eq!(
        all["settings"]["model.name"]["origin"], "flag --model",
        "{all:#}"
    );
    assert_eq!(
        all["settings"]["model.openai.api_key"]["value"], "set",
        "{all:#}"
    );
    assert!(all["sandbox"].is_string(), "{all:#}");
}

#[test]
fn an_unknown_setting_names_the_nearest_one() {
    let s = Scratch::new();
    let out = s.run(
        &[turn(vec![text("x")])],
        &["-p", "hi", "-c", "model.maxturns=3"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("unknown setting `model.maxturns` in flag -c model.maxturns=…; did you mean `model.max_turns`?"),
        "{}",
        stderr(&out)
    );
    // Only the last part right: the one key that ends so.
    let out = config(&s, &["-c", "max_turns=3"], &[]);
    assert!(
        stderr(&out).contains("did you mean `model.max_turns`?"),
        "{}",
        stderr(&out)
    );
    // Nothing near: no guess.
    let out = config(&s, &["-c", "zzzz.qqqq=1"], &[]);
    assert!(!stderr(&out).contains("did you mean"), "{}", stderr(&out));
}
