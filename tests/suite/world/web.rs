//! `web_fetch` against a real HTTP server on 127.0.0.1.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::common::*;

const PAGE: &str = "<html><head><title>Test page</title><script>var secret = 'script text';</script></head><body><h1>Greetings</h1><p>Hello from the test page.</p><p>Second paragraph.</p></body></html>";

/// A tiny HTTP/1.1 server on 127.0.0.1: `/page` is HTML, `/to-private` and
/// `/to-metadata` redirect to addresses that must never be fetched, `/hop` redirects
/// to `/page`. Counts the requests it serves.
struct TestServer {
    port: u16,
    hits: Arc<AtomicUsize>,
}

impl TestServer {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().take(64) {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    continue;
                }
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok() && line.trim() != "" {
                    line.clear();
                }
                counter.fetch_add(1, Ordering::SeqCst);
                let path = request_line.split_whitespace().nth(1).unwrap_or("/");
                let big = "x".repeat(5000);
                let (status, extra, body) = match path {
                    "/big" => ("200 OK", "Content-Type: text/plain\r\n", big.as_str()),
                    "/page" => ("200 OK", "Content-Type: text/html; charset=utf-8\r\n", PAGE),
                    "/hop" => ("302 Found", "Location: /page\r\n", ""),
                    "/to-private" => ("302 Found", "Location: http://10.0.0.1/secret\r\n", ""),
                    "/to-metadata" => (
                        "301 Moved Permanently",
                        "Location: http://169.254.169.254/latest/meta-data/\r\n",
                        "",
                    ),
                    _ => ("404 Not Found", "", "missing"),
                };
                let response = format!(
                    "HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes());
            }
        });
        Self { port, hits }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// A `generateContent` answer (the model's processing of fetched content).
fn generated(text: &str) -> Value {
    json!({"method": "generateContent", "response": {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}]
    }})
}

fn first_response(s: &Scratch) -> Value {
    function_responses(&s.requests()[1])[0]["response"].clone()
}

const LOOPBACK_ON: [&str; 2] = ["-c", "web_fetch.allow_loopback=true"];

#[test]
fn loopback_is_refused_as_private_by_default() {
    let server = TestServer::start();
    let s = Scratch::new();
    let url = server.url("/page");
    let turns = [
        turn(vec![call(
            "web_fetch",
            json!({"prompt": format!("Summarize {url}")}),
        )]),
        turn(vec![text("refused")]),
    ];
    let (out, proc) = s.run_json(&turns, &["-p", "go", "--yolo"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    assert_eq!(
        first_response(&s)["error"],
        format!("All requested URLs were skipped: [Blocked Host] {url}")
    );
    assert_eq!(out["stats"]["tools"]["totalFail"], 1);
    assert_eq!(server.hits(), 0, "the private address was contacted");
}

#[test]
fn with_the_test_switch_a_page_is_fetched_and_processed_by_the_model() {
    let server = TestServer::start();
    let s = Scratch::new();
    let turns = [
        turn(vec![call(
            "web_fetch",
            json!({"prompt": format!("What does {} say?", server.url("/page"))}),
        )]),
        generated("The page greets the reader."),
        turn(vec![text("done")]),
    ];
    let mut args = vec!["-p", "go", "--yolo"];
    args.extend(LOOPBACK_ON);
    let (_, proc) = s.run_json(&turns, &args);
    assert!(proc.status.success(), "{}", stderr(&proc));
    assert_eq!(
        first_response(&s)["output"],
        "<untrusted_context>\nThe page greets the reader.\n</untrusted_context>"
    );
    assert_eq!(server.hits(), 1);
}

#[test]
fn without_a_model_answer_the_page_text_itself_is_returned() {
    let server = TestServer::start();
    let s = Scratch::new();
    let url = server.url("/hop");
    let turns = [
        turn(vec![call(
            "web_fetch",
            json!({"prompt": format!("Summarize {url}")}),
        )]),
        turn(vec![text("done")]),
    ];
    let mut args = vec!["-p", "go", "--yolo"];
    args.extend(LOOPBACK_ON);
    let (_, proc) = s.run_json(&turns, &args);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let output = first_response(&s)["output"].as_str().unwrap().to_string();
    assert!(
        output.starts_with(
            "<untrusted_context>\nThe fetched content could not be processed by the model"
        ),
        "{output}"
    );
    assert!(
        output.contains(&format!("<source url=\"{url}\">")),
        "{output}"
    );
    assert!(output.contains("Hello from the test page."), "{output}");
    assert!(output.contains("Second paragraph."), "{output}");
    assert!(!output.contains("<p>"), "HTML was not converted: {output}");
    assert!(!output.contains("script text"), "{output}");
    assert_eq!(server.hits(), 2, "the redirect to /page was not followed");
}

#[test]
fn a_url_alone_returns_the_page_text() {
    let server = TestServer::start();
    let s = Scratch::new();
    let turns = [
        turn(vec![call("web_fetch", json!({"url": server.url("/page")}))]),
        turn(vec![text("done")]),
    ];
    let mut args = vec!["-p", "go", "--yolo"];
    args.extend(LOOPBACK_ON);
    let (_, proc) = s.run_json(&turns, &args);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let output = first_response(&s)["output"].as_str().unwrap().to_string();
    assert!(output.contains("Greetings"), "{output}");
    assert!(output.contains("Hello from the test page."), "{output}");
}

#[test]
fn redirects_to_private_or_metadata_addresses_are_refused() {
    let server = TestServer::start();
    let s = Scratch::new();
    let private = server.url("/to-private");
    let metadata = server.url("/to-metadata");
    let turns = [
        turn(vec![call(
            "web_fetch",
            json!({"prompt": format!("Compare {private} with {metadata}")}),
        )]),
        turn(vec![text("done")]),
    ];
    let mut args = vec!["-p", "go", "--yolo"];
    args.extend(LOOPBACK_ON);
    let (_, proc) = s.run_json(&turns, &args);
    assert!(proc.status.success(), "{}", stderr(&proc));
    assert_eq!(
        first_response(&s)["error"],
        format!(
            "All fallback fetch attempts failed: {private}: Redirect to blocked or private host http://10.0.0.1/secret is not allowed., {metadata}: Redirect to blocked or private host http://169.254.169.254/latest/meta-data/ is not allowed."
        )
    );
    assert_eq!(server.hits(), 2);
}

#[test]
fn bad_prompts_are_invalid_params() {
    let s = Scratch::new();
    let turns = [
        turn(vec![
            call("web_fetch", json!({"prompt": "summarize the news"})),
            call("web_fetch", json!({"prompt": "get ftp://example.com/x"})),
            call("web_fetch", json!({"prompt": "  "})),
        ]),
        turn(vec![text("done")]),
    ];
    let (_, proc) = s.run_json(&turns, &["-p", "go", "--yolo"]);
    assert!(proc.status.success(), "{}", stderr(&proc));
    let r = function_responses(&s.requests()[1]);
    assert_eq!(
        r[0]["response"]["error"],
        "The 'prompt' must contain at least one valid URL (starting with http:// or https://)."
    );
    assert_eq!(
        r[1]["response"]["error"],
        "Error(s) in prompt URLs:\n- Unsupported protocol in URL: \"ftp://example.com/x\". Only http and https are supported."
    );
    assert_eq!(
        r[2]["response"]["error"],
        "The 'prompt' parameter cannot be empty and must contain URL(s) and instructions."
    );
}

#[test]
fn bodies_over_the_size_cap_are_refused() {
    let server = TestServer::start();
    let s = Scratch::new();
    let url = server.url("/big");
    let turns = [
        turn(vec![call(
            "web_fetch",
            json!({"prompt": format!("Read {url}")}),
        )]),
        turn(vec![text("done")]),
    ];
    let mut args = vec!["-p", "go", "--yolo", "-c", "web_fetch.max_bytes=1000"];
    args.extend(LOOPBACK_ON);
    let (_, proc) = s.run_json(&turns, &args);
    assert!(proc.status.success(), "{}", stderr(&proc));
    assert_eq!(
        first_response(&s)["error"],
        format!(
            "All fallback fetch attempts failed: {url}: Content exceeds size limit of 1000 bytes"
        )
    );
}
