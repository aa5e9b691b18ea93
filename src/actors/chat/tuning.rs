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
    /// The threshold: the share of the room left by the fixed prefix that the history
    /// may fill before it is compressed.
    pub compress_threshold: f64,
    /// The model's context window in tokens.
    pub context_window: u64,
    /// Sent as the answer's token limit.
    pub max_output_tokens: Option<u32>,
    /// Stop turns that loop (`model.loop_detection`).
    pub loop_detection: bool,
    /// The newest fraction of the history kept verbatim by a compression.
    pub preserve_fraction: f64,
    /// The first answer to each prompt must call a tool.
    pub first_answer_calls_a_tool: bool,
    /// Read the listed files the prompt names before the first answer.
    pub look_up_prompt_names: bool,
    /// After a call succeeds again unchanged, the next answer may not call a tool.
    pub answer_after_repeat: bool,
    /// A turn that runs longer ends as failed (None: no limit).
    pub turn_time_limit: Option<Duration>,
    /// Stretch the turn time limit to the server's measured speed.
    pub fit_turn_time_limit: bool,
    /// Put back the files a failed turn edited.
    pub undo_failed_turn: bool,
    /// Offer the tools that edit files only when the prompt asks for a change.
    pub edit_tools_when_asked: bool,
    /// A change or test run asked for and not made is sent back once, then said.
    pub check_outcome: bool,
    /// Refuse edits of the test files the prompt names, unless it asks to change tests.
    pub protect_named_tests: bool,
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
            compress_threshold: compression.threshold,
            context_window: limit,
            max_output_tokens: (settings.model.max_output_tokens > 0)
                .then_some(settings.model.max_output_tokens),
            loop_detection: settings.model.loop_detection,
            preserve_fraction: compression.preserve_fraction,
            first_answer_calls_a_tool: settings.model.first_answer_calls_a_tool,
            look_up_prompt_names: settings.model.look_up_prompt_names,
            answer_after_repeat: settings.model.answer_after_repeat,
            turn_time_limit: (settings.model.turn_time_limit_secs > 0)
                .then(|| Duration::from_secs(settings.model.turn_time_limit_secs)),
            fit_turn_time_limit: settings.model.fit_turn_time_limit,
            undo_failed_turn: settings.model.undo_failed_turn,
            edit_tools_when_asked: settings.model.edit_tools_when_asked,
            check_outcome: settings.model.check_outcome,
            protect_named_tests: settings.model.protect_named_tests,
        }
    }
}

impl Default for ChatTuning {
    fn default() -> Self {
        Self {
            retry: RetryPolicy::default(),
            temperature: None,
            compress_threshold: 0.5,
            context_window: 1_048_576,
            max_output_tokens: None,
            loop_detection: true,
            preserve_fraction: 0.3,
            first_answer_calls_a_tool: false,
            look_up_prompt_names: false,
            answer_after_repeat: false,
            turn_time_limit: None,
            fit_turn_time_limit: false,
            undo_failed_turn: false,
            edit_tools_when_asked: false,
            check_outcome: false,
            protect_named_tests: false,
        }
    }
}
