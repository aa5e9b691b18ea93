//! The Corrector actor: repairs a `replace` call whose `old_string` did not match as
//! required, so that the edit lands where the model meant it, or not at all.
//!
//! In order: a fast path without any model (gemini-cli's `unescapeStringForGeminiBug`
//! on over-escaped strings); then, with a model, gemini-cli's instruction-based fixer
//! (`FixLLMEditWithInstruction`: search / replace / noChangesRequired / explanation as
//! JSON); then the older `ensureCorrectEdit` correction (the exact literal segment the
//! `old_string` meant, then `new_string` adjusted to it). Before asking a model the file
//! is read again and the latest content used. Model answers are cached in an LRU keyed
//! by the sha256 of their inputs; the whole correction of one edit gets one time budget
//! (`edit.correction_timeout_secs`) and at most one retry of a failed model request in
//! all; a correction is accepted only if its `old_string` then occurs literally exactly
//! as required.

mod accept;
mod prompts;
mod request;
#[cfg(test)]
mod tests;

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use lru::LruCache;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::engine::edit::snapshot::{sha256, FileSnapshot};
use crate::engine::edit::unescape::unescape;
use crate::engine::edit::Occurrences;
use crate::platform::filesystem::{FsClient, FsError};
use crate::providers::ModelClient;

use accept::{accept, unescape_fix};
use request::Attempts;

/// How the Corrector works.
#[derive(Debug, Clone)]
pub struct CorrectorConfig {
    /// Ask the model when the fast path does not help.
    pub use_model: bool,
    /// Bound on the whole correction of one edit (every model request and the retry).
    pub timeout: Duration,
    /// Entries of the answer cache.
    pub cache_entries: usize,
}

/// Which repair made the edit match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CorrectionMethod {
    /// Over-escaped strings unescaped, no model.
    Unescape,
    /// gemini-cli's instruction-based fixer.
    Instruction,
    /// The older old/new-string correction.
    OldString,
}

impl CorrectionMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            CorrectionMethod::Unescape => "unescape",
            CorrectionMethod::Instruction => "instruction",
            CorrectionMethod::OldString => "old_string",
        }
    }
}

/// Repair a failed edit.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Correction")]
pub struct CorrectEdit {
    /// The file (resolved path), read again before a model is asked.
    pub path: PathBuf,
    /// The content the failed attempt used.
    pub snapshot: FileSnapshot,
    pub old_string: String,
    pub new_string: String,
    pub instruction: Option<String>,
    pub want: Occurrences,
    /// The error the failed attempt produced (what the model is told).
    pub error: String,
    pub cancel: CancellationToken,
}

/// What the Corrector came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Correction {
    /// Strings that occur literally as required in `snapshot`'s text (the latest
    /// content when the file changed since the failed attempt).
    Fixed {
        old_string: String,
        new_string: String,
        snapshot: FileSnapshot,
        method: CorrectionMethod,
        cached: bool,
    },
    /// The model judged that the file already does what the instruction asks.
    NoChangeRequired { explanation: String },
    /// Nothing helped; the original error stands.
    Failed { reason: String },
}

/// An answer worth caching.
#[derive(Debug, Clone)]
enum Answer {
    Fix {
        search: String,
        replace: String,
        no_changes_required: bool,
        explanation: String,
    },
    Text(String),
}

type Cache = Arc<Mutex<LruCache<[u8; 32], Answer>>>;

/// The Corrector actor (one per session).
pub struct Corrector {
    inner: Arc<Inner>,
}

struct Inner {
    model: Arc<dyn ModelClient>,
    model_name: String,
    fs: FsClient,
    config: CorrectorConfig,
    cache: Cache,
}

impl Corrector {
    pub fn new(
        model: Arc<dyn ModelClient>,
        model_name: String,
        fs: FsClient,
        config: CorrectorConfig,
    ) -> Self {
        let entries = NonZeroUsize::new(config.cache_entries.max(1)).unwrap_or(NonZeroUsize::MIN);
        Self {
            inner: Arc::new(Inner {
                model,
                model_name,
                fs,
                config,
                cache: Arc::new(Mutex::new(LruCache::new(entries))),
            }),
        }
    }
}

impl Actor for Corrector {
    type Context = Context<Self>;
}

impl Handler<CorrectEdit> for Corrector {
    type Result = ResponseFuture<Correction>;

    fn handle(&mut self, msg: CorrectEdit, _: &mut Self::Context) -> Self::Result {
        let inner = self.inner.clone();
        Box::pin(async move { inner.correct(msg).await })
    }
}

/// Non-overlapping literal occurrences.
fn count(content: &str, needle: &str) -> usize {
    if needle.is_empty() {
        0
    } else {
        content.matches(needle).count()
    }
}

fn cache_key(parts: &[&str]) -> [u8; 32] {
    sha256(json!(parts).to_string().as_bytes())
}

impl Inner {
    async fn correct(&self, msg: CorrectEdit) -> Correction {
        if msg.old_string.trim().is_empty() {
            return Correction::Failed {
                reason: "old_string is empty".into(),
            };
        }
        if let Some(fixed) = unescape_fix(&msg, &msg.snapshot) {
            return fixed;
        }
        if !self.config.use_model {
            return Correction::Failed {
                reason: "correction by a model is turned off".into(),
            };
        }
        let budget = self.config.timeout;
        let attempts = Attempts::default();
        match tokio::time::timeout(budget, self.correct_with_model(&msg, &attempts)).await {
            Ok(correction) => correction,
            Err(_) => Correction::Failed {
                reason: format!("no correction within {} s", budget.as_secs()),
            },
        }
    }

    /// The model part of a correction; bounded as a whole by the caller.
    async fn correct_with_model(&self, msg: &CorrectEdit, attempts: &Attempts) -> Correction {
        let (snapshot, error) = match self.fs.read(msg.path.clone()).await {
            Ok(read) => match FileSnapshot::from_bytes(&read.bytes) {
                Ok(latest) if latest.text != msg.snapshot.text => {
                    let error = format!("The initial edit attempt failed with the following error: \"{}\". However, the file has been modified by either the user or an external process since that edit attempt. The file content provided to you is the latest version. Please base your correction on this new content.", msg.error);
                    (latest, error)
                }
                Ok(latest) => (latest, msg.error.clone()),
                Err(e) => {
                    return Correction::Failed {
                        reason: e.to_string(),
                    }
                }
            },
            Err(FsError::NotFound(p)) => {
                return Correction::Failed {
                    reason: format!("{} no longer exists", p.display()),
                }
            }
            Err(e) => {
                return Correction::Failed {
                    reason: e.to_string(),
                }
            }
        };
        if snapshot.text != msg.snapshot.text {
            if let Some(fixed) = unescape_fix(msg, &snapshot) {
                return fixed;
            }
        }
        match self.instruction_fix(msg, &snapshot, &error, attempts).await {
            Ok(found) => return found,
            Err(reason) if attempts.model_unreachable() => {
                return Correction::Failed { reason };
            }
            Err(reason) => tracing::debug!(%reason, "instruction fixer did not help"),
        }
        match self.old_string_fix(msg, &snapshot, attempts).await {
            Ok(found) => found,
            Err(reason) => Correction::Failed { reason },
        }
    }

    /// Asks the model (or the cache) for the JSON answer of one prompt.
    async fn ask(
        &self,
        key: [u8; 32],
        system: &str,
        prompt: String,
        schema: Value,
        cancel: &CancellationToken,
        attempts: &Attempts,
    ) -> Result<(Value, bool), String> {
        if let Ok(mut cache) = self.cache.lock() {
            if let Some(Answer::Text(text)) = cache.get(&key) {
                return serde_json::from_str(text)
                    .map(|v| (v, true))
                    .map_err(|e| e.to_string());
            }
        }
        let value = self
            .ask_uncached(system, prompt, schema, cancel, attempts)
            .await?;
        if let Ok(mut cache) = self.cache.lock() {
            cache.put(key, Answer::Text(value.to_string()));
        }
        Ok((value, false))
    }

    async fn instruction_fix(
        &self,
        msg: &CorrectEdit,
        snapshot: &FileSnapshot,
        error: &str,
        attempts: &Attempts,
    ) -> Result<Correction, String> {
        let instruction = msg
            .instruction
            .clone()
            .filter(|i| !i.trim().is_empty())
            .unwrap_or_else(|| "Apply the requested edit.".to_string());
        let key = cache_key(&[
            &snapshot.text,
            &msg.old_string,
            &msg.new_string,
            &instruction,
            error,
        ]);
        let cached = self
            .cache
            .lock()
            .ok()
            .and_then(|mut c| c.get(&key).cloned());
        let (answer, was_cached) = match cached {
            Some(answer @ Answer::Fix { .. }) => (answer, true),
            _ => {
                let prompt = prompts::fixer_prompt(
                    &instruction,
                    &msg.old_string,
                    &msg.new_string,
                    error,
                    &snapshot.text,
                );
                let value = self
                    .ask_uncached(
                        prompts::FIXER_SYSTEM,
                        prompt,
                        prompts::fixer_schema(),
                        &msg.cancel,
                        attempts,
                    )
                    .await?;
                let answer = parse_fix(&value)?;
                if let Ok(mut cache) = self.cache.lock() {
                    cache.put(key, answer.clone());
                }
                (answer, false)
            }
        };
        let Answer::Fix {
            search,
            replace,
            no_changes_required,
            explanation,
        } = answer
        else {
            return Err("unexpected cache entry".into());
        };
        if no_changes_required {
            return Ok(Correction::NoChangeRequired { explanation });
        }
        accept(
            msg,
            snapshot,
            search,
            replace,
            CorrectionMethod::Instruction,
            was_cached,
        )
    }

    /// The older `ensureCorrectEdit`: the exact segment `old_string` meant, then
    /// `new_string` adjusted to it.
    async fn old_string_fix(
        &self,
        msg: &CorrectEdit,
        snapshot: &FileSnapshot,
        attempts: &Attempts,
    ) -> Result<Correction, String> {
        let problem = unescape(&msg.old_string);
        let (value, cached_old) = self
            .ask(
                cache_key(&["old", &snapshot.text, &problem]),
                prompts::CORRECTION_SYSTEM,
                prompts::old_string_prompt(&snapshot.text, &problem),
                prompts::string_schema("corrected_target_snippet"),
                &msg.cancel,
                attempts,
            )
            .await?;
        let corrected = value
            .get("corrected_target_snippet")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or("the model found no matching segment")?
            .to_string();
        if !msg.want.accepts(count(&snapshot.text, &corrected)) {
            return Err("the corrected old_string does not occur as required".into());
        }
        let (new_string, cached_new) = if corrected == msg.old_string {
            (msg.new_string.clone(), true)
        } else {
            let (value, cached) = self
                .ask(
                    cache_key(&["new", &msg.old_string, &corrected, &msg.new_string]),
                    prompts::CORRECTION_SYSTEM,
                    prompts::new_string_prompt(&msg.old_string, &corrected, &msg.new_string),
                    prompts::string_schema("corrected_new_string"),
                    &msg.cancel,
                    attempts,
                )
                .await?;
            let new = value
                .get("corrected_new_string")
                .and_then(Value::as_str)
                .ok_or("the model did not adjust new_string")?
                .to_string();
            (new, cached)
        };
        accept(
            msg,
            snapshot,
            corrected,
            new_string,
            CorrectionMethod::OldString,
            cached_old && cached_new,
        )
    }
}

fn parse_fix(value: &Value) -> Result<Answer, String> {
    let text = |k: &str| value.get(k).and_then(Value::as_str).map(str::to_string);
    let (Some(search), Some(replace)) = (text("search"), text("replace")) else {
        return Err(format!("the fixer's answer lacks search/replace: {value}"));
    };
    Ok(Answer::Fix {
        search,
        replace,
        no_changes_required: value
            .get("noChangesRequired")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        explanation: text("explanation").unwrap_or_default(),
    })
}
