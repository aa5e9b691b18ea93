//! `/compress`: says that it started and what it does, shows that it is still at work
//! while a slow model writes the summary, reports the token counts before and after,
//! and moves the context gauge of the status line to the shortened history.

use std::time::{Duration, Instant};

use crate::protocol::{CompressionOutcome, Op, OpReply};

use super::status::context_left;
use super::terminal::Palette;
use super::SessionLink;

/// How often the user hears that the summary is still being written.
const STILL_AT_WORK: Duration = Duration::from_secs(10);

/// Runs a forced compression; returns the lines that end it.
pub fn compress(link: &SessionLink, p: Palette) -> Vec<String> {
    let left_before = context_left(link);
    let last_prompt = last_prompt_tokens(link);
    println!(
        "{}",
        p.dim(&format!(
            "  ℹ Compressing the conversation: the model is summarising the older history (the last prompt was {last_prompt} tokens)…"
        ))
    );
    let (stop, stopped) = crossbeam_channel::bounded::<()>(0);
    let ticker = std::thread::spawn(move || {
        let started = Instant::now();
        while let Err(crossbeam_channel::RecvTimeoutError::Timeout) =
            stopped.recv_timeout(STILL_AT_WORK)
        {
            println!(
                "{}",
                p.dim(&format!(
                    "  … still summarising ({} s)",
                    started.elapsed().as_secs()
                ))
            );
        }
    });
    let outcome = link.request(Op::Compress { force: true });
    drop(stop);
    let _ = ticker.join();
    match outcome {
        Ok(OpReply::Compression(CompressionOutcome::Compressed {
            tokens_before,
            tokens_after,
        })) => {
            shrink_gauge(link, tokens_before, tokens_after);
            vec![
                p.green(&format!(
                    "Conversation compressed from {tokens_before} to {tokens_after} tokens."
                )),
                p.dim(&format!(
                    "  Context left: {left_before}% → {}%.",
                    context_left(link)
                )),
            ]
        }
        Ok(OpReply::Compression(CompressionOutcome::Noop { reason })) => {
            vec![p.dim(&format!("Nothing compressed: {reason}"))]
        }
        Ok(OpReply::Compression(CompressionOutcome::Failed { reason })) => {
            vec![p.red(&format!("Compression failed: {reason}"))]
        }
        Ok(_) => Vec::new(),
        Err(e) => vec![p.red(&format!("The chat is unavailable: {e}"))],
    }
}

fn last_prompt_tokens(link: &SessionLink) -> u64 {
    link.stats
        .lock()
        .map(|s| s.settled().last_prompt_tokens)
        .unwrap_or(0)
}

/// The gauge follows the last prompt's size, which only the next request would
/// report: the prompt is taken to have shrunk by what the history lost (never below
/// the new history).
fn shrink_gauge(link: &SessionLink, tokens_before: u64, tokens_after: u64) {
    let Ok(mut stats) = link.stats.lock() else {
        return;
    };
    // The request in flight's usage is folded in now, so the next request cannot put
    // the old size back.
    *stats = stats.settled();
    let cut = tokens_before.saturating_sub(tokens_after);
    stats.last_prompt_tokens = stats
        .last_prompt_tokens
        .saturating_sub(cut)
        .max(tokens_after);
}
