//! Misbehaving servers written by hand (no rmcp), one JSON-RPC line at a time, for what
//! rmcp's server side cannot be made to send:
//!
//! - `--huge`: tools whose results break Troupe's bounds: `big` (a text of `mb`
//!   MiB), `many` (`n` empty text items), `deep` (a structured result nested `depth`
//!   levels), each written straight to stdout (a 100,000-deep `serde_json::Value`
//!   would overflow the stack); and `fine` (a small text).
//! - `--exit-after-list FILE`: appends `start` to FILE, answers `initialize` and
//!   `tools/list` (one tool), then exits: a server that dies right after it started.

use std::io::{BufRead, Write};

use serde_json::{json, Value};

/// Reads requests until stdin closes; `answer` gives the result of each request
/// (`None`: no answer), and may write to stdout itself.
fn serve(mut answer: impl FnMut(&str, &Value, &mut dyn Write) -> Option<Value>) {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    let mut line = String::new();
    while stdin
        .lock()
        .read_line(&mut line)
        .map(|n| n > 0)
        .unwrap_or(false)
    {
        let msg: Value = serde_json::from_str(line.trim()).unwrap_or(Value::Null);
        line.clear();
        let id = msg["id"].clone();
        let method = msg["method"].as_str().unwrap_or("").to_string();
        let result = match method.as_str() {
            "initialize" => Some(json!({"protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}}, "serverInfo": {"name": "raw", "version": "0"}})),
            _ if id.is_null() => None,
            _ => answer(&method, &msg, &mut out),
        };
        if let Some(result) = result {
            let _ = writeln!(
                out,
                "{}",
                json!({"jsonrpc": "2.0", "id": id, "result": result})
            );
        }
        let _ = out.flush();
    }
}

fn tool(name: &str, props: Value) -> Value {
    json!({"name": name, "description": format!("The {name} tool."),
        "inputSchema": {"type": "object", "properties": props}})
}

/// `--huge`.
pub fn huge() {
    serve(|method, msg, out| match method {
        "tools/list" => Some(json!({"tools": [
            tool("big", json!({"mb": {"type": "integer"}})),
            tool("many", json!({"n": {"type": "integer"}})),
            tool("deep", json!({"depth": {"type": "integer"}})),
            tool("fine", json!({}))]})),
        "tools/call" => {
            let args = &msg["params"]["arguments"];
            let id = msg["id"].to_string();
            let head = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":");
            let n = |key: &str, default: u64| args[key].as_u64().unwrap_or(default) as usize;
            let body = match msg["params"]["name"].as_str().unwrap_or("") {
                "big" => format!(
                    "{{\"content\":[{{\"type\":\"text\",\"text\":\"{}\"}}]}}",
                    "x".repeat(n("mb", 17) << 20)
                ),
                "many" => {
                    let item = "{\"type\":\"text\",\"text\":\"\"}";
                    let items = vec![item; n("n", 1_000_000)].join(",");
                    format!("{{\"content\":[{items}]}}")
                }
                "deep" => {
                    let depth = n("depth", 100_000);
                    format!(
                        "{{\"content\":[],\"structuredContent\":{{\"a\":{}{}}}}}",
                        "[".repeat(depth),
                        "]".repeat(depth)
                    )
                }
                _ => return Some(json!({"content": [{"type": "text", "text": "fine ran"}]})),
            };
            let _ = writeln!(out, "{head}{body}}}");
            None
        }
        _ => Some(json!({})),
    })
}

/// `--exit-after-list FILE`.
pub fn exit_after_list(starts: Option<String>) {
    if let Some(file) = starts {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)
        {
            let _ = writeln!(f, "start");
        }
    }
    serve(|method, msg, out| match method {
        "tools/list" => {
            let list = json!({"tools": [tool("only", json!({}))]});
            let _ = writeln!(
                out,
                "{}",
                json!({"jsonrpc": "2.0", "id": msg["id"], "result": list})
            );
            let _ = out.flush();
            std::process::exit(0);
        }
        _ => Some(json!({})),
    });
}
