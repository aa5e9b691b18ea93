//! Loopback fake Gemini API for the subagents benchmark (bench/agents-vs-gemini.sh): a
//! port of bench/agents_server.py with the same routing, answers, counts, stats file,
//! request logs and flags, fast enough not to be the limit of the client it serves (the
//! Python server's requests took about three quarters of Troupe's wall time at N=200).
//!
//! It answers each request by what its body holds, so N subagents can send in any order:
//!
//!   parent (body holds "bench-parent", the -p prompt):
//!     no model-role turn in `contents` yet -> N functionCall parts
//!         invoke_agent {"agent_name": "generalist", "prompt": "bench-child-<i>"}
//!     later                                -> text "bench-done: <k> invoke_agent responses,
//!                                             <m> distinct child results"
//!   child i (body holds "bench-child-<i>" and not "bench-parent"):
//!     no model-role turn yet               -> functionCall read_file {"file_path": "f<i%64 as %03d>.txt"}
//!     later                                -> functionCall complete_task {"result": {"response": "done-<i>"}}
//!   anything else (utility calls: next-speaker check, generateContent, loop detection, ...)
//!     -> a JSON text answer that lets the client go on; counted and logged.
//!
//!   POST /v1beta/models/M:streamGenerateContent?alt=sse -> "data: <chunk>\r\n\r\n"
//!   POST /v1beta/models/M:generateContent               -> one GenerateContentResponse
//!   POST /v1beta/models/M:countTokens                   -> {"totalTokens": 1}
//! Every chunk carries usageMetadata (promptTokenCount 100, candidatesTokenCount 10).
//!
//! The counts by kind and the checks (complete_task answers given, functionResponses of
//! invoke_agent in the parent's last request, files whose contents reached the children)
//! are written as JSON to --stats on exit (SIGTERM/SIGINT, or --max-seconds) and, at most
//! every 0.2 s, while it runs. --log-dir keeps sample request bodies: every parent
//! request, the first --log-children children's requests and every request of another
//! kind.
//!
//! Usage: agents_server --agents N [--port 0] [--port-file F] [--stats F] [--log-dir D]
//!                      [--log-children 3] [--max-seconds 900]
//! Binds 127.0.0.1 only. Exits by itself after --max-seconds.
//!
//! Build: cargo build --release --example agents_server
//!
//! Fidelity to the Python server: every JSON text it sends or writes (answers, stats,
//! logs, and the text the `done-<i>` / `bench-file-<i>` patterns are searched in) is
//! formatted as Python's `json.dumps` formats it (", " and ": " separators, ASCII only,
//! float repr); a body Python's code would fail on (a non-object body, a non-list
//! `contents`, a part of the wrong type, ...) is a counted "bad-request" here too, with
//! the same side effects before the failure. The 400 message's wording differs (it is
//! serde_json's or this file's, not Python's exception text).
//!
//! It runs on a current-thread runtime (on 2 cores, faster than a multi-thread one).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::convert::Infallible;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, LazyLock, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use clap::Parser;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use regex::Regex;
use serde_json::{json, Map, Value};

const FILES: u32 = 64;
const PARENT: &str = "bench-parent";

static CHILD_RE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"bench-child-(\d+)").unwrap());
static RESULT_RE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"done-(\d+)").unwrap());
static FILE_RE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"bench-file-(\d+)").unwrap());
static ONE_DIGIT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\d$").unwrap());

#[derive(Parser, Debug)]
#[command(
    infer_long_args = true,
    about = "Loopback fake Gemini API for bench/agents-vs-gemini.sh"
)]
struct Args {
    #[arg(long, allow_negative_numbers = true)]
    agents: i64,
    #[arg(long, default_value_t = 0)]
    port: u16,
    #[arg(long)]
    port_file: Option<PathBuf>,
    #[arg(long)]
    stats: Option<PathBuf>,
    #[arg(long)]
    log_dir: Option<PathBuf>,
    #[arg(long, default_value_t = 3, allow_negative_numbers = true)]
    log_children: i64,
    #[arg(long, default_value_t = 900.0, allow_negative_numbers = true)]
    max_seconds: f64,
}

// ---------------------------------------------------------------- Python's json.dumps

/// `json.dumps(v)` (indent None) or `json.dumps(v, indent=k)`, ensure_ascii on.
fn py_dumps(v: &Value, indent: Option<usize>) -> String {
    let mut out = String::new();
    dump(v, indent, 0, &mut out);
    out
}

fn dump(v: &Value, indent: Option<usize>, level: usize, out: &mut String) {
    let newline = |out: &mut String, level: usize| {
        if let Some(k) = indent {
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', k * level));
        }
    };
    let item_sep = if indent.is_some() { "," } else { ", " };
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                let _ = write!(out, "{u}");
            } else if let Some(i) = n.as_i64() {
                let _ = write!(out, "{i}");
            } else {
                py_float(n.as_f64().unwrap_or(f64::NAN), out);
            }
        }
        Value::String(s) => py_str(s, out),
        Value::Array(a) if a.is_empty() => out.push_str("[]"),
        Value::Array(a) => {
            out.push('[');
            for (j, x) in a.iter().enumerate() {
                if j > 0 {
                    out.push_str(item_sep);
                }
                newline(out, level + 1);
                dump(x, indent, level + 1, out);
            }
            newline(out, level);
            out.push(']');
        }
        Value::Object(m) if m.is_empty() => out.push_str("{}"),
        Value::Object(m) => {
            out.push('{');
            for (j, (k, x)) in m.iter().enumerate() {
                if j > 0 {
                    out.push_str(item_sep);
                }
                newline(out, level + 1);
                py_str(k, out);
                out.push_str(": ");
                dump(x, indent, level + 1, out);
            }
            newline(out, level);
            out.push('}');
        }
    }
}

/// A JSON string as `json.dumps` writes it with ensure_ascii: only ' '..='~' unescaped.
fn py_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
        }
    }
    out.push('"');
}

/// `repr(float)`: shortest round-trip digits, fixed notation for 1e-4 <= |x| < 1e16,
/// else `d.ddde+XX`.
fn py_float(x: f64, out: &mut String) {
    if x.is_nan() {
        out.push_str("NaN");
        return;
    }
    if x.is_infinite() {
        out.push_str(if x > 0.0 { "Infinity" } else { "-Infinity" });
        return;
    }
    if x == 0.0 {
        out.push_str(if x.is_sign_negative() { "-0.0" } else { "0.0" });
        return;
    }
    let e = format!("{:e}", x.abs()); // shortest digits: "1.2345e-5"
    let (mant, exp) = e.split_once('e').expect("LowerExp has an e");
    let exp: i32 = exp.parse().expect("exponent");
    let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
    if x < 0.0 {
        out.push('-');
    }
    if (-4..16).contains(&exp) {
        if exp >= 0 {
            let int_len = (exp + 1) as usize;
            if digits.len() <= int_len {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', int_len - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
}

/// Python's `round(x, 3)` on a float: the nearest double to x correctly rounded to 3
/// decimals.
fn py_round3(x: f64) -> f64 {
    format!("{x:.3}").parse().unwrap_or(x)
}

// ---------------------------------------------------------------- child indices

/// A child index as Python's `int()` of a `\d+` match reads it (any Unicode decimal
/// digits, any length), kept as its canonical decimal string.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
struct Idx(String);

impl Idx {
    fn parse(m: &str) -> Idx {
        let ascii: String = m.chars().map(digit_value).collect();
        let trimmed = ascii.trim_start_matches('0');
        Idx(if trimmed.is_empty() {
            "0".into()
        } else {
            trimmed.into()
        })
    }

    fn rem(&self, k: u32) -> u32 {
        self.0
            .bytes()
            .fold(0, |acc, d| (acc * 10 + u32::from(d - b'0')) % k)
    }

    /// `self < k` for a Python int k.
    fn lt(&self, k: i64) -> bool {
        match self.0.parse::<i128>() {
            Ok(v) => v < i128::from(k),
            Err(_) => false, // longer than any i64
        }
    }

    /// `f"{i:0{w}d}"`
    fn padded(&self, w: usize) -> String {
        format!("{:0>w$}", self.0)
    }
}

/// The value of one Unicode decimal digit (category Nd), as an ASCII digit. Nd digits
/// come in contiguous runs of ten, 0 to 9, so the value is how many Nd characters
/// precede it in its block, modulo 10.
fn digit_value(c: char) -> char {
    if c.is_ascii_digit() {
        return c;
    }
    let mut k = 0u32;
    let mut cp = c as u32;
    while cp > 0 {
        cp -= 1;
        match char::from_u32(cp) {
            Some(p) if ONE_DIGIT.is_match(p.encode_utf8(&mut [0; 4])) => k += 1,
            _ => break,
        }
    }
    char::from_digit(k % 10, 10).expect("digit")
}

// ---------------------------------------------------------------- state

#[derive(Default)]
struct State {
    req: u64,
    connections: u64,
    inflight: i64,
    peak_inflight: i64,
    t0: Option<f64>,
    t_last: Option<f64>,
    parent_last: Option<Value>,
    dirty: bool,
    kinds: HashMap<String, u64>,
    per_child: HashMap<Idx, u64>,
    completed: HashSet<Idx>,
    files_seen: HashSet<Idx>,
}

struct Ctx {
    n: i64,
    log_dir: Option<PathBuf>,
    log_children: i64,
    state: Mutex<State>,
}

impl Ctx {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn snapshot(&self, st: &State) -> Value {
        let kinds: BTreeMap<&String, &u64> = st.kinds.iter().collect();
        let mut per: BTreeMap<u64, u64> = BTreeMap::new();
        for q in st.per_child.values() {
            *per.entry(*q).or_default() += 1;
        }
        let per: Map<String, Value> = per
            .into_iter()
            .map(|(q, c)| (q.to_string(), c.into()))
            .collect();
        let span: Value = match (st.t0, st.t_last) {
            (None, None) => 0.into(),
            (t0, t1) => py_round3(t1.unwrap_or(0.0) - t0.unwrap_or(0.0)).into(),
        };
        json!({
            "agents": self.n,
            "requests": st.req,
            "connections": st.connections,
            "kinds": kinds,
            "children_seen": st.per_child.len(),
            "children_completed": st.completed.len(),
            "children_got_file": st.files_seen.len(),
            "requests_per_child": per,
            "parent_last_request": st.parent_last.clone(),
            "peak_inflight": st.peak_inflight,
            "span_seconds": span,
        })
    }

    fn write_stats(&self, path: Option<&Path>) {
        let Some(path) = path else { return };
        let v = {
            let mut st = self.lock();
            st.dirty = false;
            self.snapshot(&st)
        };
        let data = py_dumps(&v, Some(1));
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        if let Err(e) = std::fs::write(&tmp, data + "\n").and_then(|()| std::fs::rename(&tmp, path))
        {
            eprintln!("agents_server: writing {}: {e}", path.display());
        }
    }

    /// Writes `{"path": path, "body": body}` as `json.dump(..., indent=1)` does; the
    /// body is parsed whole only here, for the few requests kept.
    fn log_body(&self, name: &str, path: &str, text: &str) -> std::io::Result<()> {
        let Some(dir) = &self.log_dir else {
            return Ok(());
        };
        let body: Value =
            serde_json::from_str(text).unwrap_or_else(|e| json!({"unparsed": e.to_string()}));
        let v = json!({"path": path, "body": body});
        std::fs::write(dir.join(format!("{name}.json")), py_dumps(&v, Some(1)))
    }
}

/// `time.monotonic()`: CLOCK_MONOTONIC in seconds.
fn monotonic() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// The end of one POST (Python's `finally:`): runs when hyper drops the response body,
/// after writing it.
struct Finally(Arc<Ctx>);

impl Drop for Finally {
    fn drop(&mut self) {
        let now = monotonic();
        let mut st = self.0.lock();
        st.inflight -= 1;
        st.t_last = Some(now);
        st.dirty = true;
    }
}

/// A whole response body in one frame, carrying the request's [`Finally`].
struct Whole {
    data: Option<Bytes>,
    _finally: Option<Finally>,
}

impl Body for Whole {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.data.take().map(|d| Ok(Frame::data(d))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.data.as_ref().map_or(0, |d| d.len() as u64))
    }
}

fn send(code: u16, data: String, ctype: &str, fin: Option<Finally>) -> Response<Whole> {
    let len = data.len();
    Response::builder()
        .status(StatusCode::from_u16(code).expect("status"))
        .header("Content-Type", ctype)
        .header("Content-Length", len.to_string())
        .body(Whole {
            data: Some(Bytes::from(data)),
            _finally: fin,
        })
        .expect("response")
}

// ---------------------------------------------------------------- routing

type Fail = String;

fn chunk(parts: Vec<Value>) -> Value {
    json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
        "modelVersion": "gemini-2.5-flash",
    })
}

fn call(name: &str, args: Value) -> Value {
    json!({"functionCall": {"name": name, "args": args}})
}

/// `body.get(key, [])` for a body Python's `.get` works on.
fn get_or_empty<'a>(body: &'a Value, key: &str, what: &str) -> Result<Option<&'a Value>, Fail> {
    match body {
        Value::Object(m) => Ok(m.get(key)),
        other => Err(format!(
            "'{}' object has no attribute 'get' ({what})",
            py_type(other)
        )),
    }
}

fn py_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// `body.get("contents", [])` as Python iterates it: the items of a list; the keys of
/// a dict or the characters of a string (whose `.get` then fails, so only empty ones
/// pass); nothing else is iterable.
fn contents(body: &Value) -> Result<&[Value], Fail> {
    match get_or_empty(body, "contents", "body")? {
        None => Ok(&[]),
        Some(Value::Array(a)) => {
            if let Some(c) = a.iter().find(|c| !c.is_object()) {
                return Err(format!(
                    "'{}' object has no attribute 'get' (contents item)",
                    py_type(c)
                ));
            }
            Ok(a)
        }
        Some(Value::Object(m)) if m.is_empty() => Ok(&[]),
        Some(Value::String(s)) if s.is_empty() => Ok(&[]),
        Some(v @ (Value::Object(_) | Value::String(_))) => Err(
            "'str' object has no attribute 'get' (contents of type ".to_string() + py_type(v) + ")",
        ),
        Some(v) => Err(format!(
            "'{}' object is not iterable (contents)",
            py_type(v)
        )),
    }
}

fn model_turns(body: &Value) -> Result<usize, Fail> {
    Ok(contents(body)?
        .iter()
        .filter(|c| c.get("role") == Some(&Value::String("model".into())))
        .count())
}

/// functionResponse parts named `name` in the last user turn.
fn function_responses<'a>(body: &'a Value, name: &str) -> Result<Vec<&'a Value>, Fail> {
    const FR: &str = "functionResponse";
    let user = Value::String("user".into());
    let Some(turn) = contents(body)?
        .iter()
        .rev()
        .find(|c| c.get("role") == Some(&user))
    else {
        return Ok(Vec::new());
    };
    let parts: &[Value] = match turn.get("parts") {
        None => &[],
        Some(Value::Array(a)) => a,
        Some(Value::Object(m)) => {
            // iterates the keys: `FR in key` is a substring test, then key[FR] fails
            if m.keys().any(|k| k.contains(FR)) {
                return Err("string indices must be integers (parts key)".into());
            }
            &[]
        }
        Some(Value::String(_)) => &[], // one character never holds FR
        Some(v) => return Err(format!("'{}' object is not iterable (parts)", py_type(v))),
    };
    let mut out = Vec::new();
    for p in parts {
        match p {
            Value::Object(m) => {
                if let Some(fr) = m.get(FR) {
                    let Value::Object(frm) = fr else {
                        return Err(format!(
                            "'{}' object has no attribute 'get' (functionResponse)",
                            py_type(fr)
                        ));
                    };
                    if frm.get("name") == Some(&Value::String(name.into())) {
                        out.push(fr);
                    }
                }
            }
            Value::String(s) if s.contains(FR) => {
                return Err("string indices must be integers (part)".into())
            }
            Value::String(_) => {}
            Value::Array(a) if a.iter().any(|x| x.as_str() == Some(FR)) => {
                return Err("list indices must be integers or slices, not str (part)".into());
            }
            Value::Array(_) => {}
            v => {
                return Err(format!(
                    "argument of type '{}' is not iterable (part)",
                    py_type(v)
                ))
            }
        }
    }
    Ok(out)
}

fn child_index(text: &str) -> Option<Idx> {
    CHILD_RE.captures(text).map(|c| Idx::parse(&c[1]))
}

/// The body as Python's `json.loads(raw or b"{}")` reads it: UTF-8 (a BOM allowed).
fn body_text(raw: &[u8]) -> Result<&str, Fail> {
    let raw = if raw.is_empty() { &b"{}"[..] } else { raw };
    let raw = raw.strip_prefix(b"\xef\xbb\xbf").unwrap_or(raw);
    std::str::from_utf8(raw).map_err(|e| e.to_string())
}

/// What the routing reads of a body, parsed without building the rest (the system
/// instruction and the tool declarations, most of a request's bytes), which is only
/// checked for being JSON: an object holding just its `contents` (the last one, as
/// Python's dict keeps it), or an empty value of the body's type when it is no object.
struct Routing(Value);

impl<'de> serde::Deserialize<'de> for Routing {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Routing;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Routing, A::Error> {
                let mut contents = None;
                while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    if k == "contents" {
                        contents = Some(map.next_value::<Value>()?);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                let mut m = Map::new();
                if let Some(c) = contents {
                    m.insert("contents".into(), c);
                }
                Ok(Routing(Value::Object(m)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Routing, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Routing(Value::Array(Vec::new())))
            }
            fn visit_str<E>(self, _: &str) -> Result<Routing, E> {
                Ok(Routing(Value::String(String::new())))
            }
            fn visit_bool<E>(self, b: bool) -> Result<Routing, E> {
                Ok(Routing(Value::Bool(b)))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Routing, E> {
                Ok(Routing(0.into()))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Routing, E> {
                Ok(Routing(0.into()))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Routing, E> {
                Ok(Routing(0.5.into()))
            }
            fn visit_unit<E>(self) -> Result<Routing, E> {
                Ok(Routing(Value::Null))
            }
        }
        d.deserialize_any(V)
    }
}

/// Returns (kind, chunks).
fn answer(ctx: &Ctx, method: &str, text: &str) -> Result<(String, Vec<Value>), Fail> {
    let Routing(body) = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if method != "streamGenerateContent" {
        // Non-stream calls are utility calls (next-speaker check, loop detection,
        // routing classifier, ...): answer JSON that says "go on / the user speaks".
        let reply = py_dumps(
            &json!({"next_speaker": "user", "reasoning": "bench",
                    "unproductive_state_confidence": 0.0,
                    "unproductive_state_analysis": "bench", "model_choice": "flash"}),
            None,
        );
        return Ok((
            format!("other:{method}"),
            vec![chunk(vec![json!({"text": reply})])],
        ));
    }
    let turns = model_turns(&body)?;
    if text.contains(PARENT) {
        if turns == 0 {
            let parts = (0..ctx.n.max(0))
                .map(|i| {
                    call(
                        "invoke_agent",
                        json!({"agent_name": "generalist", "prompt": format!("bench-child-{i}")}),
                    )
                })
                .collect();
            return Ok(("parent-start".into(), vec![chunk(parts)]));
        }
        let resp = function_responses(&body, "invoke_agent")?;
        let mut results = HashSet::new();
        for r in &resp {
            for m in RESULT_RE.captures_iter(&py_dumps(r, None)) {
                results.insert(Idx::parse(&m[1]));
            }
        }
        let (k, m) = (resp.len(), results.len());
        ctx.lock().parent_last = Some(json!({"model_turns": turns, "invoke_agent_responses": k,
                                             "distinct_child_results": m}));
        let text = format!("bench-done: {k} invoke_agent responses, {m} distinct child results");
        return Ok((
            "parent-final".into(),
            vec![chunk(vec![json!({"text": text})])],
        ));
    }
    if let Some(i) = child_index(text) {
        ctx.lock()
            .per_child
            .entry(i.clone())
            .and_modify(|q| *q += 1)
            .or_insert(1);
        if turns == 0 {
            let file = format!("f{:03}.txt", i.rem(FILES));
            return Ok((
                "child-read".into(),
                vec![chunk(vec![call("read_file", json!({"file_path": file}))])],
            ));
        }
        let frs = Value::Array(
            function_responses(&body, "read_file")?
                .into_iter()
                .cloned()
                .collect(),
        );
        let want = i.rem(FILES).to_string();
        let got = FILE_RE
            .captures_iter(&py_dumps(&frs, None))
            .any(|m| Idx::parse(&m[1]).0 == want);
        let first = {
            let mut st = ctx.lock();
            if got {
                st.files_seen.insert(i.clone());
            }
            st.completed.insert(i.clone())
        };
        let kind = if first {
            "child-complete"
        } else {
            "child-complete-again"
        };
        let done = call(
            "complete_task",
            json!({"result": {"response": format!("done-{}", i.0)}}),
        );
        return Ok((kind.into(), vec![chunk(vec![done])]));
    }
    Ok((
        "other:stream".into(),
        vec![chunk(vec![json!({"text": "bench: nothing to do."})])],
    ))
}

fn error_json(code: u16, message: &str) -> String {
    py_dumps(&json!({"error": {"code": code, "message": message}}), None)
}

async fn handle(ctx: Arc<Ctx>, req: Request<Incoming>) -> Result<Response<Whole>, std::io::Error> {
    if req.method() == Method::GET {
        return Ok(send(
            404,
            error_json(404, "fake server: POST only"),
            "application/json",
            None,
        ));
    }
    if req.method() != Method::POST {
        // BaseHTTPRequestHandler's answer to a method it has no do_X for
        let msg = format!("Unsupported method ('{}')", req.method().as_str());
        let page = format!(
            "<!DOCTYPE HTML>\n<html lang=\"en\">\n    <head>\n        <meta charset=\"utf-8\">\n        \
             <title>Error response</title>\n    </head>\n    <body>\n        <h1>Error response</h1>\n        \
             <p>Error code: 501</p>\n        <p>Message: {msg}.</p>\n        \
             <p>Error code explanation: 501 - Server does not support this operation.</p>\n    </body>\n</html>\n"
        );
        return Ok(send(501, page, "text/html;charset=utf-8", None));
    }
    let target = req.uri().to_string();
    let raw = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let path = target.split('?').next().unwrap_or("");
    let method = path.rsplit(':').next().unwrap_or(path); // streamGenerateContent | generateContent | countTokens
    let now = monotonic();
    {
        let mut st = ctx.lock();
        st.req += 1;
        st.t0.get_or_insert(now);
        st.inflight += 1;
        st.peak_inflight = st.peak_inflight.max(st.inflight);
    }
    let fin = Finally(ctx.clone());
    if method == "countTokens" {
        *ctx.lock().kinds.entry("countTokens".into()).or_default() += 1;
        return Ok(send(
            200,
            py_dumps(&json!({"totalTokens": 1}), None),
            "application/json",
            Some(fin),
        ));
    }
    let (kind, chunks) = match body_text(&raw).and_then(|text| answer(&ctx, method, text)) {
        Ok(a) => a,
        Err(e) => {
            // a body we cannot read: say so, count it
            *ctx.lock().kinds.entry("bad-request".into()).or_default() += 1;
            return Ok(send(
                400,
                error_json(400, &format!("fake server: {e}")),
                "application/json",
                Some(fin),
            ));
        }
    };
    let seq = {
        let mut st = ctx.lock();
        let q = st.kinds.entry(kind.clone()).or_default();
        *q += 1;
        *q
    };
    if ctx.log_dir.is_some() {
        let text = body_text(&raw).expect("answered, so readable");
        let logged = if kind.starts_with("parent") || kind.starts_with("other") {
            ctx.log_body(
                &format!("{}-{seq:03}", kind.replace(':', "-")),
                &target,
                text,
            )
        } else {
            let i = child_index(text).expect("a child's body names it");
            if i.lt(ctx.log_children) {
                ctx.log_body(
                    &format!("child-{}-{kind}-{seq:04}", i.padded(4)),
                    &target,
                    text,
                )
            } else {
                Ok(())
            }
        };
        // Python's handler raises here: the connection closes without an answer
        logged?;
    }
    if method == "streamGenerateContent" {
        let mut sse = String::new();
        for c in &chunks {
            sse.push_str("data: ");
            sse.push_str(&py_dumps(c, None));
            sse.push_str("\r\n\r\n");
        }
        return Ok(send(200, sse, "text/event-stream", Some(fin)));
    }
    Ok(send(
        200,
        py_dumps(&chunks[0], None),
        "application/json",
        Some(fin),
    ))
}

async fn serve(ctx: Arc<Ctx>, listener: tokio::net::TcpListener) {
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            continue;
        };
        ctx.lock().connections += 1; // one handler per TCP connection
        let _ = socket.set_nodelay(true);
        let ctx = ctx.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| handle(ctx.clone(), req));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(socket), service)
                .await;
        });
    }
}

/// 127.0.0.1:port with a listen queue of 4096, as the Python server asks (N clients may
/// connect at once); inside the runtime, which the listener registers with.
fn bind(port: u16) -> std::io::Result<tokio::net::TcpListener> {
    let sock = tokio::net::TcpSocket::new_v4()?;
    sock.set_reuseaddr(true)?;
    sock.bind(([127, 0, 0, 1], port).into())?;
    sock.listen(4096)
}

fn main() {
    let args = Args::parse();
    if let Some(dir) = &args.log_dir {
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("agents_server: {}: {e}", dir.display());
            std::process::exit(1);
        }
    }
    let ctx = Arc::new(Ctx {
        n: args.agents,
        log_dir: args.log_dir.clone(),
        log_children: args.log_children,
        state: Mutex::default(),
    });

    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let (port_tx, port_rx) = std::sync::mpsc::channel::<std::io::Result<u16>>();
    let server_ctx = ctx.clone();
    let want_port = args.port;
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime");
        rt.block_on(async move {
            use tokio::signal::unix::{signal, SignalKind};
            let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
            let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
            let listener = match bind(want_port).and_then(|l| Ok((l.local_addr()?.port(), l))) {
                Ok((port, l)) => {
                    let _ = port_tx.send(Ok(port));
                    l
                }
                Err(e) => {
                    let _ = port_tx.send(Err(e));
                    return;
                }
            };
            tokio::spawn(serve(server_ctx, listener));
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            let _ = stop_tx.send(());
            std::future::pending::<()>().await;
        });
    });
    let port = match port_rx.recv() {
        Ok(Ok(port)) => port,
        Ok(Err(e)) => {
            eprintln!("agents_server: binding 127.0.0.1:{want_port}: {e}");
            std::process::exit(1);
        }
        Err(_) => std::process::exit(1),
    };

    if let Some(pf) = &args.port_file {
        let mut tmp = pf.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        if let Err(e) =
            std::fs::write(&tmp, port.to_string()).and_then(|()| std::fs::rename(&tmp, pf))
        {
            eprintln!("agents_server: writing {}: {e}", pf.display());
            std::process::exit(1);
        }
    }

    // bounded lifetime; stats at most every 0.2 s while it runs, and once at the end
    let now = std::time::Instant::now();
    let life = Duration::try_from_secs_f64(args.max_seconds.max(0.0))
        .unwrap_or(Duration::from_secs(1 << 40));
    let deadline = now
        .checked_add(life)
        .unwrap_or(now + Duration::from_secs(1 << 40));
    let stats = args.stats.as_deref();
    while std::time::Instant::now() < deadline {
        match stop_rx.recv_timeout(Duration::from_millis(200)) {
            Ok(()) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        if ctx.lock().dirty {
            ctx.write_stats(stats);
        }
    }
    ctx.write_stats(stats);
    std::process::exit(0);
}
