//! A real HTTP server on 127.0.0.1 that plays a model API: it answers each request
//! with the next scripted [`Reply`] (status, headers, body chunks streamed one by one,
//! optionally cutting the connection mid-body) and captures every request.
//!
//! The probes Troupe makes at start-up (`GET …/models`, `GET /props`, `POST
//! /api/show`) take no scripted reply unless one is meant for them: a path given a
//! reply with [`Loopback::route`] answers every request with it; otherwise `/props`
//! and `/api/show` answer 404, and `…/models` takes the next scripted reply only when
//! that reply is a model listing (a JSON object with `data` or `models`), else 404.
//! Requests answered by a route or such a 404 are kept apart ([`Loopback::probes`]),
//! so [`Loopback::requests`] holds the scripted exchanges only.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{combinators::BoxBody, BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::sync::oneshot;

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub chunks: Vec<Vec<u8>>,
    /// Cut the connection after the chunks instead of ending the body.
    pub abort: bool,
    /// Go silent for this long before the last chunk.
    pub stall: Option<std::time::Duration>,
    /// Go silent for this long before sending anything (the headers included), as a
    /// local server does while it processes a long prompt.
    pub delay: Option<std::time::Duration>,
    /// Wait at these gates in turn (each until as many requests as it admits have
    /// reached it) before answering: proof that those requests were in flight together.
    pub gates: Vec<Arc<Gate>>,
}

/// A meeting point for `n` requests: each waits until all `n` have arrived (at most a
/// minute; then it goes on and the gate says it timed out). Later arrivals pass.
#[derive(Debug)]
pub struct Gate {
    n: usize,
    arrived: Mutex<usize>,
    open: tokio::sync::watch::Sender<bool>,
    timed_out: std::sync::atomic::AtomicBool,
}

impl Gate {
    pub fn new(n: usize) -> Arc<Self> {
        Arc::new(Self {
            n,
            arrived: Mutex::new(0),
            open: tokio::sync::watch::channel(false).0,
            timed_out: Default::default(),
        })
    }

    /// Whether all `n` met there (false if one of them gave up waiting).
    pub fn met(&self) -> bool {
        *self.arrived.lock().expect("gate") >= self.n
            && !self.timed_out.load(std::sync::atomic::Ordering::SeqCst)
    }

    async fn pass(&self) {
        let mut rx = self.open.subscribe();
        {
            let mut arrived = self.arrived.lock().expect("gate");
            *arrived += 1;
            if *arrived >= self.n {
                self.open.send_replace(true);
            }
        }
        let opened = rx.wait_for(|open| *open);
        if tokio::time::timeout(std::time::Duration::from_secs(60), opened)
            .await
            .is_err()
        {
            self.timed_out
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

/// Chooses the reply to a request by what its body holds (order free).
pub type Router = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

impl Reply {
    pub fn raw(status: u16, content_type: &str, body: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            chunks: vec![body.as_bytes().to_vec()],
            abort: false,
            stall: None,
            delay: None,
            gates: Vec::new(),
        }
    }

    /// This reply, once `gate` (and any gate given before) has let it through.
    pub fn at_gate(mut self, gate: &Arc<Gate>) -> Self {
        self.gates.push(gate.clone());
        self
    }

    pub fn json(status: u16, value: &Value) -> Self {
        Self::raw(status, "application/json", &value.to_string())
    }

    /// A Gemini event stream: `data: <chunk>\r\n\r\n` per chunk.
    pub fn gemini_sse(chunks: &[Value]) -> Self {
        Self::events(chunks.iter().map(|c| format!("data: {c}\r\n\r\n")))
    }

    /// An OpenAI event stream: `data: <chunk>\n\n` per chunk, then `data: [DONE]`.
    pub fn openai_sse(chunks: &[Value]) -> Self {
        Self::events(
            chunks
                .iter()
                .map(|c| format!("data: {c}\n\n"))
                .chain(std::iter::once("data: [DONE]\n\n".to_string())),
        )
    }

    /// An event stream of raw pieces, sent one by one.
    pub fn events(pieces: impl IntoIterator<Item = String>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            chunks: pieces.into_iter().map(String::into_bytes).collect(),
            abort: false,
            stall: None,
            delay: None,
            gates: Vec::new(),
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Stays silent for `pause` before sending the last chunk.
    pub fn stall_before_last(mut self, pause: std::time::Duration) -> Self {
        self.stall = Some(pause);
        self
    }

    /// Sends nothing at all (not even the headers) for `pause`.
    pub fn delayed(mut self, pause: std::time::Duration) -> Self {
        self.delay = Some(pause);
        self
    }

    /// Appends a piece and then cuts the connection.
    pub fn then_cut(mut self, piece: &str) -> Self {
        self.chunks.push(piece.as_bytes().to_vec());
        self.abort = true;
        self
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Captured {
    pub method: String,
    /// Path and query.
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: Value,
}

#[derive(Default)]
struct State {
    replies: VecDeque<Reply>,
    fallback: Option<Reply>,
    requests: Vec<Captured>,
    routes: Vec<(String, Reply)>,
    probes: Vec<Captured>,
    router: Option<Router>,
    in_flight: usize,
    peak_in_flight: usize,
}

/// The server; stops when dropped.
pub struct Loopback {
    pub url: String,
    state: Arc<Mutex<State>>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Loopback {
    /// Answers with `replies` in order, then with 500s saying the script ran out.
    pub fn start(replies: Vec<Reply>) -> Self {
        Self::with(replies, None)
    }

    /// Answers every request with `reply`.
    pub fn always(reply: Reply) -> Self {
        Self::with(Vec::new(), Some(reply))
    }

    /// Answers with `replies` in order, then every further request with `fallback`.
    pub fn then_always(replies: Vec<Reply>, fallback: Reply) -> Self {
        Self::with(replies, Some(fallback))
    }

    /// Answers each model request with what `router` chooses for its body, in any
    /// order (several sessions of one process sharing the server).
    pub fn routed(router: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> Self {
        Self::with_state(State {
            router: Some(Arc::new(router)),
            ..State::default()
        })
    }

    /// The most model requests that were being answered at one time.
    pub fn peak_in_flight(&self) -> usize {
        self.state.lock().expect("state").peak_in_flight
    }

    fn with(replies: Vec<Reply>, fallback: Option<Reply>) -> Self {
        Self::with_state(State {
            replies: replies.into(),
            fallback,
            ..State::default()
        })
    }

    fn with_state(state: State) -> Self {
        let state = Arc::new(Mutex::new(state));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        listener.set_nonblocking(true).expect("nonblocking");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let (stop, mut stopped) = oneshot::channel::<()>();
        let shared = state.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                loop {
                    let (socket, _) = tokio::select! {
                        _ = &mut stopped => return,
                        accepted = listener.accept() => match accepted {
                            Ok(a) => a,
                            Err(_) => continue,
                        },
                    };
                    let state = shared.clone();
                    tokio::spawn(async move {
                        let service = service_fn(move |req| answer(state.clone(), req));
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(socket), service)
                            .await;
                    });
                }
            });
        });
        Self {
            url,
            state,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Answers every request to `path` (without its query) with `reply`, whatever the
    /// scripted replies.
    pub fn route(&self, path: &str, reply: Reply) -> &Self {
        self.state
            .lock()
            .expect("state")
            .routes
            .push((path.to_string(), reply));
        self
    }

    /// Every request answered with a scripted reply so far, in order.
    pub fn requests(&self) -> Vec<Captured> {
        self.state.lock().expect("state").requests.clone()
    }

    /// Every request answered by a route or as an unscripted probe, in order.
    pub fn probes(&self) -> Vec<Captured> {
        self.state.lock().expect("state").probes.clone()
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

type Body = BoxBody<Bytes, std::io::Error>;

async fn answer(
    state: Arc<Mutex<State>>,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let method = req.method().to_string();
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.to_string())
        .unwrap_or_default();
    let headers = req
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    let bytes = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    let mut counted = false;
    let reply = {
        let mut s = state.lock().expect("state");
        let bare = path.split('?').next().unwrap_or("").to_string();
        let captured = Captured {
            method,
            path,
            headers,
            body,
        };
        let routed = s
            .routes
            .iter()
            .find(|(p, _)| *p == bare)
            .map(|(_, r)| r.clone());
        let listing = |r: &Reply| {
            r.status == 200
                && serde_json::from_slice::<Value>(&r.chunks.concat())
                    .is_ok_and(|v| v.get("data").is_some() || v.get("models").is_some())
        };
        let probe = bare.ends_with("/props")
            || bare.ends_with("/api/show")
            || (bare.ends_with("/models") && !s.replies.front().is_some_and(listing));
        match (routed, probe) {
            (Some(reply), _) => {
                s.probes.push(captured);
                Some(reply)
            }
            (None, true) => {
                s.probes.push(captured);
                Some(Reply::json(
                    404,
                    &serde_json::json!({"error": {"code": 404, "message": "loopback: not found"}}),
                ))
            }
            (None, false) => {
                let routed = s.router.clone().map(|router| router(&captured.body));
                s.requests.push(captured);
                s.in_flight += 1;
                counted = true;
                s.peak_in_flight = s.peak_in_flight.max(s.in_flight);
                routed.or_else(|| s.replies.pop_front().or_else(|| s.fallback.clone()))
            }
        }
    };
    let reply = match reply {
        Some(reply) => {
            for gate in &reply.gates {
                gate.pass().await;
            }
            Some(reply)
        }
        None => None,
    };
    if counted {
        state.lock().expect("state").in_flight -= 1;
    }
    let reply = reply.unwrap_or_else(|| {
        Reply::json(
            500,
            &serde_json::json!({"error": {"code": 500, "message": "loopback: no scripted reply left"}}),
        )
    });
    if let Some(pause) = reply.delay {
        tokio::time::sleep(pause).await;
    }
    let mut frames: Vec<Result<Frame<Bytes>, std::io::Error>> = reply
        .chunks
        .iter()
        .map(|c| Ok(Frame::data(Bytes::from(c.clone()))))
        .collect();
    if reply.abort {
        frames.push(Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "loopback: connection cut",
        )));
    }
    // Each frame is flushed before the next (and before a cut), as a live server would.
    let last = frames.len().saturating_sub(1);
    let stall = reply.stall;
    let stream =
        futures::stream::iter(frames.into_iter().enumerate()).then(move |(i, frame)| async move {
            let pause = match stall {
                Some(pause) if i == last => pause,
                _ => std::time::Duration::from_millis(2),
            };
            tokio::time::sleep(pause).await;
            frame
        });
    let mut response = Response::builder().status(reply.status);
    for (k, v) in &reply.headers {
        response = response.header(k, v);
    }
    Ok(response
        .body(BodyExt::boxed(StreamBody::new(stream)))
        .expect("response"))
}
