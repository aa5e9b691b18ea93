//! How a batch shows its progress: a bar on a terminal (tasks done / running /
//! failed, tokens, rate), JSON lines on stdout with `--progress json`, or nothing.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use serde_json::json;

use super::results::{TaskResult, TaskStatus};

/// `--progress`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum ProgressStyle {
    /// A bar when stderr is a terminal, else nothing.
    #[default]
    Auto,
    Bar,
    Json,
    None,
}

/// The batch's counters and where they are shown.
pub struct Progress {
    total: u64,
    skipped: u64,
    ok: AtomicU64,
    failed: AtomicU64,
    running: AtomicU64,
    peak_running: AtomicU64,
    tokens: AtomicU64,
    started: Instant,
    json: bool,
    bar: Option<indicatif::ProgressBar>,
    /// One JSON line at a time on stdout.
    out: Mutex<()>,
}

impl Progress {
    /// Counters for `total` tasks to run (`skipped` more were done before).
    pub fn new(style: ProgressStyle, total: u64, skipped: u64) -> Self {
        let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let bar = match style {
            ProgressStyle::Bar => true,
            ProgressStyle::Auto => terminal,
            ProgressStyle::Json | ProgressStyle::None => false,
        }
        .then(|| {
            let bar = indicatif::ProgressBar::new(total);
            if let Ok(template) = indicatif::ProgressStyle::with_template(
                "{bar:30} {pos}/{len} done · {msg} · {elapsed}",
            ) {
                bar.set_style(template);
            }
            bar
        });
        Self {
            total,
            skipped,
            ok: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            running: AtomicU64::new(0),
            peak_running: AtomicU64::new(0),
            tokens: AtomicU64::new(0),
            started: Instant::now(),
            json: style == ProgressStyle::Json,
            bar,
            out: Mutex::new(()),
        }
    }

    /// A task's session is starting.
    pub fn started(&self, id: &str) {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak_running.fetch_max(now, Ordering::SeqCst);
        self.line(json!({"type": "task_started", "id": id, "running": now}));
        self.redraw();
    }

    /// A task's session has ended (its result is yet to be counted).
    pub fn stopped(&self) {
        self.running.fetch_sub(1, Ordering::SeqCst);
    }

    /// A task's result.
    pub fn finished(&self, result: &TaskResult) {
        match result.status {
            TaskStatus::Ok => self.ok.fetch_add(1, Ordering::SeqCst),
            _ => self.failed.fetch_add(1, Ordering::SeqCst),
        };
        self.tokens.fetch_add(result.tokens.total, Ordering::SeqCst);
        self.line(json!({
            "type": "task_ended", "id": result.id, "status": result.status.as_str(),
            "wall_ms": result.wall_ms, "error": result.error,
        }));
        let counts = self.counts();
        self.line(json!({
            "type": "progress", "total": self.total, "done": counts.ok + counts.failed,
            "ok": counts.ok, "failed": counts.failed, "running": counts.running,
            "tokens": counts.tokens, "tasks_per_s": self.rate(),
        }));
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
        self.redraw();
    }

    /// The counters now.
    pub fn counts(&self) -> Counts {
        Counts {
            ok: self.ok.load(Ordering::SeqCst),
            failed: self.failed.load(Ordering::SeqCst),
            running: self.running.load(Ordering::SeqCst),
            peak_running: self.peak_running.load(Ordering::SeqCst),
            tokens: self.tokens.load(Ordering::SeqCst),
            skipped: self.skipped,
        }
    }

    /// Tasks finished per second so far.
    pub fn rate(&self) -> f64 {
        let counts = self.counts();
        let secs = self.started.elapsed().as_secs_f64().max(1e-3);
        ((counts.ok + counts.failed) as f64 / secs * 100.0).round() / 100.0
    }

    /// Ends the bar.
    pub fn close(&self) {
        if let Some(bar) = &self.bar {
            bar.finish();
        }
    }

    fn redraw(&self) {
        if let Some(bar) = &self.bar {
            let c = self.counts();
            bar.set_message(format!(
                "{} running · {} failed · {} tokens · {:.1} tasks/s",
                c.running,
                c.failed,
                c.tokens,
                self.rate()
            ));
        }
    }

    fn line(&self, value: serde_json::Value) {
        if !self.json {
            return;
        }
        let _one = self.out.lock();
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{value}");
        let _ = out.flush();
    }
}

/// The batch's counters at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub ok: u64,
    pub failed: u64,
    pub running: u64,
    pub peak_running: u64,
    pub tokens: u64,
    pub skipped: u64,
}
