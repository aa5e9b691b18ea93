//! The floor of `troupe bench --tool mcp:SERVER/TOOL`: a minimal client of its own
//! starts the same server (or reaches the same URL), initializes, and sends the same N
//! `tools/call` requests at once — over stdio all written on the one connection, then
//! every answer read; over Streamable HTTP as concurrent POSTs on kept-alive
//! connections — so the runtime's time compares with what the server itself needs.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::BenchError;
use crate::platform::child_env::ChildEnvPolicy;
use crate::settings::mcp::{server_env, McpServerConfig};

/// The protocol revision the floor client asks for.
const PROTOCOL: &str = "2025-06-18";

/// POSTs in flight at once over HTTP (as many as Troupe's own client allows).
const HTTP_IN_FLIGHT: usize = 256;

/// The floor: the time from the first request to the last answer, and the transport.
pub struct Floor {
    pub wall: Duration,
    pub transport: &'static str,
}

/// The `tools/call` request `i` (ids from 1), with the arguments the bench's turn sends.
fn call_request(tool: &str, i: usize) -> Value {
    json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
        "params": {"name": tool, "arguments": {"text": format!("call {i}")}}})
}

fn initialize_request() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": {},
        "clientInfo": {"name": "troupe-bench-floor", "version": env!("CARGO_PKG_VERSION")}}})
}

const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// Whether `message` answers a call of 1..=n successfully: its id, or `None` when it is
/// no such answer (a notification, a request of the server's).
fn answered(message: &Value, n: usize) -> Result<Option<usize>, BenchError> {
    let Some(id) = message.get("id").and_then(Value::as_u64) else {
        return Ok(None);
    };
    let id = id as usize;
    if message.get("method").is_some() || id == 0 || id > n {
        return Ok(None);
    }
    match message.get("result") {
        Some(result) if result.get("isError") != Some(&Value::Bool(true)) => Ok(Some(id)),
        _ => Err(BenchError::Run(format!(
            "the MCP floor client: call {id} failed: {message}"
        ))),
    }
}

/// Measures the floor of `n` calls of `tool` on `server` (run in `cwd` when stdio).
pub fn measure(
    server: &McpServerConfig,
    tool: &str,
    n: usize,
    cwd: &std::path::Path,
) -> Result<Floor, BenchError> {
    match (&server.entry.command, &server.entry.url) {
        (Some(command), _) => Ok(Floor {
            wall: stdio(server, command, tool, n, cwd)?,
            transport: "stdio",
        }),
        (None, Some(url)) if server.entry.transport.as_deref() != Some("sse") => Ok(Floor {
            wall: http(server, url, tool, n)?,
            transport: "http",
        }),
        _ => Err(BenchError::Usage(format!(
            "MCP server '{}': the floor client speaks stdio and Streamable HTTP only",
            server.name
        ))),
    }
}

/// Kills the server process (its whole group) when dropped, after a grace for it to
/// exit on its own once its stdin closed.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if let Ok(pid) = i32::try_from(self.0.id()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn stdio(
    config: &McpServerConfig,
    command: &str,
    tool: &str,
    n: usize,
    cwd: &std::path::Path,
) -> Result<Duration, BenchError> {
    let mut cmd = Command::new(command);
    ChildEnvPolicy::new(config.env_pass.clone()).apply_std(&mut cmd);
    cmd.args(&config.entry.args)
        .envs(server_env(
            &config.entry.env,
            &crate::settings::secrets::env_var,
        ))
        .current_dir(match &config.entry.cwd {
            Some(dir) => cwd.join(dir),
            None => cwd.to_path_buf(),
        })
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut server = Server(cmd.spawn()?);
    let (Some(stdin), Some(stdout)) = (server.0.stdin.take(), server.0.stdout.take()) else {
        return Err(BenchError::Run(
            "the MCP floor client: no stdio pipes".into(),
        ));
    };
    let mut reader = BufReader::new(stdout);
    let mut writer = BufWriter::new(stdin);
    writeln!(writer, "{}", initialize_request())?;
    writer.flush()?;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Err(BenchError::Run(
                "the MCP floor client: the server closed before answering initialize".into(),
            ));
        }
        let message: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        if message.get("id") == Some(&json!(0)) {
            if message.get("result").is_none() {
                return Err(BenchError::Run(format!(
                    "the MCP floor client: initialize failed: {message}"
                )));
            }
            break;
        }
    }
    writeln!(writer, "{INITIALIZED}")?;
    writer.flush()?;

    let started = Instant::now();
    std::thread::scope(|scope| {
        let sender = scope.spawn(move || -> std::io::Result<BufWriter<_>> {
            for i in 0..n {
                serde_json::to_writer(&mut writer, &call_request(tool, i))?;
                writer.write_all(b"\n")?;
            }
            writer.flush()?;
            Ok(writer)
        });
        let mut got = 0;
        while got < n {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                return Err(BenchError::Run(format!(
                    "the MCP floor client: the server closed after {got} of {n} answers"
                )));
            }
            let message: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if answered(&message, n)?.is_some() {
                got += 1;
            }
        }
        let wall = started.elapsed();
        match sender.join() {
            Ok(written) => drop(written?),
            Err(_) => return Err(BenchError::Run("the MCP floor writer panicked".into())),
        }
        Ok(wall)
    })
}

/// The JSON-RPC messages of a Streamable HTTP answer: a JSON body, or the `data:`
/// lines of an event stream.
fn messages(content_type: &str, body: &str) -> Vec<Value> {
    if content_type.starts_with("text/event-stream") {
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim_start()).ok())
            .collect()
    } else {
        serde_json::from_str(body).into_iter().collect()
    }
}

fn http(config: &McpServerConfig, url: &str, tool: &str, n: usize) -> Result<Duration, BenchError> {
    let headers = crate::mcp::remote::expanded_headers(
        &config.entry.headers,
        &crate::settings::secrets::env_var,
    )
    .map_err(|e| BenchError::Usage(format!("MCP server '{}': {e}", config.name)))?;
    let client = crate::mcp::remote::http_client()
        .map_err(|e| BenchError::Run(format!("the MCP floor client: {e}")))?;
    // One thread, as the runtime whose calls it is the floor of.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(http_calls(client, headers, url, tool, n))
}

async fn http_calls(
    client: reqwest::Client,
    headers: reqwest::header::HeaderMap,
    url: &str,
    tool: &str,
    n: usize,
) -> Result<Duration, BenchError> {
    use futures::StreamExt;
    let failed = |e: reqwest::Error| BenchError::Run(format!("the MCP floor client: {e}"));
    let post = |body: String, session: Option<&str>, version: Option<&str>| {
        let mut request = client
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .headers(headers.clone())
            .body(body);
        if let Some(s) = session {
            request = request.header("mcp-session-id", s);
        }
        if let Some(v) = version {
            request = request.header("mcp-protocol-version", v);
        }
        request.send()
    };
    let answer = |response: reqwest::Response| async move {
        let kind = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let status = response.status();
        let body = response.text().await?;
        Ok::<_, reqwest::Error>((status, messages(&kind, &body)))
    };

    let response = post(initialize_request().to_string(), None, None)
        .await
        .map_err(failed)?;
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let (status, init) = answer(response).await.map_err(failed)?;
    let version = init
        .iter()
        .find_map(|m| m["result"]["protocolVersion"].as_str().map(str::to_string));
    let Some(version) = version else {
        return Err(BenchError::Run(format!(
            "the MCP floor client: initialize failed ({status}): {init:?}"
        )));
    };
    post(INITIALIZED.to_string(), session.as_deref(), Some(&version))
        .await
        .map_err(failed)?;

    let started = Instant::now();
    let (session, version) = (session.as_deref(), version.as_str());
    let mut answers = futures::stream::iter(0..n)
        .map(|i| async move {
            let response = post(call_request(tool, i).to_string(), session, Some(version)).await?;
            answer(response).await
        })
        .buffer_unordered(HTTP_IN_FLIGHT);
    let mut got = 0;
    while let Some(result) = answers.next().await {
        let (_, messages) = result.map_err(failed)?;
        for message in &messages {
            if answered(message, n)?.is_some() {
                got += 1;
            }
        }
    }
    let wall = started.elapsed();
    drop(answers);
    if got < n {
        return Err(BenchError::Run(format!(
            "the MCP floor client: {got} of {n} calls answered"
        )));
    }
    if let Some(s) = session {
        let _ = client
            .delete(url)
            .headers(headers.clone())
            .header("mcp-session-id", s)
            .send()
            .await;
    }
    Ok(wall)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_told_from_notifications_and_failures() {
        let ok = json!({"jsonrpc": "2.0", "id": 3, "result": {"content": []}});
        assert_eq!(answered(&ok, 5).unwrap(), Some(3));
        let note = json!({"jsonrpc": "2.0", "method": "notifications/message"});
        assert_eq!(answered(&note, 5).unwrap(), None);
        let failed = json!({"jsonrpc": "2.0", "id": 2, "result": {"isError": true}});
        assert!(answered(&failed, 5).is_err());
        let error = json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -1}});
        assert!(answered(&error, 5).is_err());
    }

    #[test]
    fn event_streams_and_json_bodies_both_give_their_messages() {
        let sse = "id: 1\ndata: {\"id\":1,\"result\":{}}\n\n";
        assert_eq!(messages("text/event-stream", sse).len(), 1);
        assert_eq!(messages("application/json", "{\"id\":1}").len(), 1);
        assert!(messages("application/json", "").is_empty());
    }
}
