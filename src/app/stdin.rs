//! Piped input for a headless run: `cat log.txt | troupe -p "why does this fail?"`
//! sends the piped text ahead of the prompt, as gemini-cli does.

use std::io::{IsTerminal, Read};
use std::sync::mpsc;
use std::time::Duration;

/// Piped text beyond this many bytes is cut (and says so).
pub const MAX_PIPED_BYTES: usize = 8 * 1024 * 1024;

/// How long to wait for a first byte before deciding nothing is piped (an open pipe
/// nobody writes to must not hang the run).
const FIRST_BYTE_WAIT: Duration = Duration::from_millis(500);

/// The prompt with piped standard input, if any, placed before it.
pub fn with_piped_input(prompt: String) -> String {
    if std::io::stdin().is_terminal() {
        return prompt;
    }
    match read_piped() {
        Some(text) if !text.trim().is_empty() => format!("{text}\n\n{prompt}"),
        _ => prompt,
    }
}

fn read_piped() -> Option<String> {
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    std::thread::Builder::new()
        .name("troupe-stdin".into())
        .spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match stdin.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if tx.send(buf[..n].to_vec()).is_err() {
                            break;
                        }
                    }
                }
            }
        })
        .ok()?;
    let mut bytes = rx.recv_timeout(FIRST_BYTE_WAIT).ok()?;
    let mut cut = false;
    while let Ok(chunk) = rx.recv() {
        if bytes.len() + chunk.len() > MAX_PIPED_BYTES {
            bytes.extend_from_slice(&chunk[..MAX_PIPED_BYTES.saturating_sub(bytes.len())]);
            cut = true;
            break;
        }
        bytes.extend_from_slice(&chunk);
    }
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if cut {
        text.push_str(&format!(
            "\n[troupe: piped input cut at {MAX_PIPED_BYTES} bytes]"
        ));
    }
    Some(text)
}
