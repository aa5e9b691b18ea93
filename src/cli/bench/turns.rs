//! `troupe bench --turns N`: a long session. The scripted model asks for one
//! `read_file` per model turn, N turns in a row within one prompt, then answers; the
//! run is done twice, with N/4 turns and with N, each in a session of its own. A session
//! whose every turn costs the same takes 4× as long for 4× the turns; the printed
//! `ratio` is the measured one. Each run also reports the cost of a turn against the
//! turn number (the mean of each tenth of the run), so growth shows where it starts.

use std::time::Instant;

use serde_json::{json, Value};

use super::measure::{model_turn, peak_rss_mb, reset_peak_rss, round, run_scripted};
use super::BenchError;

/// Files the turns read in turn (distinct arguments: loop detection is not the subject).
const FILES: usize = 64;

/// Runs N/4 and N turns; prints the report; 0 when every read of both runs succeeded.
pub fn run(turns: usize) -> Result<i32, BenchError> {
    if turns < 4 {
        return Err(BenchError::Usage(format!(
            "--turns {turns}: give at least 4 turns (the run is compared with a quarter of it)"
        )));
    }
    let dir = tempfile::Builder::new()
        .prefix("troupe-bench-turns-")
        .tempdir()?;
    for i in 0..FILES {
        let line = format!("line of file {i:03}: the quick brown fox jumps over the lazy dog\n");
        std::fs::write(dir.path().join(file_name(i)), line.repeat(3))?;
    }
    let quarter = one_run(dir.path(), turns / 4)?;
    let full = one_run(dir.path(), turns)?;
    let ratio = full.wall_ms / quarter.wall_ms.max(1e-6);
    let report = json!({
        "turns": turns,
        "runs": [quarter.report(), full.report()],
        "ratio": round(ratio),
        "linear_ratio": round(turns as f64 / (turns / 4) as f64),
    });
    println!(
        "{}",
        serde_json::to_string_pretty(&report).unwrap_or_default()
    );
    Ok(if quarter.succeeded && full.succeeded {
        0
    } else {
        1
    })
}

fn file_name(i: usize) -> String {
    format!("f{:03}.txt", i % FILES)
}

/// What one session of `turns` model turns measured.
struct TurnsRun {
    turns: usize,
    succeeded: bool,
    wall_ms: f64,
    cpu_ms: f64,
    peak_rss_mb: f64,
    /// Mean wall time of a turn in each tenth of the run, in µs.
    per_turn_us_by_tenth: Vec<f64>,
}

impl TurnsRun {
    fn report(&self) -> Value {
        json!({
            "turns": self.turns,
            "succeeded": self.succeeded,
            "wall_ms": round(self.wall_ms),
            "cpu_ms": round(self.cpu_ms),
            "per_turn_us": round(self.wall_ms * 1e3 / self.turns as f64),
            "per_turn_us_by_tenth": self.per_turn_us_by_tenth,
            "peak_rss_mb": self.peak_rss_mb,
        })
    }
}

fn one_run(root: &std::path::Path, turns: usize) -> Result<TurnsRun, BenchError> {
    let mut script = String::with_capacity(turns * 220);
    for i in 0..turns {
        let call = json!([{"functionCall": {"name": crate::tools::read_file::NAME, "args": {"file_path": file_name(i)}}}]);
        script.push_str(&model_turn(call).to_string());
        script.push('\n');
    }
    script.push_str(&model_turn(json!([{"text": format!("Read {turns} files.")}])).to_string());
    script.push('\n');
    let overrides = vec![
        "approval.mode=yolo".to_string(),
        format!("model.max_turns={}", turns + 1),
        // The history is never summarised (that would ask the script for a summary)
        // and never cut: every turn carries all of it.
        "model.compression.token_limits=*=4000000000".to_string(),
    ];
    reset_peak_rss();
    let started = Instant::now();
    let summary = run_scripted(root, script, &overrides, None)?;
    let total = started.elapsed();
    let mut done: Vec<Instant> = summary
        .calls
        .iter()
        .filter_map(|c| c.timeline.done)
        .collect();
    done.sort();
    // A turn's cost: from the previous read's end to this one's (the model round trip,
    // the request build, the scheduling and the read).
    let gaps: Vec<f64> = done
        .windows(2)
        .map(|w| w[1].duration_since(w[0]).as_secs_f64() * 1e6)
        .collect();
    let tenth = gaps.len().div_ceil(10).max(1);
    let per_turn_us_by_tenth = gaps
        .chunks(tenth)
        .map(|c| round(c.iter().sum::<f64>() / c.len() as f64))
        .collect();
    let ok = summary.calls.iter().filter(|c| c.ok).count();
    eprintln!(
        "troupe bench: {turns} turns in {:.2} s",
        total.as_secs_f64()
    );
    Ok(TurnsRun {
        turns,
        succeeded: ok == turns,
        wall_ms: summary.turn_elapsed.as_secs_f64() * 1e3,
        cpu_ms: summary.turn_cpu.as_secs_f64() * 1e3,
        peak_rss_mb: peak_rss_mb(),
        per_turn_us_by_tenth,
    })
}
