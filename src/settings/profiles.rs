//! Settings presets chosen with `--profile NAME`, applied before the `-c` overrides
//! (which therefore win).

/// The `small` profile: for a small local model (1–8 B parameters, a context window of
/// a few thousand tokens) behind an OpenAI-compatible server.
pub const SMALL: &[&str] = &[
    // The tools a coding task needs; their declarations are a third of the full set.
    "tools.core=list_directory,read_file,glob,grep_search,replace,write_file,run_shell_command",
    // Their descriptions cut to a sentence, and a short prompt generated from them.
    "tools.compact_declarations=true",
    "model.prompt_style=short",
    "model.temperature=0",
    "model.max_output_tokens=1024",
    // Repair failed edits by unescaping only: a model call costs a slow model dearly.
    "edit.use_model=false",
    // Refuse edits that would leave a parsing file unparseable (on by default too).
    "edit.check_syntax=true",
    // A model not listed in token_limits is assumed to have a small window.
    "model.compression.default_token_limit=8192",
    "model.max_turns=30",
];

/// The overrides of profile `name`, or an error listing the profiles.
pub fn profile(name: &str) -> Result<&'static [&'static str], String> {
    match name {
        "small" => Ok(SMALL),
        other => Err(format!(
            "--profile: `{other}` is not a profile (known: small)"
        )),
    }
}
