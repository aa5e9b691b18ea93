//! Which model a session talks to: a script (`--fake-responses`), else the configured
//! provider (`model.provider`: `auto` picks Gemini when a Gemini key is known, else an
//! OpenAI-compatible server when its URL or key is known). `--record-responses` wraps
//! the choice in a recorder; network providers get retried utility calls.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::gemini::{GeminiClient, GeminiConfig};
use super::http::Timeouts;
use super::openai::{OpenAiClient, OpenAiConfig};
use super::record::RecordingModel;
use super::retry::{RetryPolicy, RetryingModel};
use super::scripted::ScriptedModel;
use super::{gemini, openai, ModelClient, ModelError};
use crate::settings::Settings;

/// Where the session's model comes from, besides the settings.
pub struct ModelChoice<'a> {
    /// `--fake-responses FILE`.
    pub fake_responses: Option<&'a Path>,
    /// `--record-responses FILE`.
    pub record_responses: Option<&'a Path>,
    /// Reads an environment variable (empty counts as unset).
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

/// The process environment, for [`ModelChoice::env`].
pub fn process_env(name: &str) -> Option<String> {
    crate::settings::secrets::env_var(name)
}

fn setting_or_env(
    setting: &str,
    env: &dyn Fn(&str) -> Option<String>,
    var: &str,
) -> Option<String> {
    Some(setting.to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| env(var))
}

/// A base URL must be an absolute http(s) URL with a host: anything else is a
/// configuration error, reported at once with the setting or variable to fix (it would
/// fail the same way on every retry).
pub fn check_base_url(url: &str, source: &str, example: &str) -> Result<(), ModelError> {
    let fix = |why: String| {
        ModelError::Config(format!(
            "{source} is `{url}`: {why}; set it to a URL such as {example}"
        ))
    };
    let parsed = reqwest::Url::parse(url.trim()).map_err(|e| fix(format!("not a URL ({e})")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(fix(format!(
            "`{}:` is not http: or https: (is the scheme missing?)",
            parsed.scheme()
        )));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(fix("it has no host".into()));
    }
    Ok(())
}

/// Builds the model client of a session.
pub fn select(
    settings: &Settings,
    choice: &ModelChoice,
) -> Result<Arc<dyn ModelClient>, ModelError> {
    let model: Arc<dyn ModelClient> = match choice.fake_responses {
        Some(path) => Arc::new(ScriptedModel::from_file(path)?),
        None => network_model(settings, choice.env)?,
    };
    // Beneath the retries: a back-off does not hold a slot.
    let model = super::limiter::limited(model, settings.model.max_concurrent_requests);
    let model: Arc<dyn ModelClient> = match choice.record_responses {
        Some(path) => Arc::new(RecordingModel::create(model, path)?),
        None => model,
    };
    if choice.fake_responses.is_some() {
        return Ok(model);
    }
    Ok(Arc::new(RetryingModel::new(
        model,
        RetryPolicy::from(&settings.model.retry),
    )))
}

/// The provider a session would talk to, as the settings and the environment choose
/// it, before anything is built or asked (`troupe config` shows it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// `gemini` or `openai`.
    pub provider: &'static str,
    /// Why this provider: `model.provider = "..."`, or what `auto` found.
    pub provider_source: String,
    pub base_url: String,
    /// The setting or variable that gave the URL, or `default`.
    pub base_url_source: &'static str,
    /// The API key (never shown: see `key_source`).
    pub api_key: Option<String>,
    /// The setting or variable the key came from; `None`: no key.
    pub key_source: Option<&'static str>,
}

/// A setting, else its variable, with which of the two gave it.
fn setting_or_env_with(
    setting: &str,
    setting_name: &'static str,
    env: &dyn Fn(&str) -> Option<String>,
    var: &'static str,
) -> Option<(String, &'static str)> {
    match setting_or_env(setting, env, var) {
        Some(v) if setting.is_empty() => Some((v, var)),
        Some(v) => Some((v, setting_name)),
        None => None,
    }
}

/// Which provider, URL and key the settings and `env` choose (no network).
pub fn resolve(
    settings: &Settings,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Resolved, ModelError> {
    let m = &settings.model;
    let gemini_key = setting_or_env_with(
        &m.gemini.api_key,
        "model.gemini.api_key",
        env,
        "GEMINI_API_KEY",
    );
    let openai_url = setting_or_env_with(
        &m.openai.base_url,
        "model.openai.base_url",
        env,
        "OPENAI_BASE_URL",
    );
    let openai_key = setting_or_env_with(
        &m.openai.api_key,
        "model.openai.api_key",
        env,
        "OPENAI_API_KEY",
    );
    let (provider, provider_source) = match m.provider.as_str() {
        "auto" if gemini_key.is_some() => ("gemini", "auto: a Gemini API key is set".to_string()),
        "auto" if openai_url.is_some() || openai_key.is_some() => (
            "openai",
            "auto: an OpenAI-compatible URL or key is set".to_string(),
        ),
        "auto" => {
            return Err(ModelError::Config(
                "no model is configured: set GEMINI_API_KEY (Gemini), or OPENAI_BASE_URL (an OpenAI-compatible server such as Ollama, vLLM or llama.cpp), or pass --fake-responses FILE to replay a scripted model".into(),
            ))
        }
        "gemini" => ("gemini", "model.provider = \"gemini\"".to_string()),
        "openai" => ("openai", "model.provider = \"openai\"".to_string()),
        "scripted" => {
            return Err(ModelError::Config(
                "model.provider is \"scripted\" but no --fake-responses FILE was given".into(),
            ))
        }
        other => {
            return Err(ModelError::Config(format!(
                "model.provider `{other}` is not one of auto, gemini, openai, scripted"
            )))
        }
    };
    let (url, default_url, example, key) = match provider {
        "gemini" => {
            if gemini_key.is_none() {
                return Err(ModelError::Config(
                    "model.provider is \"gemini\" but no API key is set: export GEMINI_API_KEY or set model.gemini.api_key".into(),
                ));
            }
            let url = setting_or_env_with(
                &m.gemini.base_url,
                "model.gemini.base_url",
                env,
                "GOOGLE_GEMINI_BASE_URL",
            );
            let example = "https://generativelanguage.googleapis.com";
            (url, gemini::DEFAULT_BASE_URL, example, gemini_key)
        }
        _ => {
            let example = "http://127.0.0.1:8080/v1";
            (openai_url, openai::DEFAULT_BASE_URL, example, openai_key)
        }
    };
    let (base_url, base_url_source) = url.unwrap_or_else(|| (default_url.to_string(), "default"));
    check_base_url(&base_url, base_url_source, example)?;
    Ok(Resolved {
        provider,
        provider_source,
        base_url,
        base_url_source,
        key_source: key.as_ref().map(|(_, source)| *source),
        api_key: key.map(|(k, _)| k),
    })
}

fn network_model(
    settings: &Settings,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn ModelClient>, ModelError> {
    let m = &settings.model;
    let resolved = resolve(settings, env)?;
    let timeouts = Timeouts {
        connect: Duration::from_secs(m.network.connect_timeout_secs.max(1)),
        first_byte: Duration::from_secs(m.network.first_byte_timeout_secs.max(1)),
        idle: Duration::from_secs(m.network.idle_timeout_secs.max(1)),
    };
    let api_key = resolved.api_key.unwrap_or_default();
    match resolved.provider {
        "gemini" => Ok(Arc::new(GeminiClient::new(GeminiConfig {
            base_url: resolved.base_url,
            api_key,
            timeouts,
        })?)),
        _ => Ok(Arc::new(OpenAiClient::new(OpenAiConfig {
            base_url: resolved.base_url,
            api_key,
            timeouts,
        })?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(overrides: &[&str]) -> Settings {
        let none = Path::new("/nonexistent");
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        crate::settings::load_with(none, none, &[], &overrides)
            .unwrap()
            .settings
    }

    fn pick(settings: &Settings, vars: &[(&str, &str)]) -> Result<String, String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let env = move |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        let choice = ModelChoice {
            fake_responses: None,
            record_responses: None,
            env: &env,
        };
        select(settings, &choice)
            .map(|m| m.provider().to_string())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn auto_follows_the_environment() {
        let auto = settings(&[]);
        assert_eq!(pick(&auto, &[("GEMINI_API_KEY", "k")]).unwrap(), "gemini");
        assert_eq!(
            pick(&auto, &[("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")]).unwrap(),
            "openai-compatible"
        );
        let err = pick(&auto, &[]).unwrap_err();
        assert!(err.contains("GEMINI_API_KEY"), "{err}");
        let gemini = settings(&["model.provider=gemini"]);
        let err = pick(&gemini, &[("OPENAI_BASE_URL", "x")]).unwrap_err();
        assert!(err.contains("no API key"), "{err}");
        let keyed = settings(&["model.provider=gemini", "model.gemini.api_key=k"]);
        assert_eq!(pick(&keyed, &[]).unwrap(), "gemini");
    }

    #[test]
    fn bad_base_urls_name_what_to_fix() {
        let auto = settings(&[]);
        let err = pick(&auto, &[("OPENAI_BASE_URL", "localhost:8080/v1")]).unwrap_err();
        assert!(
            err.contains("OPENAI_BASE_URL is `localhost:8080/v1`"),
            "{err}"
        );
        assert!(err.contains("scheme"), "{err}");
        let err = pick(&auto, &[("OPENAI_BASE_URL", "ftp://host/v1")]).unwrap_err();
        assert!(err.contains("`ftp:` is not http"), "{err}");
        let set = settings(&["model.openai.base_url=127.0.0.1:8080"]);
        let err = pick(&set, &[]).unwrap_err();
        assert!(err.contains("model.openai.base_url"), "{err}");
        let err = pick(
            &auto,
            &[("GEMINI_API_KEY", "k"), ("GOOGLE_GEMINI_BASE_URL", "nope")],
        )
        .unwrap_err();
        assert!(err.contains("GOOGLE_GEMINI_BASE_URL is `nope`"), "{err}");
    }
}
