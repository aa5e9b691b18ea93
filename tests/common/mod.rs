//! Helpers for black-box tests: a scratch directory holding a workspace and a HOME,
//! scripted-model files in gemini-cli's fake-responses format, and a runner for the
//! real `troupe` binary that records what the model was sent.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub mod harbor;
pub mod in_process;
pub mod landlock;
pub mod loopback;
pub mod processes;

use serde_json::{json, Value};

/// A temp dir with `ws/` (the workspace, the process's cwd) and `home/` (its HOME).
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("ws")).expect("ws");
        std::fs::create_dir_all(dir.path().join("home")).expect("home");
        Self { dir }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The workspace (canonical path, as troupe reports it).
    pub fn ws(&self) -> PathBuf {
        std::fs::canonicalize(self.dir.path().join("ws")).expect("canonical ws")
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// Writes a file under the workspace, creating parents.
    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.ws().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, text).expect("write");
        path
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.ws().join(rel)).expect("read")
    }

    /// Writes a fake-responses script, one model call per element.
    pub fn script(&self, turns: &[Value]) -> PathBuf {
        let path = self.root().join("responses.jsonl");
        let text: String = turns.iter().map(|t| format!("{t}\n")).collect();
        std::fs::write(&path, text).expect("script");
        path
    }

    pub fn requests_path(&self) -> PathBuf {
        self.root().join("requests.jsonl")
    }

    /// The request bodies the model received, in order.
    pub fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(self.requests_path())
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("request json"))
            .collect()
    }

    /// A `troupe` command in the workspace with HOME and TROUPE_HOME inside the scratch
    /// dir, test tools on and requests logged.
    pub fn command(&self) -> Command {
        let mut cmd = self.bare_command();
        cmd.arg("--log-requests").arg(self.requests_path());
        cmd
    }

    /// Like [`command`] without any argument (for subcommands).
    pub fn bare_command(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_troupe"));
        cmd.current_dir(self.ws())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.home())
            .env("TROUPE_HOME", self.home().join(".troupe"))
            .env("TROUPE_TEST_TOOLS", "1")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        cmd
    }

    /// The command of a headless session on `turns` with the given extra arguments.
    fn scripted(&self, turns: &[Value], args: &[&str]) -> Command {
        let script = self.script(turns);
        let mut cmd = self.command();
        cmd.arg("--fake-responses").arg(script).args(args);
        cmd
    }

    /// Runs a headless session on `turns` with the given extra arguments.
    pub fn run(&self, turns: &[Value], args: &[&str]) -> Output {
        self.scripted(turns, args).output().expect("run troupe")
    }

    /// Starts a headless session on `turns` (its output discarded), for a test that
    /// watches or kills the process while it runs.
    pub fn spawn(&self, turns: &[Value], args: &[&str]) -> std::process::Child {
        self.scripted(turns, args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn troupe")
    }

    /// Runs with `-o json` and parses stdout.
    pub fn run_json(&self, turns: &[Value], args: &[&str]) -> (Value, Output) {
        let mut all = vec!["-o", "json"];
        all.extend_from_slice(args);
        let out = self.run(turns, &all);
        let value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (value, out)
    }
}

/// A function-call part.
pub fn call(name: &str, args: Value) -> Value {
    json!({"functionCall": {"name": name, "args": args}})
}

/// A text part.
pub fn text(t: &str) -> Value {
    json!({"text": t})
}

/// One model call answered with one chunk holding `parts`.
pub fn turn(parts: Vec<Value>) -> Value {
    json!({"method": "generateContentStream", "response": [{
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}
    }]})
}

/// The functionResponse parts of a request's last content.
pub fn function_responses(request: &Value) -> Vec<Value> {
    let contents = request["contents"].as_array().expect("contents");
    contents.last().expect("last content")["parts"]
        .as_array()
        .expect("parts")
        .iter()
        .filter_map(|p| p.get("functionResponse").cloned())
        .collect()
}

/// The `-o json` object a run printed on stdout (a panic naming both streams if it is
/// not JSON).
pub fn json_out(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            stdout(out),
            stderr(out)
        )
    })
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The events of a `-o stream-json` run, one JSON value per stdout line.
pub fn stream_events(out: &Output) -> Vec<Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a stream-json line"))
        .collect()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Waits for `child` and returns its exit status word and its peak resident memory
/// in KiB (`wait4`'s `ru_maxrss`).
pub fn wait_with_peak_rss(child: std::process::Child) -> (i32, i64) {
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid out-parameter for wait4.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    // SAFETY: waits for our own child, writing into locals.
    let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(got, pid, "wait4");
    (status, usage.ru_maxrss)
}

impl Scratch {
    /// Runs a headless session on `turns` with stdout and stderr in files of the
    /// scratch dir; kills it and fails when it has not ended within `limit`. Returns
    /// its status, stdout and stderr.
    pub fn run_within(
        &self,
        turns: &[Value],
        args: &[&str],
        limit: std::time::Duration,
    ) -> (std::process::ExitStatus, String, String) {
        let child = self.spawn_logged(turns, args);
        self.wait_within(child, limit)
    }

    /// Starts a headless session on `turns` with stdout and stderr in files of the
    /// scratch dir (see [`Scratch::wait_within`]).
    pub fn spawn_logged(&self, turns: &[Value], args: &[&str]) -> std::process::Child {
        let out = std::fs::File::create(self.root().join("stdout")).expect("stdout file");
        let err = std::fs::File::create(self.root().join("stderr")).expect("stderr file");
        self.scripted(turns, args)
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .expect("spawn troupe")
    }

    /// Waits for a child of [`Scratch::spawn_logged`]; kills it and fails when it has
    /// not ended within `limit`.
    pub fn wait_within(
        &self,
        mut child: std::process::Child,
        limit: std::time::Duration,
    ) -> (std::process::ExitStatus, String, String) {
        let read = |name: &str| std::fs::read_to_string(self.root().join(name)).unwrap_or_default();
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("try_wait") {
                break status;
            }
            if started.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "troupe did not finish within {limit:?}; stderr:\n{}",
                    read("stderr")
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        (status, read("stdout"), read("stderr"))
    }
}
