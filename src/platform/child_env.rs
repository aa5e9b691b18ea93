//! One environment policy for every child process: shell commands, hooks,
//! MCP stdio servers and custom-command `!{…}` expansions. Hooks and MCP stdio
//! servers, which run outside the sandbox, get [`unsandboxed`]'s variables on top.
//!
//! A child inherits the parent's environment minus every variable whose name
//! looks like it holds a secret ([`is_secret_name`], the one rule in
//! [`crate::engine::secret_names`]), unless the user named it in the pass-list
//! setting (`[environment] pass`, [`ChildEnvPolicy::new`]). The check is by *name*
//! only: values are never inspected, so e.g. a `DATABASE_URL` with an embedded
//! password is passed through.
//!
//! Troupe takes the secret variables out of its own environment at start
//! ([`crate::settings::secrets::scrub_process_env`]); the inherited environment here
//! is the process's plus those taken variables, so a passed name still reaches the
//! child while a spawner that does not use this policy passes none of them.
//!
//! Typical use, before adding any variables the caller sets on purpose:
//!
//! ```
//! # use troupe::platform::child_env::ChildEnvPolicy;
//! let policy = ChildEnvPolicy::new(vec!["MY_APP_*".into()]);
//! let mut cmd = std::process::Command::new("true");
//! policy.apply_std(&mut cmd); // env_clear() + filtered inherited env
//! cmd.env("EXPLICIT", "1"); // explicit vars are added afterwards, unfiltered
//! ```

use std::ffi::OsString;
use std::process::Command;

pub use crate::engine::secret_names::is_secret_name;

pub mod unsandboxed;

/// The environment policy for child processes: drop secret-looking variables
/// except those named in an explicit pass-list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChildEnvPolicy {
    /// Names let through even if secret-looking: exact, case-sensitive
    /// names, or prefixes written with a trailing `*` (`MY_APP_*`).
    pass: Vec<String>,
}

impl ChildEnvPolicy {
    /// The policy of `[environment]` in the settings.
    pub fn from_settings(settings: &crate::settings::Settings) -> Self {
        Self::new(settings.environment.pass.clone())
    }
}

impl ChildEnvPolicy {
    /// A policy with the given pass-list. Each entry is an exact,
    /// case-sensitive variable name, or a prefix followed by a single
    /// trailing `*` (`MY_APP_*`; a lone `*` passes everything). A `*`
    /// anywhere else is an ordinary character. Empty entries are ignored.
    pub fn new(pass: Vec<String>) -> Self {
        let pass = pass.into_iter().filter(|p| !p.is_empty()).collect();
        Self { pass }
    }

    /// The pass-list this policy was built with (empty entries dropped).
    pub fn pass(&self) -> &[String] {
        &self.pass
    }

    /// True if the pass-list names `name` (exactly, or by a `PREFIX*` entry).
    pub fn is_passed(&self, name: &str) -> bool {
        self.pass.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => p == name,
        })
    }

    /// True if a child process may see the variable `name`: it is on the
    /// pass-list, or it does not look secret.
    pub fn allows(&self, name: &str) -> bool {
        self.is_passed(name) || !is_secret_name(name)
    }

    /// True if a variable with this (possibly non-UTF-8) name may be passed.
    /// Non-UTF-8 names never match the pass-list; they pass only if they do
    /// not look secret when lossily decoded.
    fn allows_os(&self, name: &OsString) -> bool {
        match name.to_str() {
            Some(name) => self.allows(name),
            None => !is_secret_name(&name.to_string_lossy()),
        }
    }

    /// Keeps the variables a child may see, in their original order.
    pub fn filtered(
        &self,
        vars: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Vec<(OsString, OsString)> {
        vars.into_iter()
            .filter(|(name, _)| self.allows_os(name))
            .collect()
    }

    /// The current process environment, with the secrets Troupe took out of it at
    /// start put back, and this policy applied. Useful for process builders other
    /// than [`std::process::Command`] (e.g. a PTY builder): clear their
    /// environment, then set these.
    pub fn filtered_current(&self) -> Vec<(OsString, OsString)> {
        let taken = crate::settings::secrets::taken_vars()
            .into_iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        self.filtered(std::env::vars_os().chain(taken))
    }

    /// Clears `cmd`'s environment and sets the filtered current process
    /// environment on it.
    ///
    /// `env_clear` also discards variables set on `cmd` *before* this call,
    /// so call it first and add deliberate variables (e.g. an MCP server's
    /// configured `env`) afterwards; those are not filtered.
    /// `tokio::process::Command` users can pass `cmd.as_std_mut()`.
    pub fn apply_std(&self, cmd: &mut Command) {
        cmd.env_clear();
        cmd.envs(self.filtered_current());
    }

    /// Names in the current process environment that this policy removes,
    /// sorted and de-duplicated (non-UTF-8 names lossily decoded). For
    /// `troupe config` to show; values are never returned.
    pub fn removed_names(&self) -> Vec<String> {
        let taken = crate::settings::secrets::taken_vars()
            .into_iter()
            .map(|(name, _)| OsString::from(name));
        self.removed_from(std::env::vars_os().map(|(name, _)| name).chain(taken))
    }

    fn removed_from(&self, names: impl IntoIterator<Item = OsString>) -> Vec<String> {
        let mut removed: Vec<String> = names
            .into_iter()
            .filter(|name| !self.allows_os(name))
            .map(|name| name.to_string_lossy().into_owned())
            .collect();
        removed.sort();
        removed.dedup();
        removed
    }
}

#[cfg(test)]
mod tests;
