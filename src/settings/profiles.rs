//! Settings presets chosen with `--profile NAME`, applied before the `-c` overrides
//! (which therefore win), and the one chosen for a run by its server's context window
//! ([`for_server_window`]).

use super::LoadedSettings;

/// The `small` profile: for a small local model (1–8 B parameters, a context window of
/// a few thousand tokens) behind an OpenAI-compatible server.
pub const SMALL: &[&str] = &[
    // The tools a coding task needs; their declarations are a third of the full set.
    "tools.core=list_directory,read_file,glob,grep_search,replace,write_file,run_shell_command",
    // Their descriptions cut to a sentence, and a short prompt generated from them.
    "tools.compact_declarations=true",
    "model.prompt_style=short",
    // The real paths in the first prompt: a small model guesses `src/…` otherwise.
    "model.workspace_listing=60",
    "model.temperature=0",
    // At 9 tokens/s (a 1.5B model on 2 CPU cores) 512 tokens take about a minute.
    "model.max_output_tokens=512",
    // Repair failed edits by unescaping only: a model call costs a slow model dearly.
    "edit.use_model=false",
    // Refuse edits that would leave a parsing file unparseable (on by default too).
    "edit.check_syntax=true",
    // A model not listed in token_limits is assumed to have a small window.
    "model.compression.default_token_limit=8192",
    "model.max_turns=30",
    // Work from the real text of the files the prompt names, not a guess of it.
    "model.look_up_prompt_names=true",
    // A repeated call that succeeded is answered with what the model already has.
    "model.answer_after_repeat=true",
    // Every run ends, with its outcome said, within three minutes.
    "model.turn_time_limit_secs=170",
    // ... stretched to the measured speed of the server: a busy machine's answers are
    // not thrown away.
    "model.fit_turn_time_limit=true",
    // A run that fails leaves the files as it found them.
    "model.undo_failed_turn=true",
    // A prompt that asks for no change gets no tool that edits files.
    "model.edit_tools_when_asked=true",
    // A change asked for and not made (or tests asked for and not run) is said, not
    // reported as success; the model is sent back once first.
    "model.check_outcome=true",
    // The tests a prompt names are what the change is measured by, not its object.
    "model.protect_named_tests=true",
    // Tests run the way the project says.
    "model.find_test_command=true",
    // The first answer calls a tool, unless the prompt's lookups already ran: a small
    // model asked to run the tests otherwise said how one would run them.
    "model.first_answer_calls_a_tool=true",
    // A rename that would break callers is refused.
    "edit.keep_used_definitions=true",
];

/// A server whose context window is at most this many tokens gets the `small`
/// profile when none was chosen: the full tool set and system prompt alone take about
/// 4,800 tokens, more than half of such a window.
pub const SMALL_WINDOW_TOKENS: u64 = 16_384;

/// The overrides of profile `name`, or an error listing the profiles. `default` is
/// the empty profile (it keeps a small server from choosing `small`).
pub fn profile(name: &str) -> Result<&'static [&'static str], String> {
    match name {
        "small" => Ok(SMALL),
        "default" => Ok(&[]),
        other => Err(format!(
            "--profile: `{other}` is not a profile (known: small, default)"
        )),
    }
}

/// How the settings a profile sets are named in [`LoadedSettings::origins`].
pub fn origin_label(name: &str) -> String {
    format!("flag --profile {name}")
}

/// How the settings the server's context window chose are named.
pub const SERVER_WINDOW_ORIGIN: &str = "the server's context window";

/// What the server's context window changes in a run's settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WindowChoice {
    /// Settings (`key=value`) applied after a profile and before the user's `-c`.
    pub overrides: Vec<String>,
    /// What to tell the user once: the small profile was chosen.
    pub notice: Option<String>,
}

/// What a server's context window of `tokens` changes: it becomes the context window
/// of `model` unless the settings name one (`token_limits` matching the model, or
/// `default_token_limit`, set anywhere but a profile); at most
/// [`SMALL_WINDOW_TOKENS`] it also brings the `small` profile unless `--profile` was
/// given, each of its settings only where nothing else set that key.
pub fn for_server_window(
    loaded: &LoadedSettings,
    profile_given: bool,
    model: &str,
    tokens: u64,
) -> WindowChoice {
    let by_user = |key: &str| {
        loaded
            .origins
            .get(key)
            .is_some_and(|o| o != "default" && !o.starts_with("flag --profile"))
    };
    let mut unmatched = loaded.settings.model.compression.clone();
    unmatched.default_token_limit = 0;
    let listed = unmatched.token_limit(model) != 0;
    let window_set = by_user("model.compression.default_token_limit")
        || (listed && by_user("model.compression.token_limits"));
    let mut choice = WindowChoice::default();
    if !profile_given && tokens <= SMALL_WINDOW_TOKENS {
        choice.overrides.extend(
            SMALL
                .iter()
                .filter(|entry| {
                    let key = entry.split_once('=').map_or("", |(k, _)| k);
                    loaded.origins.get(key).is_some_and(|o| o == "default")
                })
                .map(|entry| entry.to_string()),
        );
        choice.notice = Some(format!(
            "the server's context window is {tokens} tokens; using the small profile (--profile default keeps the full one; -c sets any setting)"
        ));
    }
    if !window_set && !listed {
        choice
            .overrides
            .push(format!("model.compression.default_token_limit={tokens}"));
    }
    choice
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn loaded(overrides: &[&str]) -> LoadedSettings {
        let none = Path::new("/nonexistent");
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        crate::settings::load_with(none, none, &[], &overrides).unwrap()
    }

    #[test]
    fn a_small_window_brings_the_small_profile_where_nothing_else_set_a_key() {
        let choice = for_server_window(&loaded(&["model.temperature=0.5"]), false, "m", 8192);
        assert!(choice.notice.is_some());
        assert!(choice.overrides.contains(&SMALL[0].to_string()));
        assert!(!choice
            .overrides
            .iter()
            .any(|o| o.starts_with("model.temperature")));
        assert_eq!(
            choice.overrides.last().map(String::as_str),
            Some("model.compression.default_token_limit=8192")
        );
        let given = for_server_window(&loaded(&[]), true, "m", 8192);
        assert_eq!(
            given.overrides,
            ["model.compression.default_token_limit=8192"]
        );
        assert!(given.notice.is_none());
        let big = for_server_window(&loaded(&[]), false, "m", 131_072);
        assert_eq!(
            big.overrides,
            ["model.compression.default_token_limit=131072"]
        );
        let set = for_server_window(
            &loaded(&["model.compression.token_limits=m*=4096"]),
            true,
            "m1",
            8192,
        );
        assert!(set.overrides.is_empty(), "{set:?}");
    }
}
