//! Secrets taken out of the process environment at start-up.
//!
//! [`scrub_process_env`] runs first thing in `main`, before any thread exists: every
//! variable whose name holds a secret ([`is_secret_name`], the one rule of
//! [`crate::engine::secret_names`]: `*_API_KEY`, `*_TOKEN`, `*_PAT`, `*_SECRET*`, cloud
//! credentials, …) is copied into a private table, its bytes in the process's initial
//! environment block are overwritten (so `/proc/<troupe pid>/environ` no longer shows
//! them), and it is removed from the environment (so no child inherits it). Troupe
//! reads them back with [`env_var`] / [`env_vars`], which see the table as if the
//! variables were still set; [`crate::platform::child_env`] gives a child the ones
//! `[environment] pass` names.

use std::collections::BTreeMap;
use std::sync::OnceLock;

static TAKEN: OnceLock<BTreeMap<String, String>> = OnceLock::new();

/// Whether an environment variable holds a secret Troupe keeps from its children.
pub use crate::engine::secret_names::is_secret_name;

/// Moves every secret variable out of the environment. Call once, at the very start of
/// `main`, while the process has a single thread.
pub fn scrub_process_env() {
    let mut taken = BTreeMap::new();
    for (name, value) in std::env::vars_os() {
        let (Some(name), Some(value)) = (name.to_str(), value.to_str()) else {
            continue;
        };
        if is_secret_name(name) {
            taken.insert(name.to_string(), value.to_string());
        }
    }
    for name in taken.keys() {
        overwrite_initial_block(name);
        std::env::remove_var(name);
    }
    let _ = TAKEN.set(taken);
}

/// Overwrites the value bytes of `name=value` in the environment strings the kernel
/// placed on the initial stack (what `/proc/self/environ` reads).
#[cfg(target_os = "linux")]
fn overwrite_initial_block(name: &str) {
    extern "C" {
        static mut environ: *mut *mut libc::c_char;
    }
    let prefix = format!("{name}=");
    // SAFETY: single-threaded at this point (called first in main); `environ` is the
    // C library's NULL-terminated array of NUL-terminated strings, each valid and
    // writable for its whole length, which `strlen` measures.
    unsafe {
        let mut entry = environ;
        if entry.is_null() {
            return;
        }
        while !(*entry).is_null() {
            let s = *entry;
            let len = libc::strlen(s);
            let bytes = std::slice::from_raw_parts_mut(s.cast::<u8>(), len);
            if bytes.starts_with(prefix.as_bytes()) {
                for b in &mut bytes[prefix.len()..] {
                    *b = b'*';
                }
            }
            entry = entry.add(1);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn overwrite_initial_block(_name: &str) {}

/// Hides the secrets given with `-c KEY=VALUE` (an API key) from the process's command
/// line: each value's bytes in the argument strings the kernel placed on the initial
/// stack (what `/proc/<troupe pid>/cmdline` and `ps` read) are overwritten with `*`.
/// Returns the keys that were given so (for [`key_argument_warning`]).
///
/// Call once, at the very start of `main`, while the process has a single thread, and
/// after taking a copy of the arguments (`std::env::args_os` reads the same memory).
pub fn scrub_key_arguments() -> Vec<String> {
    #[cfg(target_os = "linux")]
    if let Some(keys) = overwrite_argument_block() {
        return keys;
    }
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_encoded_bytes()).collect();
    crate::engine::secret_names::secret_config_arguments(&bytes)
        .into_iter()
        .map(|s| s.key)
        .collect()
}

/// The argument strings' memory (`arg_start`..`arg_end` of `/proc/self/stat`, fields
/// 48 and 49), with every secret `-c` value overwritten; `None` when it cannot be
/// found.
#[cfg(target_os = "linux")]
fn overwrite_argument_block() -> Option<Vec<String>> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Field 3 (the state) is the first after the name: arg_start is field 48.
    let mut fields = crate::engine::proc_stat::fields_after_name(&stat)?;
    let start: usize = fields.nth(48 - 3)?.parse().ok()?;
    let end: usize = fields.next()?.parse().ok()?;
    if start == 0 || end <= start {
        return None;
    }
    // SAFETY: the kernel reports `arg_start..arg_end` as this process's argument
    // strings, which it copied onto the initial stack at exec: mapped, writable and
    // never freed. Single-threaded at this point (called first in main), and the only
    // other reader, `std::env::args_os`, has already been copied from by the caller.
    let block: &mut [u8] = unsafe {
        std::slice::from_raw_parts_mut(std::ptr::with_exposed_provenance_mut(start), end - start)
    };
    let mut ranges = Vec::new();
    let mut at = 0;
    for piece in block.split(|b| *b == 0) {
        ranges.push(at..at + piece.len());
        at += piece.len() + 1;
    }
    let found = {
        let args: Vec<&[u8]> = ranges.iter().map(|r| &block[r.clone()]).collect();
        crate::engine::secret_names::secret_config_arguments(&args)
    };
    for secret in &found {
        let Some(arg) = ranges.get(secret.index) else {
            continue;
        };
        let from = arg.start + secret.value.start;
        let to = arg.start + secret.value.end;
        if let Some(bytes) = block.get_mut(from..to) {
            bytes.fill(b'*');
        }
    }
    Some(found.into_iter().map(|s| s.key).collect())
}

/// The warning for a key given with `-c KEY=VALUE`: where to put it instead.
pub fn key_argument_warning(key: &str) -> String {
    let variable = match key {
        "model.gemini.api_key" => "GEMINI_API_KEY",
        "model.openai.api_key" => "OPENAI_API_KEY",
        _ => "an environment variable",
    };
    format!(
        "troupe: warning: a secret was given on the command line (-c {key}=…); other users' \
         processes can read a command line (ps, /proc) while it runs, and shells keep it \
         in their history. Put it in the environment ({variable}) or in a file only you \
         can read (`{key} = \"…\"` in ~/.troupe/config.toml, mode 0600) instead."
    )
}

/// An environment variable, including the secrets taken at start-up (empty: unset).
pub fn env_var(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .or_else(|| TAKEN.get().and_then(|t| t.get(name).cloned()))
        .filter(|v| !v.is_empty())
}

/// The secrets taken out of the environment at start-up, by name (for a child whose
/// policy passes some of them).
pub fn taken_vars() -> Vec<(String, String)> {
    TAKEN
        .get()
        .map(|t| t.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

/// Every environment variable, including the secrets taken at start-up.
pub fn env_vars() -> Vec<(String, String)> {
    let mut vars: Vec<(String, String)> = std::env::vars().collect();
    if let Some(taken) = TAKEN.get() {
        for (k, v) in taken {
            if !vars.iter().any(|(name, _)| name == k) {
                vars.push((k.clone(), v.clone()));
            }
        }
    }
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names() {
        assert!(is_secret_name("GEMINI_API_KEY"));
        assert!(is_secret_name("TROUPE_MODEL_OPENAI_API_KEY"));
        assert!(is_secret_name("my_service_api_key"));
        assert!(!is_secret_name("PATH"));
        assert!(!is_secret_name("TROUPE_MODEL_NAME"));
        // The same rule as the children's policy: more than model keys.
        assert!(is_secret_name("GITHUB_TOKEN"));
        assert!(is_secret_name("AWS_SECRET_ACCESS_KEY"));
        assert!(is_secret_name("GITHUB_PAT"));
    }
}
