//! The context budget: how much of the model's context window one tool result may take,
//! when the history (not the fixed system prompt and tool declarations) calls for a
//! compression, and how a request that still does not fit is repaired by dropping the
//! oldest turns while every function call stays answered. Pure logic.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use super::compression::{estimate_tokens, json_len, json_len_of};
use crate::protocol::content::{
    Content, FunctionCall, FunctionDeclaration, FunctionResponse, Part, Role,
};

/// A compression must summarise at least this share of the context window, or it is
/// not worth a model call (and the server's prompt cache).
pub const MIN_COMPRESSION_SHARE: f64 = 0.1;

/// Characters one tool result may keep: `share` of a window of `window_tokens`, at
/// four characters a token, and never less than 2,000.
pub fn result_char_budget(window_tokens: u64, share: f64) -> usize {
    ((window_tokens as f64 * share * 4.0) as usize).max(2_000)
}

/// Tokens of the fixed prefix of every request: the system prompt and the tool
/// declarations (estimated as four characters of JSON a token).
pub fn prefix_tokens(system: Option<&str>, tools: &[FunctionDeclaration]) -> u64 {
    let system = system.map_or(0, |s| s.encode_utf16().count()) as u64;
    let tools = serde_json::to_string(tools).map_or(0, |t| t.len()) as u64;
    (system + tools) / 4
}

/// Is a compression due? Only the history counts: the part of the last prompt beyond
/// the fixed prefix must reach `threshold` of what the window leaves for history.
pub fn compression_due(last_prompt: u64, prefix: u64, window: u64, threshold: f64) -> bool {
    let history = last_prompt.saturating_sub(prefix);
    let room = window.saturating_sub(prefix).max(1);
    last_prompt > 0 && history as f64 >= threshold * room as f64
}

/// Is summarising `to_compress` worth it in a window of `window` tokens?
pub fn worth_compressing(to_compress: &[Content], window: u64) -> bool {
    estimate_tokens(to_compress) as f64 >= MIN_COMPRESSION_SHARE * window as f64
}

fn is_plain_user(content: &Content) -> bool {
    content.role == Role::User && !content.has_function_response()
}

/// Drops the oldest history until `prefix` plus the history fits `window` tokens: whole
/// old turns first (up to the next user message), then, inside the one turn left, the
/// oldest call/response pairs after its user message. Roles keep alternating and every
/// function call keeps its response. Returns the kept history and how many contents
/// were dropped; the newest user message and everything after the last pair stay.
/// `size` measures a content ([`json_len`], or a [`SizeMemo`]'s).
pub fn fit_history(
    contents: Vec<Content>,
    prefix: u64,
    window: u64,
    mut size: impl FnMut(&Content) -> usize,
) -> (Vec<Content>, usize) {
    // Each content is measured once (serialising the whole history per step was
    // quadratic in a long turn).
    let sizes: Vec<u64> = contents.iter().map(|c| size(c) as u64).collect();
    let total = sizes.iter().sum();
    let fit = plan_fit(&contents, &sizes, total, prefix, window);
    let dropped = fit.dropped();
    let kept = contents
        .into_iter()
        .enumerate()
        .filter(|(i, _)| fit.keeps(*i))
        .map(|(_, c)| c)
        .collect();
    (kept, dropped)
}

/// What [`fit_history`] keeps of a history: `contents[start]`, then
/// `contents[start + 1 + 2 * pairs..]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fit {
    start: usize,
    pairs: usize,
}

impl Fit {
    /// How many contents are dropped.
    pub fn dropped(&self) -> usize {
        self.start + 2 * self.pairs
    }

    /// Is the content at `index` kept?
    pub fn keeps(&self, index: usize) -> bool {
        index == self.start || index >= self.start + 1 + 2 * self.pairs
    }
}

/// [`fit_history`]'s choice for `contents` measured as `sizes` (summing to `total`),
/// without touching them: nothing is dropped when they fit.
pub fn plan_fit(
    contents: &[Content],
    sizes: &[u64],
    mut total: u64,
    prefix: u64,
    window: u64,
) -> Fit {
    // What is dropped is only counted here (draining the front of the history at each
    // step was quadratic in a long history).
    let (mut start, mut pairs) = (0usize, 0usize);
    // Whole turns go while the first kept content is a user message and another
    // follows it; then (never again whole turns) pairs of the one turn left.
    let mut whole_turns = true;
    while prefix + total / 4 > window {
        let first_is_user = contents.get(start).is_some_and(is_plain_user);
        let next_turn = if whole_turns && first_is_user {
            contents[start + 1..]
                .iter()
                .position(is_plain_user)
                .map(|i| start + 1 + i)
        } else {
            None
        };
        if let Some(next) = next_turn {
            total -= sizes[start..next].iter().sum::<u64>();
            start = next;
            continue;
        }
        whole_turns = false;
        // One turn left: drop its oldest call + response pair (never the last content).
        let at = start + 1 + 2 * pairs;
        let pair = contents.len() - start - 2 * pairs > 3
            && contents[at].role == Role::Model
            && contents[at].function_calls().next().is_some()
            && contents[at + 1].has_function_response();
        if !pair {
            break;
        }
        total -= sizes[at] + sizes[at + 1];
        pairs += 1;
    }
    Fit { start, pairs }
}

/// The sizes of the function calls and responses of a history, measured once each:
/// a request measures the whole history, which is mostly calls and responses that an
/// earlier request already measured (measuring them again made every turn of a long
/// session cost as much as the whole history). A call or response is known by its
/// address; the memo keeps a weak reference, so that the address is not reused while
/// it is remembered, without keeping it or stopping `Arc::make_mut` from changing it
/// in place. The other parts (text mostly) are measured each time.
#[derive(Debug, Default)]
pub struct SizeMemo {
    responses: HashMap<usize, (Weak<FunctionResponse>, usize)>,
    calls: HashMap<usize, (Weak<FunctionCall>, usize)>,
    /// The fixed prefix's tokens, known by the addresses of the prompt and declarations.
    prefix: Option<((usize, usize, usize), u64)>,
    /// How many calls and responses the last [`SizeMemo::forget_unused`] kept.
    kept: usize,
}

impl SizeMemo {
    /// [`json_len`] of `content`: its shell, then each part, the calls and responses
    /// from the memo.
    pub fn content_len(&mut self, content: &Content) -> usize {
        if content.parts.is_empty() {
            return json_len(content);
        }
        // `{"role":"user","parts":[]}` and `{"role":"model","parts":[]}`.
        let shell = match content.role {
            Role::User => 26,
            Role::Model => 27,
        };
        let parts: usize = content.parts.iter().map(|p| self.part_len(p)).sum();
        // The parts are separated by commas.
        shell + parts + content.parts.len() - 1
    }

    fn part_len(&mut self, part: &Part) -> usize {
        if let Some(response) = only_response(part) {
            return RESPONSE_PART_FRAME + self.response_len(response);
        }
        if let Some(call) = only_call(part) {
            let key = Arc::as_ptr(call) as usize;
            return CALL_PART_FRAME
                + self
                    .calls
                    .entry(key)
                    .or_insert_with(|| (Arc::downgrade(call), json_len_of(&**call)))
                    .1;
        }
        json_len_of(part)
    }

    /// Measures `response` now (for a later [`SizeMemo::content_len`]).
    pub fn response_len(&mut self, response: &Arc<FunctionResponse>) -> usize {
        let key = Arc::as_ptr(response) as usize;
        self.responses
            .entry(key)
            .or_insert_with(|| (Arc::downgrade(response), json_len_of(&**response)))
            .1
    }

    /// [`prefix_tokens`], measured again only when the prompt or the declarations
    /// are other ones than last time.
    pub fn prefix_tokens(
        &mut self,
        system: Option<&str>,
        tools: &Arc<Vec<FunctionDeclaration>>,
    ) -> u64 {
        let key = (
            Arc::as_ptr(tools) as usize,
            system.map_or(0, |s| s.as_ptr() as usize),
            system.map_or(0, str::len),
        );
        match self.prefix {
            Some((known, tokens)) if known == key => tokens,
            _ => {
                let tokens = prefix_tokens(system, tools);
                self.prefix = Some((key, tokens));
                tokens
            }
        }
    }

    /// Takes what `other` measured.
    pub fn absorb(&mut self, other: SizeMemo) {
        self.responses.extend(other.responses);
        self.calls.extend(other.calls);
    }

    /// Forgets the calls and responses the history no longer holds.
    pub fn forget_unused(&mut self) {
        self.responses
            .retain(|_, (response, _)| response.strong_count() > 0);
        self.calls.retain(|_, (call, _)| call.strong_count() > 0);
        self.kept = self.responses.len() + self.calls.len();
    }

    /// [`SizeMemo::forget_unused`] once the memo has doubled since the last time: a
    /// request each turn that went through the whole memo made every turn of a long
    /// session cost as much as its whole history; this way the cost is spread.
    pub fn tidy(&mut self) {
        if self.responses.len() + self.calls.len() >= 2 * self.kept + 256 {
            self.forget_unused();
        }
    }
}

/// `{"functionResponse":` and `}`.
const RESPONSE_PART_FRAME: usize = 21;
/// `{"functionCall":` and `}`.
const CALL_PART_FRAME: usize = 17;

/// The response of a part that is a function response and nothing else.
fn only_response(part: &Part) -> Option<&Arc<FunctionResponse>> {
    let alone = part.text.is_none()
        && part.thought.is_none()
        && part.function_call.is_none()
        && part.inline_data.is_none()
        && part.file_data.is_none()
        && part.thought_signature.is_none();
    part.function_response.as_ref().filter(|_| alone)
}

/// The call of a part that is a function call and nothing else.
fn only_call(part: &Part) -> Option<&Arc<FunctionCall>> {
    let alone = part.text.is_none()
        && part.thought.is_none()
        && part.function_response.is_none()
        && part.inline_data.is_none()
        && part.file_data.is_none()
        && part.thought_signature.is_none();
    part.function_call.as_ref().filter(|_| alone)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::content::{FunctionCall, FunctionResponse, Part};
    use serde_json::json;

    fn call(id: &str) -> Content {
        Content {
            role: Role::Model,
            parts: vec![Part::function_call(FunctionCall {
                id: Some(id.into()),
                name: "read_file".into(),
                args: json!({}),
            })],
        }
    }

    fn response(id: &str, size: usize) -> Content {
        Content {
            role: Role::User,
            parts: vec![Part {
                function_response: Some(std::sync::Arc::new(FunctionResponse {
                    id: Some(id.into()),
                    name: "read_file".into(),
                    response: json!({"output": "x".repeat(size)}),
                    parts: None,
                })),
                ..Part::default()
            }],
        }
    }

    #[test]
    fn the_prefix_alone_does_not_call_for_compression() {
        // 47 % of an 8k window is prefix; the history is small.
        assert!(!compression_due(4200, 3850, 8192, 0.5));
        assert!(compression_due(3850 + 2200, 3850, 8192, 0.5));
        assert!(!compression_due(0, 0, 8192, 0.5));
    }

    #[test]
    fn old_turns_then_old_pairs_are_dropped_and_calls_stay_answered() {
        let history = vec![
            Content::user_text("old question"),
            call("a"),
            response("a", 4000),
            Content::model_text("old answer"),
            Content::user_text("new question"),
            call("b"),
            response("b", 4000),
            call("c"),
            response("c", 400),
        ];
        let (kept, dropped) = fit_history(history.clone(), 100, 1000, json_len);
        assert_eq!(dropped, 6);
        assert_eq!(kept[0], Content::user_text("new question"));
        assert_eq!(kept.len(), 3);
        assert_eq!(kept[1], call("c"));
        let (same, none) = fit_history(history.clone(), 100, 1_000_000, json_len);
        assert_eq!((same.len(), none), (history.len(), 0));
    }

    #[test]
    fn the_memo_measures_what_serialising_measures() {
        let mut memo = SizeMemo::default();
        let mut several = response("a", 10);
        several.parts.extend(response("b\u{1F600}\n\"", 3).parts);
        let mut signed = response("c", 5);
        signed.parts[0].thought_signature = Some("sig".into());
        let contents = [
            response("a", 4000),
            several,
            signed,
            call("a"),
            Content::user_text("plain"),
            Content {
                role: Role::User,
                parts: Vec::new(),
            },
            // Text, two calls (one with a signature) and a thought in one turn.
            Content {
                role: Role::Model,
                parts: vec![
                    Part::text("I will read \"x\" and y\u{e9}."),
                    call("d").parts.remove(0),
                    Part {
                        thought_signature: Some("s".into()),
                        ..call("e").parts.remove(0)
                    },
                    Part {
                        thought: Some(true),
                        ..Part::text("hmm")
                    },
                ],
            },
        ];
        for role in [Role::User, Role::Model] {
            let empty = Content {
                role,
                parts: Vec::new(),
            };
            assert_eq!(memo.content_len(&empty), json_len(&empty));
        }
        for _ in 0..2 {
            for content in &contents {
                assert_eq!(memo.content_len(content), json_len(content), "{content:?}");
            }
        }
        assert_eq!(memo.responses.len(), 3);
        assert_eq!(memo.calls.len(), 2, "the unsigned calls");
        drop(contents);
        memo.forget_unused();
        assert!(memo.responses.is_empty());
        assert!(memo.calls.is_empty());
    }
}
