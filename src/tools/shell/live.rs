//! What a running command shows live in the front end: bounded. The first
//! [`LIVE_HEAD_BYTES`] are forwarded as they come, then only the newest
//! [`LIVE_TAIL_BYTES`] are kept and shown when the command stops, after a line saying
//! how much was not shown. The tool's result (and the saved-output file) is built from
//! the command's own buffer, not from this.

use super::process::clean_text;

/// Output forwarded live before the rest is held back.
pub const LIVE_HEAD_BYTES: usize = 64 * 1024;
/// Newest output shown when the command stops, once the head is spent.
pub const LIVE_TAIL_BYTES: usize = 16 * 1024;

/// The live view of one command's output (the model's `run_shell_command` and the
/// REPL's own `!` commands share it).
#[derive(Debug, Default)]
pub struct LiveOutput {
    shown: usize,
    tail: Vec<u8>,
    dropped: u64,
    /// The end of the shown head when it stopped inside a UTF-8 character.
    partial: Vec<u8>,
    /// Show the bytes as they are (escape sequences kept) instead of cleaned text.
    raw: bool,
}

impl LiveOutput {
    /// A view that shows the output as the command wrote it (ANSI colours kept): for
    /// the user's own `!` commands.
    pub fn raw() -> Self {
        Self {
            raw: true,
            ..Self::default()
        }
    }

    fn text(&self, bytes: &[u8]) -> String {
        if self.raw {
            String::from_utf8_lossy(bytes).into_owned()
        } else {
            clean_text(bytes)
        }
    }

    /// Takes a chunk of output; returns the text to show now, if any.
    pub fn push(&mut self, chunk: &[u8]) -> Option<String> {
        let take = LIVE_HEAD_BYTES.saturating_sub(self.shown).min(chunk.len());
        self.shown += take;
        let mut head = std::mem::take(&mut self.partial);
        head.extend_from_slice(&chunk[..take]);
        if take < chunk.len() || self.shown >= LIVE_HEAD_BYTES {
            // The head is spent: a character it cut goes on in the tail.
            self.tail
                .extend_from_slice(&head[complete_utf8_len(&head)..]);
            head.truncate(complete_utf8_len(&head));
        } else {
            let whole = complete_utf8_len(&head);
            self.partial = head.split_off(whole);
        }
        self.tail.extend_from_slice(&chunk[take..]);
        if self.tail.len() > 2 * LIVE_TAIL_BYTES {
            let excess = self.tail.len() - LIVE_TAIL_BYTES;
            self.tail.drain(..excess);
            self.dropped += excess as u64;
        }
        (!head.is_empty()).then(|| self.text(&head))
    }

    /// What is left to show once the command stopped: the newest output, after a line
    /// saying how much was held back.
    pub fn finish(mut self) -> Option<String> {
        if !self.partial.is_empty() {
            let partial = std::mem::take(&mut self.partial);
            return Some(self.text(&partial));
        }
        if self.tail.is_empty() {
            return None;
        }
        let mut excess = self.tail.len().saturating_sub(LIVE_TAIL_BYTES);
        // Start the tail at a character, not inside one.
        while excess < self.tail.len() && (self.tail[excess] & 0xC0) == 0x80 {
            excess += 1;
        }
        self.dropped += excess as u64;
        let tail = self.text(&self.tail[excess..]);
        if self.dropped == 0 {
            return Some(tail);
        }
        Some(format!(
            "… [{} bytes of output not shown live; {}] …\n{tail}",
            self.dropped,
            if self.raw {
                "the conversation gets the first 10,000 characters"
            } else {
                "the tool's result holds the output"
            }
        ))
    }
}

/// How many leading bytes of `bytes` are whole UTF-8 characters (or invalid bytes,
/// which are shown replaced): all but an incomplete character at the very end.
fn complete_utf8_len(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(e) => {
            let after = e.valid_up_to() + e.error_len().unwrap_or(1);
            after + complete_utf8_len(&bytes[after..])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifty_megabytes_show_as_head_and_tail() {
        let mut live = LiveOutput::default();
        let line = [b'x'; 99];
        let mut shown = 0;
        for i in 0..500_000u32 {
            let mut chunk = line.to_vec();
            chunk.extend_from_slice(format!("{i}\n").as_bytes());
            shown += live.push(&chunk).map_or(0, |t| t.len());
            assert!(live.tail.len() <= 2 * LIVE_TAIL_BYTES + 200);
        }
        assert!(shown <= LIVE_HEAD_BYTES);
        let end = live.finish().expect("tail");
        assert!(end.len() < LIVE_TAIL_BYTES + 200);
        assert!(end.contains("not shown live"), "{}", &end[..100]);
        assert!(end.ends_with("499999\n"));
    }

    #[test]
    fn a_character_cut_between_chunks_is_shown_whole() {
        let mut live = LiveOutput::raw();
        let text = "né é\n".as_bytes();
        let (a, b) = text.split_at(2);
        let first = live.push(a).unwrap_or_default();
        let second = live.push(b).unwrap_or_default();
        assert_eq!(first + &second, "né é\n");
        assert_eq!(live.finish(), None);
    }

    #[test]
    fn raw_keeps_colours_and_clean_strips_them() {
        let coloured = b"\x1b[31mred\x1b[0m\n";
        assert_eq!(
            LiveOutput::raw().push(coloured).as_deref(),
            Some("\x1b[31mred\x1b[0m\n")
        );
        assert_eq!(
            LiveOutput::default().push(coloured).as_deref(),
            Some("red\n")
        );
    }

    #[test]
    fn small_output_is_shown_whole() {
        let mut live = LiveOutput::default();
        assert_eq!(live.push(b"hello\n").as_deref(), Some("hello\n"));
        assert_eq!(live.finish(), None);
    }
}
