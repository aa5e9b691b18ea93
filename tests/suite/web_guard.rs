//! `web_fetch` connects to the address it checked: no proxy from the environment in
//! between, every IANA special-purpose range refused, redirects checked again.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;

use crate::common::*;

/// A 127.0.0.1 server answering `/page` with text and `/to-special` with a redirect to
/// 192.88.99.1 (a special-purpose address); counts the requests it reads.
fn server() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(16) {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut request_line = String::new();
            let _ = reader.read_line(&mut request_line);
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok() && line.trim() != "" {
                line.clear();
            }
            counter.fetch_add(1, Ordering::SeqCst);
            let response = if request_line.contains("/to-special") {
                "HTTP/1.1 302 Found\r\nLocation: http://192.88.99.1/x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string()
            } else {
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 12\r\nConnection: close\r\n\r\ndirect reply".to_string()
            };
            let _ = stream.write_all(response.as_bytes());
        }
    });
    (port, hits)
}

#[test]
fn no_environment_proxy_and_special_ranges_refused_after_redirect() {
    let s = Scratch::new();
    let (target, target_hits) = server();
    let (proxy, proxy_hits) = server();
    let proxy_url = format!("http://127.0.0.1:{proxy}");
    let script = s.script(&[
        turn(vec![
            call(
                "web_fetch",
                json!({"prompt": format!("read http://127.0.0.1:{target}/page")}),
            ),
            call(
                "web_fetch",
                json!({"prompt": format!("read http://127.0.0.1:{target}/to-special")}),
            ),
        ]),
        turn(vec![text("done")]),
    ]);
    let out = s
        .command()
        .arg("--fake-responses")
        .arg(script)
        .args(["-p", "go", "--yolo", "-c", "web_fetch.allow_loopback=true"])
        .env("HTTP_PROXY", &proxy_url)
        .env("http_proxy", &proxy_url)
        .env("HTTPS_PROXY", &proxy_url)
        .env("ALL_PROXY", &proxy_url)
        .env("NO_PROXY", "")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let responses = function_responses(&s.requests()[1]);
    assert!(
        responses[0].to_string().contains("direct reply"),
        "{}",
        responses[0]
    );
    assert_eq!(
        proxy_hits.load(Ordering::SeqCst),
        0,
        "went through the proxy"
    );
    assert!(target_hits.load(Ordering::SeqCst) >= 2);
    assert!(
        responses[1]
            .to_string()
            .contains("Redirect to blocked or private host"),
        "{}",
        responses[1]
    );
}

#[test]
fn every_spelling_of_a_special_address_is_refused_before_connecting() {
    let s = Scratch::new();
    let (port, hits) = server();
    // Every one of these reaches this machine's 127.0.0.1 listener if it is connected
    // to (so a failure still stays on 127.0.0.1); loopback is not allowed here.
    let urls = [
        format!("http://127.0.0.1:{port}/page"),
        format!("http://127.1:{port}/page"),
        format!("http://2130706433:{port}/page"),
        format!("http://0x7f.0.0.1:{port}/page"),
        format!("http://0.0.0.0:{port}/page"),
        format!("http://localhost:{port}/page"),
        format!("http://[::1]:{port}/page"),
        format!("http://[::ffff:127.0.0.1]:{port}/page"),
        format!("http://[::127.0.0.1]:{port}/page"),
        format!("http://[64:ff9b::7f00:1]:{port}/page"),
        format!("http://[2002:7f00:1::]:{port}/page"),
    ];
    let calls = urls
        .iter()
        .map(|u| call("web_fetch", json!({"url": u})))
        .collect();
    let out = s.run(
        &[turn(calls), turn(vec![text("done")])],
        &["-p", "go", "--yolo"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let responses = function_responses(&s.requests()[1]);
    assert_eq!(responses.len(), urls.len());
    for (url, response) in urls.iter().zip(&responses) {
        let text = response.to_string();
        assert!(
            text.contains("[Blocked Host]") && !text.contains("direct reply"),
            "{url} was not refused: {text}"
        );
    }
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "a refused address was connected to"
    );
}
