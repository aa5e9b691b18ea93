//! What a front end keeps of one model request's attempts: the text it has shown (so a
//! retried attempt that repeats it is not shown twice) and the size of an answer the
//! server never counted (so an interrupted run reports estimated tokens, not 0).

use crate::engine::stats::SessionStats;
use crate::protocol::UiEvent;

/// The line a retried attempt starts on when it says something else than the failed
/// attempt already shown.
pub const RETRY_MARK: &str = "[retry] ";

/// The text of the current model request as shown, across retries: after a retry the
/// new attempt's text is held back while it repeats what the failed attempt showed;
/// where it says something else, it is shown whole on a new line after
/// [`RETRY_MARK`].
#[derive(Debug, Default)]
pub struct AttemptText {
    /// The text shown for this request.
    shown: String,
    /// After a retry: how much of `shown` the new attempt has repeated.
    echo: Option<usize>,
}

impl AttemptText {
    /// A new model request (a new round): what came before stays shown. Returns what
    /// to show to settle a retried attempt that ended short of the failed one.
    pub fn request(&mut self) -> String {
        let out = self.settle();
        self.shown.clear();
        out
    }

    /// The attempt failed and another follows.
    pub fn retry(&mut self) {
        self.echo = Some(0);
    }

    /// What to show of `delta`: nothing while it repeats the failed attempt, the
    /// whole new attempt after a mark where it departs from it.
    pub fn delta(&mut self, delta: &str) -> String {
        let Some(pos) = self.echo else {
            self.shown.push_str(delta);
            return delta.to_string();
        };
        let rest = &self.shown[pos..];
        let common = common_prefix(rest, delta);
        if common == delta.len() {
            self.echo = Some(pos + common);
            return String::new();
        }
        self.echo = None;
        if common == rest.len() {
            // The failed attempt's text is all repeated: the rest is new.
            let new = &delta[common..];
            self.shown.push_str(new);
            return new.to_string();
        }
        self.shown.truncate(pos);
        self.shown.push_str(delta);
        format!("\n{RETRY_MARK}{}", self.shown)
    }

    /// Something other than text comes (a tool call, the end of the turn): a retried
    /// attempt that ended short of what the failed one showed is shown whole.
    pub fn settle(&mut self) -> String {
        match self.echo.take() {
            Some(pos) if pos < self.shown.len() => {
                self.shown.truncate(pos);
                format!("\n{RETRY_MARK}{}", self.shown)
            }
            _ => String::new(),
        }
    }
}

/// The length in bytes of the longest common prefix of `a` and `b`, on a character
/// boundary.
fn common_prefix(a: &str, b: &str) -> usize {
    a.char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map(|((i, _), _)| i)
        .unwrap_or_else(|| a.len().min(b.len()))
}

/// Tokens of the model requests the server gave no usage for (it never sent any, or
/// the run was interrupted first), estimated from [`UiEvent::ModelProgress`].
#[derive(Debug, Default)]
pub struct TokenEstimate {
    /// The request in flight has had a usage report.
    usage_seen: bool,
    /// The latest progress of the request in flight: prompt and output tokens.
    pending: Option<(u64, u64)>,
    prompt: u64,
    output: u64,
    used: bool,
}

impl TokenEstimate {
    /// Follows the event stream.
    pub fn record(&mut self, event: &UiEvent) {
        match event {
            UiEvent::ModelRequest { .. } => {
                self.fold();
                self.usage_seen = false;
            }
            UiEvent::Usage(u) if u.total_token_count > 0 || u.prompt_token_count > 0 => {
                self.usage_seen = true;
            }
            UiEvent::ModelProgress {
                output_bytes,
                prompt_tokens_estimate,
                ..
            } => self.pending = Some((*prompt_tokens_estimate, output_bytes.div_ceil(4))),
            _ => {}
        }
    }

    fn fold(&mut self) {
        if let Some((prompt, output)) = self.pending.take() {
            if !self.usage_seen {
                self.prompt += prompt;
                self.output += output;
                self.used = true;
            }
        }
    }

    /// Adds the estimates to `stats`; true when there were any.
    pub fn apply(&mut self, stats: &mut SessionStats) -> bool {
        self.fold();
        stats.prompt_tokens += self.prompt;
        stats.output_tokens += self.output;
        stats.total_tokens += self.prompt + self.output;
        std::mem::take(&mut self.used)
    }
}

/// Stream-json: the answer so far of the request in flight, as a `progress` event's
/// fields (`phase`, `output_tokens`, `elapsed_ms`).
pub fn progress_fields(output_bytes: u64, elapsed_ms: u64) -> (&'static str, u64, u64) {
    let phase = if output_bytes == 0 {
        "waiting"
    } else {
        "generating"
    };
    (phase, output_bytes.div_ceil(4), elapsed_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(a: &mut AttemptText, deltas: &[&str]) -> String {
        deltas.iter().map(|d| a.delta(d)).collect()
    }

    #[test]
    fn a_repeated_prefix_is_shown_once() {
        let mut a = AttemptText::default();
        assert_eq!(feed(&mut a, &["A Python ", "package"]), "A Python package");
        a.retry();
        assert_eq!(
            feed(&mut a, &["A Py", "thon package", " is a folder."]),
            " is a folder."
        );
        assert_eq!(a.settle(), "");
    }

    #[test]
    fn a_different_answer_starts_a_marked_line() {
        let mut a = AttemptText::default();
        assert_eq!(feed(&mut a, &["Hello wor"]), "Hello wor");
        a.retry();
        assert_eq!(feed(&mut a, &["Hello"]), "");
        assert_eq!(feed(&mut a, &[" there"]), "\n[retry] Hello there");
        assert_eq!(feed(&mut a, &["!"]), "!");
    }

    #[test]
    fn a_shorter_retry_is_settled() {
        let mut a = AttemptText::default();
        feed(&mut a, &["Yes, and more"]);
        a.retry();
        assert_eq!(feed(&mut a, &["Yes"]), "");
        assert_eq!(a.settle(), "\n[retry] Yes");
    }
}
