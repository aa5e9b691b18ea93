//! History compression (gemini-cli's `chatCompressionService`, spec §9.6), the pure
//! part: when to compress, where to split, the summary request, the new history, and
//! whether a summary is worth keeping. The Chat actor makes the model call.

use serde_json::Value;

use crate::protocol::content::{Content, Role};

/// Function-response tokens kept verbatim, newest first, before the rest are shortened.
pub const FUNCTION_RESPONSE_TOKEN_BUDGET: u64 = 50_000;

/// What the model "says" after the summary, so the history keeps alternating roles.
pub const SUMMARY_ACK: &str = "Got it. Thanks for the additional context!";

/// Characters kept of an old function response that is over the budget.
const TRUNCATED_RESPONSE_CHARS: usize = 1_000;

/// The system instruction of the summary call.
pub const COMPRESSION_SYSTEM_PROMPT: &str = "\
You compress the history of a conversation between a user and a coding agent into a \
state snapshot the agent will continue from; it will not see the original history \
again. Keep everything needed to carry on: the user's goal and constraints, decisions \
made, facts learned about the code (file paths, names, commands and their results), \
files changed and how, errors met and their fixes, and the open tasks in order. Drop \
chit-chat and anything superseded. Be dense and exact; never invent.

Answer with a single <state_snapshot> element containing these sections:
<overall_goal/>, <key_knowledge/>, <file_system_state/>, <recent_actions/>, <current_plan/>.";

/// Why a compression could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompressionError {
    #[error("Fraction must be between 0 and 1")]
    BadFraction,
}

/// Size of a content the way gemini-cli counts it: its JSON, in UTF-16 units.
pub fn json_len(content: &Content) -> usize {
    json_len_of(content)
}

/// Size of anything's JSON, in UTF-16 units.
pub fn json_len_of<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    let mut counter = Utf16Counter(0);
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        Err(_) => 0,
    }
}

/// Counts the UTF-16 code units of the UTF-8 written to it, without keeping the text
/// (a history of 100,000 tool results is not serialised into one string to be measured).
struct Utf16Counter(usize);

impl std::io::Write for Utf16Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // One unit per character (every byte but continuation bytes), two for the
        // characters of four UTF-8 bytes (lead byte 0xF0 and above).
        self.0 += buf
            .iter()
            .map(|&b| usize::from(b & 0xC0 != 0x80) + usize::from(b >= 0xF0))
            .sum::<usize>();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A rough token count: four characters of JSON per token.
pub fn estimate_tokens(contents: &[Content]) -> u64 {
    contents.iter().map(|c| json_len(c) as u64).sum::<u64>() / 4
}

fn is_plain_user(content: &Content) -> bool {
    content.role == Role::User && !content.has_function_response()
}

/// gemini-cli's `findCompressSplitPoint`: the first user message (not a function
/// response) before which at least `fraction` of the history lies; failing that, the
/// whole history when it ends with a model answer without calls, else the last such
/// user message.
pub fn find_split_point(contents: &[Content], fraction: f64) -> Result<usize, CompressionError> {
    if fraction <= 0.0 || fraction >= 1.0 {
        return Err(CompressionError::BadFraction);
    }
    let sizes: Vec<usize> = contents.iter().map(json_len).collect();
    let target = sizes.iter().sum::<usize>() as f64 * fraction;
    let mut last_candidate = 0;
    let mut cumulative = 0usize;
    for (i, content) in contents.iter().enumerate() {
        if is_plain_user(content) {
            if cumulative as f64 >= target {
                return Ok(i);
            }
            last_candidate = i;
        }
        cumulative += sizes[i];
    }
    match contents.last() {
        Some(last) if last.role == Role::Model && last.function_calls().next().is_none() => {
            Ok(contents.len())
        }
        _ => Ok(last_candidate),
    }
}

/// Walks the function responses from the newest back; once their tokens pass
/// `budget`, older `output`s are cut to their start with a note of what was dropped.
pub fn truncate_function_responses(contents: &mut [Content], budget: u64) {
    let mut used = 0u64;
    for content in contents.iter_mut().rev() {
        for part in content.parts.iter_mut().rev() {
            let Some(fr) = part
                .function_response
                .as_mut()
                .map(std::sync::Arc::make_mut)
            else {
                continue;
            };
            let tokens = fr.response.to_string().len() as u64 / 4;
            used += tokens;
            if used <= budget {
                continue;
            }
            if let Some(Value::String(output)) = fr.response.get_mut("output") {
                let total = output.chars().count();
                if total > TRUNCATED_RESPONSE_CHARS {
                    let kept: String = output.chars().take(TRUNCATED_RESPONSE_CHARS).collect();
                    *output = format!(
                        "{kept}\n... [{} more characters dropped to compress the history]",
                        total - TRUNCATED_RESPONSE_CHARS
                    );
                }
            }
        }
    }
}

/// The contents of the summary call: the history to compress, then the instruction.
pub fn summary_request(to_compress: &[Content]) -> Vec<Content> {
    let previous = to_compress
        .first()
        .is_some_and(|c| c.role == Role::User && c.text().contains("<state_snapshot>"));
    let ask = if previous {
        "The history above starts with an earlier <state_snapshot>. Merge it with \
         everything that happened since into one new <state_snapshot>."
    } else {
        "Write the <state_snapshot> of the history above."
    };
    let mut contents = to_compress.to_vec();
    contents.push(Content::user_text(ask));
    contents
}

/// The history after compression: the summary, the acknowledgement, then the kept part.
pub fn compressed_history(summary: &str, keep: &[Content]) -> Vec<Content> {
    let mut out = vec![
        Content::user_text(summary),
        Content::model_text(SUMMARY_ACK),
    ];
    out.extend_from_slice(keep);
    out
}

/// How a summary was judged.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Use the new history.
    Keep {
        tokens_before: u64,
        tokens_after: u64,
    },
    /// The model returned nothing.
    Empty,
    /// The new history would be larger than the old one.
    Inflated {
        tokens_before: u64,
        tokens_after: u64,
    },
}

/// Keeps a summary only when it is not empty and makes the history smaller.
pub fn judge(original: &[Content], new_history: &[Content], summary: &str) -> Verdict {
    if summary.trim().is_empty() {
        return Verdict::Empty;
    }
    let tokens_before = estimate_tokens(original);
    let tokens_after = estimate_tokens(new_history);
    if tokens_after > tokens_before {
        return Verdict::Inflated {
            tokens_before,
            tokens_after,
        };
    }
    Verdict::Keep {
        tokens_before,
        tokens_after,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::content::{FunctionCall, FunctionResponse, Part};
    use serde_json::json;

    fn call_turn() -> Content {
        Content {
            role: Role::Model,
            parts: vec![Part::function_call(FunctionCall {
                id: Some("1".into()),
                name: "ls".into(),
                args: json!({}),
            })],
        }
    }

    fn response_turn(output: &str) -> Content {
        Content {
            role: Role::User,
            parts: vec![Part::function_response(FunctionResponse {
                id: Some("1".into()),
                name: "ls".into(),
                response: json!({ "output": output }),
                parts: None,
            })],
        }
    }

    #[test]
    fn split_lands_on_a_user_message() {
        let history = vec![
            Content::user_text("a".repeat(100)),
            Content::model_text("b".repeat(100)),
            Content::user_text("c".repeat(100)),
            call_turn(),
            response_turn(&"d".repeat(100)),
            Content::model_text("e"),
            Content::user_text("f"),
            Content::model_text("g"),
        ];
        // 70 % of the size lies before the last plain user message only.
        assert_eq!(find_split_point(&history, 0.7).unwrap(), 6);
        assert_eq!(find_split_point(&history, 0.3).unwrap(), 2);
        // Nothing qualifies and the last turn answered: everything may go.
        assert_eq!(find_split_point(&history[..6], 0.99).unwrap(), 6);
        // Nothing qualifies and the last turn is a call: the last user message.
        assert_eq!(find_split_point(&history[..4], 0.99).unwrap(), 2);
        assert_eq!(
            find_split_point(&history, 1.0),
            Err(CompressionError::BadFraction)
        );
    }

    #[test]
    fn old_large_responses_are_cut_newest_kept() {
        let mut history = vec![
            response_turn(&"x".repeat(8_000)),
            response_turn(&"y".repeat(8_000)),
        ];
        truncate_function_responses(&mut history, 2_500);
        let out = |c: &Content| {
            c.parts[0].function_response.as_deref().unwrap().response["output"]
                .as_str()
                .unwrap()
                .to_string()
        };
        assert_eq!(out(&history[1]).len(), 8_000);
        assert!(out(&history[0]).starts_with(&"x".repeat(1_000)));
        assert!(
            out(&history[0]).ends_with("[7000 more characters dropped to compress the history]")
        );
    }

    #[test]
    fn summaries_that_do_not_help_are_rejected() {
        let original = vec![
            Content::user_text("q".repeat(400)),
            Content::model_text("a".repeat(400)),
        ];
        let small = compressed_history("short", &[]);
        assert!(matches!(
            judge(&original, &small, "short"),
            Verdict::Keep { .. }
        ));
        let big = "s".repeat(2_000);
        let inflated = compressed_history(&big, &[]);
        assert!(matches!(
            judge(&original, &inflated, &big),
            Verdict::Inflated { .. }
        ));
        assert_eq!(judge(&original, &small, "  "), Verdict::Empty);
    }
}
