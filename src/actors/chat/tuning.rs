//! The Chat actor's model settings: retry policy, sampling and compression thresholds.

use std::time::Duration;

use crate::providers::retry::RetryPolicy;
use crate::settings::Settings;

/// How the Chat actor talks to its model.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatTuning {
    pub retry: RetryPolicy,
    /// The main chat's temperature; `None` leaves it to the provider.
    pub temperature: Option<f64>,
    /// Compress when the last prompt reaches this many tokens.
    pub compress_at_tokens: u64,
    /// The newest fraction of the history kept verbatim by a compression.
    pub preserve_fraction: f64,
}

impl ChatTuning {
    /// From the settings, for `provider` serving `model_name`. A scripted model is
    /// retried without waiting: its answers do not depend on time.
    pub fn new(settings: &Settings, provider: &str, model_name: &str) -> Self {
        let mut retry = RetryPolicy::from(&settings.model.retry);
        if provider == "scripted" {
            retry.initial_delay = Duration::ZERO;
            retry.max_delay = Duration::ZERO;
        }
        let compression = &settings.model.compression;
        let limit = compression.token_limit(model_name);
        Self {
            retry,
            temperature: (settings.model.temperature >= 0.0).then_some(settings.model.temperature),
            compress_at_tokens: (compression.threshold * limit as f64).ceil() as u64,
            preserve_fraction: compression.preserve_fraction,
        }
    }
}

impl Default for ChatTuning {
    fn default() -> Self {
        Self {
            retry: RetryPolicy::default(),
            temperature: None,
            compress_at_tokens: 524_288,
            preserve_fraction: 0.3,
        }
    }
}
