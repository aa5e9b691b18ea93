//! The ACP connection's stdio, one JSON-RPC message a line. Unlike the crate's own
//! `Stdio` (which reads lines as UTF-8 and ends the connection on the first line that
//! is not), a line that is not UTF-8 reaches the JSON-RPC layer as a line that is not
//! JSON: the client gets a parse error (-32700) and the connection stays up.

use std::io::{BufRead, Write};

use agent_client_protocol::Lines;
use futures::{SinkExt, Stream};

/// What a line that is not UTF-8 is read as (not JSON: a parse error answers it).
fn not_utf8(bytes: usize) -> String {
    format!("<a line of {bytes} bytes that is not UTF-8>")
}

/// Stdin's lines, read on a thread of their own (a blocking read never holds an
/// arbiter); the stream ends with stdin.
fn stdin_lines() -> impl Stream<Item = std::io::Result<String>> + Send + 'static {
    let (mut tx, rx) = futures::channel::mpsc::channel(16);
    let spawned = std::thread::Builder::new()
        .name("troupe-acp-stdin".into())
        .spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut buf = Vec::new();
            loop {
                buf.clear();
                let line = match stdin.read_until(b'\n', &mut buf) {
                    Ok(0) => return,
                    Ok(_) => {
                        let end = buf
                            .strip_suffix(b"\n")
                            .map(|b| b.strip_suffix(b"\r").unwrap_or(b))
                            .unwrap_or(&buf);
                        Ok(match std::str::from_utf8(end) {
                            Ok(text) => text.to_string(),
                            Err(_) => not_utf8(end.len()),
                        })
                    }
                    Err(e) => Err(e),
                };
                let failed = line.is_err();
                if futures::executor::block_on(tx.send(line)).is_err() || failed {
                    return;
                }
            }
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start the thread reading stdin");
    }
    rx
}

/// Writes one line to stdout (off the arbiter) and flushes it.
async fn write_line(line: String) -> std::io::Result<()> {
    tokio::task::spawn_blocking(move || {
        let mut out = std::io::stdout().lock();
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
        out.flush()
    })
    .await
    .map_err(std::io::Error::other)?
}

/// The transport `troupe --acp` serves on: stdin's lines in, stdout's lines out.
pub fn transport() -> Lines<
    impl futures::Sink<String, Error = std::io::Error> + Send + 'static,
    impl Stream<Item = std::io::Result<String>> + Send + 'static,
> {
    let outgoing =
        futures::sink::unfold((), |(), line: String| async move { write_line(line).await });
    Lines::new(Box::pin(outgoing), Box::pin(stdin_lines()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_line_that_is_not_utf8_is_not_json() {
        let line = super::not_utf8(3);
        assert!(serde_json::from_str::<serde_json::Value>(&line).is_err());
        assert!(line.contains("not UTF-8"));
    }
}
