//! The curated history of a growing session, kept from one request to the next: each
//! request adds only what the history gained since the last one (curating and
//! measuring the whole history for every request made every turn of a long session
//! cost as much as all the turns before it). Pure logic.

use std::sync::Arc;

use super::context_budget::{plan_fit, Fit};
use super::history::{curated, is_valid_model_turn};
use crate::protocol::content::{Content, Role};

/// [`curated`] history, shared with the requests made from it, and the sizes of its
/// contents. History entries `..done` are curated into `contents[..fixed]` for good:
/// `done` follows a complete, valid model answer and starts a user turn, so nothing
/// added later changes what comes before it (no model run crosses it, no input before
/// it is dropped, no turns merge across it). What follows is curated anew each time.
#[derive(Debug, Default)]
pub struct RequestHistory {
    done: usize,
    fixed: usize,
    contents: Arc<Vec<Content>>,
    /// The size of each content of `contents`.
    sizes: Vec<u64>,
    /// The sum of `sizes[..fixed]`.
    fixed_total: u64,
    /// History entry `done - 1`, to tell a history that is no longer the one curated.
    last: Option<Content>,
}

impl RequestHistory {
    /// Forgets everything (the history was replaced or cut back).
    pub fn reset(&mut self) {
        *self = Self::default();
    }

    /// The request contents for `history` ([`curated`], then fitted to `window` tokens
    /// after `prefix` as [`super::context_budget::fit_history`] does) and how many
    /// contents were left out. `size` measures a content not measured before. When the
    /// history fits, the contents are the shared ones, not a copy.
    pub fn contents(
        &mut self,
        history: &[Content],
        prefix: u64,
        window: u64,
        mut size: impl FnMut(&Content) -> usize,
    ) -> (Arc<Vec<Content>>, usize) {
        let same = history.len() >= self.done
            && match self.done {
                0 => true,
                n => self.last.as_ref() == Some(&history[n - 1]),
            };
        if !same {
            self.reset();
        }
        // Only an unshared vector changes in place (the last request is gone by now).
        let contents = Arc::make_mut(&mut self.contents);
        contents.truncate(self.fixed);
        self.sizes.truncate(self.fixed);
        if let Some(cut) = last_cut(history, self.done) {
            for content in curated(&history[self.done..cut]) {
                let measured = size(&content) as u64;
                self.fixed_total += measured;
                self.sizes.push(measured);
                contents.push(content);
            }
            self.fixed = contents.len();
            self.done = cut;
            self.last = Some(history[cut - 1].clone());
        }
        let mut total = self.fixed_total;
        for content in curated(&history[self.done..]) {
            let measured = size(&content) as u64;
            total += measured;
            self.sizes.push(measured);
            contents.push(content);
        }
        let fit = plan_fit(contents, &self.sizes, total, prefix, window);
        let dropped = fit.dropped();
        if dropped == 0 {
            return (self.contents.clone(), 0);
        }
        (Arc::new(kept(&self.contents, fit)), dropped)
    }
}

fn kept(contents: &[Content], fit: Fit) -> Vec<Content> {
    contents
        .iter()
        .enumerate()
        .filter(|(i, _)| fit.keeps(*i))
        .map(|(_, c)| c.clone())
        .collect()
}

/// The last index after `from` where the history can be cut for good: a user entry
/// right after a run of model turns that are all valid (and so kept whole).
fn last_cut(history: &[Content], from: usize) -> Option<usize> {
    let mut cut = history.len();
    while cut > from + 1 {
        cut -= 1;
        if history[cut].role != Role::User || history[cut - 1].role != Role::Model {
            continue;
        }
        let mut start = cut - 1;
        while start > from && history[start - 1].role == Role::Model {
            start -= 1;
        }
        if history[start..cut].iter().all(is_valid_model_turn) {
            return Some(cut);
        }
        cut = start;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compression::json_len;
    use crate::context_budget::fit_history;
    use crate::protocol::content::{FunctionCall, FunctionResponse, Part};
    use serde_json::json;

    fn call(id: &str) -> Content {
        Content {
            role: Role::Model,
            parts: vec![Part::function_call(FunctionCall {
                id: Some(id.into()),
                name: "read_file".into(),
                args: json!({"file_path": id}),
            })],
        }
    }

    fn response(id: &str) -> Content {
        Content {
            role: Role::User,
            parts: vec![Part::function_response(FunctionResponse {
                id: Some(id.into()),
                name: "read_file".into(),
                response: json!({"output": format!("the text of {id}")}),
                parts: None,
            })],
        }
    }

    fn empty_answer() -> Content {
        Content {
            role: Role::Model,
            parts: vec![Part::text("")],
        }
    }

    /// Every way a history grows, one entry at a time: each request equals the one
    /// made from the whole history.
    #[test]
    fn each_request_is_the_one_made_from_the_whole_history() {
        let entries = vec![
            Content::user_text("a"),
            call("1"),
            response("1"),
            call("2"),
            call("3"),
            response("2"),
            empty_answer(),
            Content::user_text("b"),
            empty_answer(),
            Content::user_text("c"),
            Content::model_text("fine"),
            Content::model_text("and more"),
            Content::user_text("d"),
            call("4"),
            response("4"),
            Content::user_text("e"),
            empty_answer(),
            Content::model_text("after an empty one"),
            Content::user_text("f"),
        ];
        for (prefix, window) in [(0, u64::MAX / 2), (10, 60)] {
            let mut cache = RequestHistory::default();
            for n in 1..=entries.len() {
                let history = &entries[..n];
                let (contents, dropped) = cache.contents(history, prefix, window, json_len);
                let expected = fit_history(curated(history), prefix, window, json_len);
                assert_eq!((contents.to_vec(), dropped), expected, "after {n} entries");
            }
        }
    }

    /// A prompt and two reads with their answers.
    fn two_reads() -> [Content; 5] {
        [
            Content::user_text("a"),
            call("1"),
            response("1"),
            call("2"),
            response("2"),
        ]
    }

    #[test]
    fn a_replaced_history_is_curated_anew() {
        let mut cache = RequestHistory::default();
        let long = two_reads();
        let (first, _) = cache.contents(&long, 0, u64::MAX / 2, json_len);
        assert_eq!(first.len(), 5);
        drop(first);
        let other = [
            Content::user_text("x"),
            Content::model_text("y"),
            Content::user_text("z"),
            call("9"),
            response("9"),
        ];
        let (second, _) = cache.contents(&other, 0, u64::MAX / 2, json_len);
        assert_eq!(second.to_vec(), curated(&other));
        let (shorter, _) = cache.contents(&other[..2], 0, u64::MAX / 2, json_len);
        assert_eq!(shorter.to_vec(), curated(&other[..2]));
    }

    #[test]
    fn a_request_still_held_is_not_changed() {
        let mut cache = RequestHistory::default();
        let history = two_reads();
        let (held, _) = cache.contents(&history[..3], 0, u64::MAX / 2, json_len);
        let (next, _) = cache.contents(&history, 0, u64::MAX / 2, json_len);
        assert_eq!(held.to_vec(), curated(&history[..3]));
        assert_eq!(next.to_vec(), curated(&history));
    }
}
