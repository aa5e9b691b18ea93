//! The write half of a stdio server's connection, with writes coalesced: rmcp writes
//! and flushes every message on its own (one `write` system call per call, each
//! behind a lock), so many calls at once cost a system call each. Here a write only
//! hands its bytes to a task of the connection's own, which writes whatever has
//! gathered in one go: under load, many messages per system call; alone, one message
//! at once as before. Dropping or shutting down the writer closes the server's stdin
//! once everything handed over is written.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// The most bytes one system call is given.
const MAX_BATCH: usize = 256 * 1024;

/// What rmcp writes to: hands the bytes on to the writing task.
pub struct Coalesced {
    tx: Option<mpsc::UnboundedSender<Vec<u8>>>,
}

/// Starts the task that writes to `sink` (a server's stdin) and gives the handle
/// rmcp writes to.
pub fn coalesce(sink: impl AsyncWrite + Unpin + Send + 'static) -> Coalesced {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(write_batches(sink, rx));
    Coalesced { tx: Some(tx) }
}

async fn write_batches(
    mut sink: impl AsyncWrite + Unpin,
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    let mut batch = Vec::new();
    while let Some(first) = rx.recv().await {
        batch.clear();
        batch.extend_from_slice(&first);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(more) => batch.extend_from_slice(&more),
                Err(_) => break,
            }
        }
        if sink.write_all(&batch).await.is_err() || sink.flush().await.is_err() {
            // The server's stdin is gone: writes from now on fail.
            return;
        }
    }
    let _ = sink.shutdown().await;
}

fn closed() -> io::Error {
    io::Error::new(
        io::ErrorKind::BrokenPipe,
        "the MCP server's stdin is closed",
    )
}

impl AsyncWrite for Coalesced {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let sent = match &self.tx {
            Some(tx) => tx.send(buf.to_vec()).is_ok(),
            None => false,
        };
        Poll::Ready(if sent { Ok(buf.len()) } else { Err(closed()) })
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(match &self.tx {
            Some(tx) if !tx.is_closed() => Ok(()),
            _ => Err(closed()),
        })
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.tx = None;
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn writes_arrive_in_order_and_shutdown_closes_the_sink() {
        let (ours, mut theirs) = tokio::io::duplex(1 << 20);
        let mut writer = coalesce(ours);
        for i in 0..100 {
            writer
                .write_all(format!("line {i}\n").as_bytes())
                .await
                .unwrap();
            writer.flush().await.unwrap();
        }
        writer.shutdown().await.unwrap();
        assert!(writer.write_all(b"late").await.is_err());
        let mut text = String::new();
        theirs.read_to_string(&mut text).await.unwrap();
        let expected: String = (0..100).map(|i| format!("line {i}\n")).collect();
        assert_eq!(text, expected);
    }
}
