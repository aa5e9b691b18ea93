//! `troupe config`: the settings a run in this folder would use, with the run flags that
//! change them (`-m`, `--approval-mode`, `-y`, `-s`, `--checkpointing`, `--profile`)
//! accepted as a run takes them, each value named by where it came from; then what is
//! in effect (`effective`): the provider, model, base URL, where the API key comes
//! from (never the key), the MCP servers and the policy rules (gemini-cli's policy
//! files and the flags' rules, in the order they are tried). `--json` prints all of it
//! as one object.

use std::path::Path;

use clap::Args;
use serde_json::{json, Value};

use crate::providers::select::{self, Resolved};
use crate::settings::mcp::McpServerConfig;
use crate::settings::{self, LoadedSettings, SettingsError};

/// `troupe config` options.
#[derive(Debug, Args, Default)]
pub struct ConfigArgs {
    /// Override a setting for this command, as `troupe -c` does (repeatable), e.g.
    /// `-c model.name=gemini-2.5-pro`; the value is TOML (a bare word is a string).
    #[arg(short = 'c', long = "config", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// As a run's --model.
    #[arg(short = 'm', long = "model")]
    pub model: Option<String>,
    /// As a run's --approval-mode.
    #[arg(long = "approval-mode", value_name = "MODE")]
    pub approval_mode: Option<String>,
    /// As a run's --yolo.
    #[arg(short = 'y', long = "yolo", conflicts_with = "approval_mode")]
    pub yolo: bool,
    /// As a run's --sandbox.
    #[arg(short = 's', long = "sandbox", value_name = "MODE", num_args = 0..=1, default_missing_value = "workspace-write")]
    pub sandbox: Option<String>,
    /// As a run's --checkpointing.
    #[arg(long = "checkpointing")]
    pub checkpointing: bool,
    /// As a run's --profile.
    #[arg(long = "profile", value_name = "NAME")]
    pub profile: Option<String>,
    #[command(flatten)]
    pub policy: crate::frontends::options::PolicyFlags,

    /// Print one JSON object: `settings` (each key's value and origin), `effective`
    /// (provider, model, base URL, key source, MCP servers) and `sandbox`.
    #[arg(long = "json")]
    pub json: bool,
}

/// One override and the words its origin is shown with.
struct Labeled {
    setting: String,
    label: String,
}

/// The overrides of `args` in the order a run applies them (profile, `-c`, then the
/// flags), each with its label.
fn overrides(args: &ConfigArgs) -> Result<Vec<Labeled>, SettingsError> {
    let flag = |label: &str, setting: String| Labeled {
        setting,
        label: format!("flag {label}"),
    };
    let mut out = Vec::new();
    if let Some(name) = &args.profile {
        let preset = settings::profiles::profile(name).map_err(|message| SettingsError::Parse {
            origin: "--profile".into(),
            message,
        })?;
        out.extend(
            preset
                .iter()
                .map(|s| flag(&format!("--profile {name}"), s.to_string())),
        );
    }
    // `-c`: the loader names these itself.
    out.extend(args.overrides.iter().map(|o| Labeled {
        setting: o.clone(),
        label: String::new(),
    }));
    if let Some(mode) = &args.approval_mode {
        out.push(flag("--approval-mode", format!("approval.mode={mode}")));
    }
    if args.yolo {
        out.push(flag("--yolo", "approval.mode=yolo".into()));
    }
    if let Some(mode) = &args.sandbox {
        out.push(flag("--sandbox", format!("sandbox.mode=\"{mode}\"")));
    }
    if args.checkpointing {
        out.push(flag("--checkpointing", "general.checkpointing=true".into()));
    }
    if let Some(model) = &args.model {
        out.push(flag(
            "--model",
            format!("model.name=\"{}\"", model.replace('"', "")),
        ));
    }
    for (name, key, values) in args.policy.settings() {
        if !values.is_empty() {
            let list = toml::Value::from(values.to_vec());
            out.push(flag(name, format!("{key}={list}")));
        }
    }
    Ok(out)
}

/// The settings of a run in `cwd` with `args`, the flags' values named by their flag.
pub fn load(cwd: &Path, args: &ConfigArgs) -> Result<LoadedSettings, SettingsError> {
    let labeled = overrides(args)?;
    let plain: Vec<String> = labeled.iter().map(|l| l.setting.clone()).collect();
    let mut loaded = settings::load(cwd, &plain)?;
    for l in labeled.iter().filter(|l| !l.label.is_empty()) {
        let generated = format!("flag -c {}", l.setting);
        let key = l.setting.split_once('=').map_or("", |(k, _)| k.trim());
        if let Some(origin) = loaded.origins.get_mut(key) {
            if *origin == generated {
                *origin = l.label.clone();
            }
        }
    }
    Ok(loaded)
}

/// What a run with `loaded` would talk to, read from the settings and `env` (nothing
/// is started or asked): the JSON of `effective`.
pub fn effective(loaded: &LoadedSettings, env: &dyn Fn(&str) -> Option<String>) -> Value {
    let s = &loaded.settings;
    let origin = |key: &str| {
        loaded
            .origins
            .get(key)
            .cloned()
            .unwrap_or_else(|| "default".into())
    };
    let servers: Vec<Value> = s
        .mcp_servers
        .iter()
        .chain(&s.untrusted_mcp_servers)
        .map(server_json)
        .collect();
    let mut out = match select::resolve(s, env) {
        Ok(resolved) => provider_json(&resolved, s, &origin),
        Err(e) => json!({"provider": Value::Null, "error": e.to_string(),
            "model": name_or_null(&s.model.name), "model_source": origin("model.name")}),
    };
    out["mcp_servers"] = Value::Array(servers);
    out["policy"] = super::config_policy::policy_json(&s.loaded_policy);
    out["extensions"] = super::extensions_show::config_json(&s.loaded_extensions);
    out
}

fn name_or_null(name: &str) -> Value {
    match name.trim() {
        "" => Value::Null,
        n => Value::String(n.to_string()),
    }
}

/// Where a URL or key came from, in words: a setting with its origin, a variable.
fn source_words(source: &str, origin: &dyn Fn(&str) -> String) -> String {
    match source {
        "default" => "default".into(),
        s if s.contains('.') => format!("{s} ({})", origin(s)),
        var => format!("environment variable {var}"),
    }
}

fn provider_json(r: &Resolved, s: &settings::Settings, origin: &dyn Fn(&str) -> String) -> Value {
    let (model, model_source) = match (s.model.name.trim(), r.provider) {
        ("", "gemini") => (
            json!(crate::providers::DEFAULT_GEMINI_MODEL),
            "default".to_string(),
        ),
        ("", _) => (
            Value::Null,
            format!(
                "model.name is empty: the first model {}/models lists, asked at start",
                r.base_url.trim_end_matches('/')
            ),
        ),
        (name, _) => (json!(name), origin("model.name")),
    };
    json!({
        "provider": r.provider,
        "provider_source": r.provider_source,
        "model": model,
        "model_source": model_source,
        "base_url": r.base_url,
        "base_url_source": source_words(r.base_url_source, origin),
        "api_key_source": r.key_source.map(|k| source_words(k, origin)),
    })
}

fn server_json(server: &McpServerConfig) -> Value {
    let e = &server.entry;
    let target = match (&e.command, &e.url) {
        (_, Some(url)) => url.clone(),
        (Some(cmd), None) => std::iter::once(cmd.as_str())
            .chain(e.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        (None, None) => String::new(),
    };
    json!({
        "name": server.name,
        "scope": server.scope.as_str(),
        "transport": server.transport(),
        "target": target,
        "enabled": server.enabled(),
        "trust": e.trust,
        "blocked": server.blocked,
    })
}

/// The `# in effect` lines that end `troupe config`'s listing.
pub fn effective_text(effective: &Value) -> String {
    let str_of = |k: &str| effective[k].as_str().unwrap_or("").to_string();
    let mut out = String::from("# in effect:\n");
    match effective["provider"].as_str() {
        Some(provider) => {
            out.push_str(&format!(
                "#   provider: {provider}  ({})\n",
                str_of("provider_source")
            ));
            let model = effective["model"]
                .as_str()
                .unwrap_or("(asked from the server)");
            out.push_str(&format!(
                "#   model: {model}  ({})\n",
                str_of("model_source")
            ));
            out.push_str(&format!(
                "#   base URL: {}  ({})\n",
                str_of("base_url"),
                str_of("base_url_source")
            ));
            let key = match effective["api_key_source"].as_str() {
                Some(source) => format!("set, from {source}"),
                None => "none".into(),
            };
            out.push_str(&format!("#   API key: {key}\n"));
        }
        None => out.push_str(&format!("#   provider: none: {}\n", str_of("error"))),
    }
    let servers = effective["mcp_servers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    out.push_str(&format!("#   MCP servers: {}\n", servers.len()));
    for server in &servers {
        let mut notes = Vec::new();
        if server["enabled"] == false {
            notes.push("disabled".to_string());
        }
        if server["trust"] == true {
            notes.push("trusted".to_string());
        }
        if let Some(why) = server["blocked"].as_str() {
            notes.push(format!("not started: {why}"));
        }
        let notes = match notes.is_empty() {
            true => String::new(),
            false => format!("; {}", notes.join("; ")),
        };
        out.push_str(&format!(
            "#     {} ({}, {}: {}{notes})\n",
            server["name"].as_str().unwrap_or(""),
            server["scope"].as_str().unwrap_or(""),
            server["transport"].as_str().unwrap_or(""),
            server["target"].as_str().unwrap_or(""),
        ));
    }
    out.push_str(&super::config_policy::policy_text(&effective["policy"]));
    out.push_str(&super::extensions_show::config_text(
        &effective["extensions"],
    ));
    out
}

/// `troupe config`'s whole output for `loaded` (text, or one JSON object), the
/// provider variables read from `env`; `sandbox` is the sandbox's one-line summary.
pub fn render(
    loaded: &LoadedSettings,
    json_output: bool,
    sandbox: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> String {
    let effective = effective(loaded, env);
    if json_output {
        let settings: serde_json::Map<String, Value> = loaded
            .entries_with(env)
            .into_iter()
            .map(|e| {
                let value = e
                    .value
                    .and_then(|v| serde_json::to_value(v).ok())
                    .unwrap_or(Value::Null);
                (e.key, json!({"value": value, "origin": e.origin}))
            })
            .collect();
        let all = json!({"settings": settings, "effective": effective, "sandbox": sandbox});
        return serde_json::to_string_pretty(&all).unwrap_or_default() + "\n";
    }
    format!(
        "{}{}# sandbox: {sandbox}\n",
        loaded.describe_with(env),
        effective_text(&effective)
    )
}
