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

/// The live view of one command's output.
#[derive(Debug, Default)]
pub struct LiveOutput {
    shown: usize,
    tail: Vec<u8>,
    dropped: u64,
}

impl LiveOutput {
    /// Takes a chunk of output; returns the text to show now, if any.
    pub fn push(&mut self, chunk: &[u8]) -> Option<String> {
        let take = LIVE_HEAD_BYTES.saturating_sub(self.shown).min(chunk.len());
        self.shown += take;
        self.tail.extend_from_slice(&chunk[take..]);
        if self.tail.len() > 2 * LIVE_TAIL_BYTES {
            let excess = self.tail.len() - LIVE_TAIL_BYTES;
            self.tail.drain(..excess);
            self.dropped += excess as u64;
        }
        (take > 0).then(|| clean_text(&chunk[..take]))
    }

    /// What is left to show once the command stopped: the newest output, after a line
    /// saying how much was held back.
    pub fn finish(mut self) -> Option<String> {
        if self.tail.is_empty() {
            return None;
        }
        let excess = self.tail.len().saturating_sub(LIVE_TAIL_BYTES);
        self.dropped += excess as u64;
        let tail = clean_text(&self.tail[excess..]);
        if self.dropped == 0 {
            return Some(tail);
        }
        Some(format!(
            "… [{} bytes of output not shown live; the tool's result holds the output] …\n{tail}",
            self.dropped
        ))
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
    fn small_output_is_shown_whole() {
        let mut live = LiveOutput::default();
        assert_eq!(live.push(b"hello\n").as_deref(), Some("hello\n"));
        assert_eq!(live.finish(), None);
    }
}
