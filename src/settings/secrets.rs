//! API keys taken out of the process environment at start-up.
//!
//! [`scrub_process_env`] runs first thing in `main`, before any thread exists: every
//! variable that holds a key (`*_API_KEY`, `TROUPE_*_API_KEY` included) is copied into
//! a private table, its bytes in the process's initial environment block are
//! overwritten (so `/proc/<troupe pid>/environ` no longer shows them), and it is
//! removed from the environment (so no child inherits it). Troupe reads keys back with
//! [`env_var`] / [`env_vars`], which see the table as if the variables were still set.

use std::collections::BTreeMap;
use std::sync::OnceLock;

static TAKEN: OnceLock<BTreeMap<String, String>> = OnceLock::new();

/// Whether an environment variable holds a secret Troupe keeps from its children.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.ends_with("_API_KEY")
        || upper.ends_with("_APIKEY")
        || matches!(
            upper.as_str(),
            "GEMINI_API_KEY" | "GOOGLE_API_KEY" | "OPENAI_API_KEY" | "ANTHROPIC_API_KEY"
        )
}

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

/// An environment variable, including the secrets taken at start-up (empty: unset).
pub fn env_var(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .or_else(|| TAKEN.get().and_then(|t| t.get(name).cloned()))
        .filter(|v| !v.is_empty())
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
    }
}
