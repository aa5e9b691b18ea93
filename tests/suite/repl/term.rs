//! A terminal for one `troupe` session: a tmux server of its own (socket in the
//! scratch dir), 120×50, with a clean environment.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::Scratch;

/// How long any expected text may take to appear before the test fails.
const PATIENCE: Duration = Duration::from_secs(30);

pub struct Term {
    socket: PathBuf,
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

impl Term {
    /// Starts `troupe` on `turns` in the scratch workspace; `env` adds variables.
    pub fn start(s: &Scratch, turns: &[Value], env: &[(&str, String)], args: &[&str]) -> Term {
        let term = Self::launch(s, turns, env, args);
        term.wait_for("Type a request");
        term
    }

    /// Like [`Term::start`] without waiting for the prompt (for what comes before it).
    pub fn launch(s: &Scratch, turns: &[Value], env: &[(&str, String)], args: &[&str]) -> Term {
        Self::launch_in(s, &s.ws(), turns, env, args)
    }

    /// Like [`Term::launch`], started in `dir` instead of the workspace.
    pub fn launch_in(
        s: &Scratch,
        dir: &std::path::Path,
        turns: &[Value],
        env: &[(&str, String)],
        args: &[&str],
    ) -> Term {
        let script = s.script(turns);
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, Ordering::Relaxed);
        let socket = s.root().join(format!("tmux-{n}.sock"));
        let mut vars = vec![
            format!("PATH={}", std::env::var("PATH").unwrap_or_default()),
            format!("HOME={}", s.home().display()),
            format!("TROUPE_HOME={}", s.home().join(".troupe").display()),
            "TROUPE_TEST_TOOLS=1".to_string(),
            "NO_COLOR=1".to_string(),
            "TERM=screen".to_string(),
        ];
        vars.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
        let mut command = format!(
            "cd {} && env -i {} {} --fake-responses {} --log-requests {}",
            shell_quote(&dir.display().to_string()),
            vars.iter()
                .map(|v| shell_quote(v))
                .collect::<Vec<_>>()
                .join(" "),
            shell_quote(env!("CARGO_BIN_EXE_troupe")),
            shell_quote(&script.display().to_string()),
            shell_quote(&s.requests_path().display().to_string()),
        );
        for arg in args {
            command.push(' ');
            command.push_str(&shell_quote(arg));
        }
        command.push_str("; echo \"[troupe exited $?]\"; sleep 600");
        let term = Term { socket };
        term.tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            "120",
            "-y",
            "50",
            "-s",
            "t",
            &command,
        ]);
        term
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux is needed for the REPL tests (apt-get install tmux)");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Everything on the terminal so far, scrollback included, wrapped lines joined.
    pub fn text(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-J", "-t", "t", "-S", "-"])
    }

    /// Like [`text`](Self::text) with colours and attributes as escape sequences.
    pub fn text_with_escapes(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-e", "-J", "-t", "t", "-S", "-"])
    }

    /// From now on, appends every byte the terminal receives to `file` (`None`: stop).
    pub fn record_output(&self, file: Option<&std::path::Path>) {
        match file {
            Some(f) => self.tmux(&[
                "pipe-pane",
                "-o",
                "-t",
                "t",
                &format!("cat >> {}", shell_quote(&f.display().to_string())),
            ]),
            None => self.tmux(&["pipe-pane", "-t", "t"]),
        };
    }

    /// The pid of `troupe` (the child of the pane's shell).
    pub fn troupe_pid(&self) -> u32 {
        let shell = self.tmux(&["list-panes", "-t", "t", "-F", "#{pane_pid}"]);
        let shell = shell.trim();
        let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children"))
            .expect("children of the pane's shell");
        children
            .split_whitespace()
            .next()
            .and_then(|p| p.parse().ok())
            .expect("troupe runs under the pane's shell")
    }

    /// The visible screen.
    pub fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "t"])
    }

    /// Sends tmux key names (`Enter`, `Down`, `C-c`, `BTab`, …).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "t"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// Types `text` literally, then Enter.
    pub fn line(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "t", "-l", text]);
        self.keys(&["Enter"]);
    }

    /// Types `text` literally, without Enter.
    pub fn tmux_literal(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "t", "-l", text]);
    }

    /// Lets the program set tmux's paste buffer with OSC 52.
    pub fn enable_clipboard(&self) {
        self.tmux(&["set-option", "-s", "set-clipboard", "on"]);
    }

    /// The newest paste buffer (what OSC 52 copied), or "" when none.
    pub fn clipboard(&self) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["show-buffer"])
            .output()
            .expect("tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The pane's title (what an OSC 0 or OSC 2 sequence would set).
    pub fn pane_title(&self) -> String {
        self.tmux(&["display-message", "-p", "-t", "t", "#{pane_title}"])
            .trim_end()
            .to_string()
    }

    /// Waits until the terminal shows `needle`; returns the text.
    pub fn wait_for(&self, needle: &str) -> String {
        self.wait_until(needle, |t| t.contains(needle))
    }

    /// Waits until `needle` is on the terminal `n` times.
    pub fn wait_for_count(&self, needle: &str, n: usize) -> String {
        self.wait_until(needle, |t| t.matches(needle).count() >= n)
    }

    /// The cursor's column and row on the visible screen.
    pub fn cursor(&self) -> (usize, usize) {
        let out = self.tmux(&[
            "display-message",
            "-p",
            "-t",
            "t",
            "#{cursor_x} #{cursor_y}",
        ]);
        let mut numbers = out.split_whitespace().map(|n| n.parse().unwrap());
        (numbers.next().unwrap(), numbers.next().unwrap())
    }

    /// Resizes the terminal to `columns` × 50.
    pub fn resize(&self, columns: usize) {
        let columns = columns.to_string();
        self.tmux(&["resize-window", "-t", "t", "-x", &columns, "-y", "50"]);
    }

    /// Waits for an empty prompt on the last line of the screen (the status line
    /// drawn under the prompt does not count).
    pub fn wait_prompt(&self) -> String {
        let started = Instant::now();
        loop {
            let screen = self.screen();
            let last = screen
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty() && !l.contains("% context left · "))
                .unwrap_or("");
            if last.trim_end().ends_with('>') {
                return self.text();
            }
            assert!(
                started.elapsed() < PATIENCE,
                "no prompt came back; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until `check` holds (something outside the terminal).
    pub fn wait_until_true(&self, what: &str, check: impl Fn() -> bool) {
        let started = Instant::now();
        while !check() {
            assert!(
                started.elapsed() < PATIENCE,
                "{what} did not happen; terminal:\n{}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn wait_until(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let started = Instant::now();
        loop {
            let text = self.text();
            if done(&text) {
                return text;
            }
            assert!(
                started.elapsed() < PATIENCE,
                "`{what}` did not appear; terminal:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}
