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
    let piped = match stdin_kind() {
        StdinKind::Empty => None,
        StdinKind::File => read_file(),
        StdinKind::Stream => read_piped(),
    };
    match piped {
        Some(text) if !text.trim().is_empty() => format!("{text}\n\n{prompt}"),
        _ => prompt,
    }
}

/// What standard input is, when it is not a terminal.
enum StdinKind {
    /// `/dev/null`: nothing to read.
    Empty,
    /// A regular file (`troupe -p x < notes.txt`): read at once, it cannot block.
    File,
    /// A pipe, a socket or anything else: read by a thread, with a deadline.
    Stream,
}

fn stdin_kind() -> StdinKind {
    let Ok(stat) = rustix::fs::fstat(std::io::stdin()) else {
        return StdinKind::Stream;
    };
    match rustix::fs::FileType::from_raw_mode(stat.st_mode) {
        rustix::fs::FileType::RegularFile => StdinKind::File,
        rustix::fs::FileType::CharacterDevice
            if std::fs::metadata("/dev/null")
                .is_ok_and(|null| std::os::unix::fs::MetadataExt::rdev(&null) == stat.st_rdev) =>
        {
            StdinKind::Empty
        }
        _ => StdinKind::Stream,
    }
}

fn read_file() -> Option<String> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_PIPED_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(piped_text(bytes))
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
    while let Ok(chunk) = rx.recv() {
        if bytes.len() + chunk.len() > MAX_PIPED_BYTES {
            bytes.extend_from_slice(&chunk[..=MAX_PIPED_BYTES.saturating_sub(bytes.len())]);
            break;
        }
        bytes.extend_from_slice(&chunk);
    }
    Some(piped_text(bytes))
}

/// The text of what was read; more than [`MAX_PIPED_BYTES`] is cut, and says so.
fn piped_text(mut bytes: Vec<u8>) -> String {
    let cut = bytes.len() > MAX_PIPED_BYTES;
    bytes.truncate(MAX_PIPED_BYTES);
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if cut {
        text.push_str(&format!(
            "\n[troupe: piped input cut at {MAX_PIPED_BYTES} bytes]"
        ));
    }
    text
}
