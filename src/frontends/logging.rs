//! The log: tracing sent to a file of its own (never to the terminal), written by a
//! thread of its own from a bounded queue.

use std::path::{Path, PathBuf};

use crate::settings::{self, Settings};

/// Keeps the log writer alive for the process.
pub type LogGuard = Option<tracing_appender::non_blocking::WorkerGuard>;

/// Lines the log writer's queue holds before new lines are dropped.
const LOG_QUEUE_LINES: usize = 8192;

/// Sends tracing to the log file (never to stdout/stderr). Failure to open it only
/// disables logging.
pub fn init_logging(settings: &Settings, override_path: Option<&Path>) -> LogGuard {
    let path = override_path.map(Path::to_path_buf).unwrap_or_else(|| {
        if settings.log.file.is_empty() {
            settings::troupe_home().join("logs").join("troupe.log")
        } else {
            PathBuf::from(&settings.log.file)
        }
    });
    if let Some(dir) = path.parent() {
        if std::fs::create_dir_all(dir).is_err() {
            return None;
        }
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .ok()?;
    // The writer thread's queue is allocated whole at start: the default (128,000
    // lines) costs 4 MB and a few milliseconds of every run, this one 256 KB. A burst
    // larger than the queue drops lines rather than block a handler (lossy).
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(LOG_QUEUE_LINES)
        .lossy(true)
        .finish(file);
    let filter = tracing_subscriber::EnvFilter::try_from_env("TROUPE_LOG").unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(format!("troupe={}", settings.log.level))
    });
    // The ACP crate traces whole protocol lines below info, `authenticate`'s key too.
    let filter = match "agent_client_protocol=info".parse() {
        Ok(cap) => filter.add_directive(cap),
        Err(_) => filter,
    };
    let _ = tracing_subscriber::fmt()
        .with_writer(writer)
        .with_ansi(false)
        .with_env_filter(filter)
        .try_init();
    std::panic::set_hook(Box::new(|info| {
        tracing::error!(panic = %info, "panic");
    }));
    Some(guard)
}
