//! `--trajectory FILE`: the session's run kept as an ATIF trajectory
//! ([`crate::engine::trajectory`]). The handle shows every event it hands out to the
//! builder, and rewrites the file (whole, atomically) before it hands out the end of
//! a turn, so whoever sees a turn end can read its trajectory; every front end gets
//! this from the one handle.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::engine::text::iso8601;
use crate::engine::trajectory::{AgentInfo, TrajectoryBuilder};
use crate::protocol::{Event, UiEvent};

/// A session's trajectory and the file it is written to.
pub struct TrajectoryFile {
    path: PathBuf,
    builder: Mutex<TrajectoryBuilder>,
    /// Serializes the writes (a turn's end is written after the one before it).
    writing: Arc<tokio::sync::Mutex<()>>,
}

impl TrajectoryFile {
    /// A trajectory of this Troupe, written to `path`.
    pub fn new(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            builder: Mutex::new(TrajectoryBuilder::new(AgentInfo {
                name: "troupe".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                model_name: None,
                extra: None,
            })),
            writing: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    /// Where it is written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Takes one event the handle hands out; `true` when it ended the session's turn
    /// (the file is due).
    pub fn observe(&self, event: &Event) -> bool {
        let Event::Ui(event) = event else {
            return false;
        };
        let now = iso8601(SystemTime::now());
        if let Ok(mut builder) = self.builder.lock() {
            builder.observe(event, &now);
        }
        matches!(event, UiEvent::TurnFinished(_))
    }

    /// Writes the trajectory as it stands (nothing before the first step). A failure
    /// is logged and returned: the run goes on without it.
    pub async fn write(&self) -> Result<(), String> {
        let text = {
            let Ok(builder) = self.builder.lock() else {
                return Err("the trajectory builder was poisoned".into());
            };
            if builder.is_empty() {
                return Ok(());
            }
            serde_json::to_string_pretty(&builder.document()).map_err(|e| e.to_string())?
        };
        let _turn = self.writing.lock().await;
        let path = self.path.clone();
        let written = tokio::task::spawn_blocking(move || {
            crate::platform::sessions::write_atomic(&path, text.as_bytes())
        })
        .await;
        let result = match written {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(e) => Err(format!("the trajectory writer stopped: {e}")),
        };
        if let Err(error) = &result {
            tracing::warn!(%error, path = %self.path.display(), "trajectory not written");
        }
        result
    }
}
