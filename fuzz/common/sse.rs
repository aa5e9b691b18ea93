//! Feeds a body through Troupe's SSE reader (`providers::http::sse_data`), as a server
//! would send it in chunks. Shared by the stream-parser targets.

use std::sync::OnceLock;
use std::time::Duration;

use futures::StreamExt;
use troupe::providers::http::{sse_data, SseData, Timeouts};

/// Bodies up to this long are also delivered one byte per chunk.
const BYTEWISE_MAX: usize = 256;

/// What the reader made of a body: each event's data and whether it was left open, or
/// the error that ended the stream.
pub type Events = Vec<Result<SseData, String>>;

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("tokio runtime")
    })
}

/// The events of `body` delivered in pieces of the given sizes (the rest in one).
pub fn events(body: &[u8], cuts: &[usize]) -> Events {
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    let mut at = 0;
    for &cut in cuts {
        let end = (at + cut).min(body.len());
        chunks.push(body[at..end].to_vec());
        at = end;
    }
    chunks.push(body[at..].to_vec());
    runtime().block_on(async move {
        let stream = futures::stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok::<_, std::io::Error>(bytes::Bytes::from(c))),
        );
        let response = http::Response::builder()
            .header("content-type", "text/event-stream")
            .body(reqwest::Body::wrap_stream(stream))
            .expect("response");
        let timeouts = Timeouts {
            connect: Duration::from_secs(60),
            first_byte: Duration::from_secs(60),
            idle: Duration::from_secs(60),
        };
        sse_data("fuzz", reqwest::Response::from(response), timeouts)
            .map(|e| e.map_err(|e| e.to_string()))
            .collect()
            .await
    })
}

/// Splits fuzz input into chunk sizes (first byte: how many, then one byte each) and
/// the body; checks the SSE framing invariants and returns the events of the whole body.
pub fn framed(data: &[u8]) -> (Events, Vec<u8>) {
    let (cuts, body) = match data.split_first() {
        Some((&n, rest)) => {
            let n = usize::from(n % 16).min(rest.len());
            let cuts: Vec<usize> = rest[..n].iter().map(|&c| usize::from(c % 32) + 1).collect();
            (cuts, rest[n..].to_vec())
        }
        None => (Vec::new(), Vec::new()),
    };
    let whole = events(&body, &[]);
    let cut = events(&body, &cuts);
    assert_eq!(
        whole, cut,
        "delivering in chunks {cuts:?} changed the events"
    );
    // Byte by byte too, for bodies short enough to keep the fuzzer fast.
    if body.len() <= BYTEWISE_MAX {
        let bytewise = events(&body, &vec![1; body.len()]);
        assert_eq!(
            whole, bytewise,
            "delivering byte by byte changed the events"
        );
    }
    let count = whole.len();
    for (i, event) in whole.iter().enumerate() {
        match event {
            Ok(sse) => {
                assert!(!sse.data.is_empty(), "an event without data was delivered");
                assert!(
                    !sse.unterminated || i + 1 == count,
                    "an event before the last is marked unterminated"
                );
            }
            Err(_) => assert_eq!(i + 1, count, "events after an error"),
        }
    }
    (whole, body)
}
