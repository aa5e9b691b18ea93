//! `troupe bench` and `--trace`: the outputs are well-formed (trace-event JSON with one
//! complete span per call, a sweep table with every cell, a plot that is SVG). Timings
//! are never asserted.

mod long;
mod surface;

use serde_json::{json, Value};

use crate::common::*;

/// Checks a Chrome trace: a `traceEvents` array whose `call` spans are complete events
/// (`ph: X`, numeric ts/dur) — one per call — each with its states nested inside it on
/// the same track. Returns the call spans.
fn check_trace(trace: &Value, calls: usize) -> Vec<Value> {
    let events = trace["traceEvents"].as_array().expect("traceEvents array");
    for e in events {
        let ph = e["ph"].as_str().expect("every event has ph");
        assert!(ph == "X" || ph == "M", "{e}");
        assert!(e["pid"].is_u64() && e["tid"].is_u64(), "{e}");
        if ph == "X" {
            assert!(e["ts"].as_f64().is_some_and(|t| t >= 0.0), "{e}");
            assert!(e["dur"].as_f64().is_some_and(|d| d >= 0.0), "{e}");
            assert!(e["name"].is_string(), "{e}");
        }
    }
    let spans: Vec<Value> = events
        .iter()
        .filter(|e| e["cat"] == "call")
        .cloned()
        .collect();
    assert_eq!(spans.len(), calls, "one complete span per call");
    let ids: std::collections::HashSet<&str> = spans
        .iter()
        .map(|s| s["args"]["call_id"].as_str().expect("call id"))
        .collect();
    assert_eq!(ids.len(), calls, "each call once");
    for span in &spans {
        let (ts, end) = (
            span["ts"].as_f64().unwrap(),
            span["ts"].as_f64().unwrap() + span["dur"].as_f64().unwrap(),
        );
        let states: Vec<&Value> = events
            .iter()
            .filter(|e| e["cat"] == "state" && e["tid"] == span["tid"])
            .filter(|e| {
                let t = e["ts"].as_f64().unwrap();
                t >= ts && t + e["dur"].as_f64().unwrap() <= end + 0.01
            })
            .collect();
        let names: Vec<&str> = states.iter().filter_map(|s| s["name"].as_str()).collect();
        assert!(names.contains(&"validating"), "{span} {names:?}");
        if span["args"]["status"] == "success" {
            assert!(names.contains(&"executing"), "{span} {names:?}");
            assert!(
                span["args"]["actor"]
                    .as_str()
                    .is_some_and(|a| a.contains('#')),
                "the tool actor that ran it: {span}"
            );
        }
    }
    // Thread names of every track used.
    for span in &spans {
        assert!(
            events
                .iter()
                .any(|e| e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] == span["tid"]),
            "{span}"
        );
    }
    spans
}

/// Runs `troupe bench ARGS --trace FILE` in the scratch dir: its JSON report and the
/// trace it wrote.
fn bench_with_trace(s: &Scratch, file: &str, args: &[&str]) -> (Value, Value) {
    let trace = s.root().join(file);
    let out = s
        .bare_command()
        .arg("bench")
        .args(args)
        .arg("--trace")
        .arg(&trace)
        .output()
        .unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let report = serde_json::from_slice(&out.stdout).expect("bench prints JSON");
    let trace = serde_json::from_slice(&std::fs::read(&trace).unwrap()).expect("trace is JSON");
    (report, trace)
}

#[test]
fn bench_trace_has_one_complete_span_per_call() {
    let s = Scratch::new();
    let (report, trace) =
        bench_with_trace(&s, "bench-trace.json", &["--calls", "40", "--window", "8"]);
    assert_eq!(report["succeeded"], 40);
    assert_eq!(report["window"], 8);
    assert!(report["overhead_per_call_us"].is_number());
    let spans = check_trace(&trace, 40);
    assert!(spans.iter().all(|s| s["name"] == "read_file"));
}

/// The names of the trace's tracks (`read_file#0@scheduler-arbiter-0 · lane 3`).
fn track_names(trace: &Value) -> Vec<String> {
    trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn tool_actors_share_the_schedulers_arbiter_unless_given_threads_of_their_own() {
    let s = Scratch::new();
    for (threads, arbiter) in [("0", "@scheduler-arbiter-0"), ("2", "@tool-arbiter-")] {
        let (report, trace) = bench_with_trace(
            &s,
            &format!("trace-{threads}.json"),
            &["--calls", "30", "--tool-threads", threads],
        );
        assert_eq!(report["succeeded"], 30);
        let tracks = track_names(&trace);
        assert!(!tracks.is_empty());
        for track in &tracks {
            assert!(
                track.starts_with("read_file#") && track.contains(arbiter),
                "tool_threads={threads}: {track}"
            );
        }
        if threads == "2" {
            // Two actors per tool, placed round-robin over the two threads.
            for thread in ["@tool-arbiter-0", "@tool-arbiter-1"] {
                assert!(tracks.iter().any(|t| t.contains(thread)), "{tracks:?}");
            }
        }
    }
}

#[test]
fn a_large_batch_starts_running_while_it_is_still_being_dispatched() {
    // The tool actors share the Scheduler's thread by default; the dispatcher yields to
    // them every few calls, so the first reads run before the last call is validated
    // (it used to queue all 200 first: the window of 512 never made it wait).
    let s = Scratch::new();
    let (report, trace) = bench_with_trace(&s, "trace.json", &["--calls", "200"]);
    assert_eq!(report["succeeded"], 200);
    check_trace(&trace, 200);
    let starts = |state: &str| -> Vec<f64> {
        trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X" && e["name"] == state)
            .map(|e| e["ts"].as_f64().unwrap())
            .collect()
    };
    let first_executing = starts("executing").into_iter().fold(f64::MAX, f64::min);
    let last_validating = starts("validating").into_iter().fold(f64::MIN, f64::max);
    assert!(
        first_executing < last_validating,
        "the first call ran at {first_executing} µs, after the last was validated at {last_validating} µs"
    );
}

#[test]
fn headless_trace_covers_refused_and_run_calls() {
    let s = Scratch::new();
    s.write("a.txt", "alpha\n");
    let trace = s.root().join("session-trace.json");
    let turns = [
        turn(vec![
            call("read_file", json!({"file_path": "a.txt"})),
            call("read_file", json!({"nope": 1})),
            call("no_such_tool", json!({})),
        ]),
        turn(vec![text("done")]),
    ];
    let trace_arg = trace.to_string_lossy().into_owned();
    let (out, proc) = s.run_json(&turns, &["-p", "go", "--yolo", "--trace", &trace_arg]);
    assert!(proc.status.success(), "stderr: {}", stderr(&proc));
    assert_eq!(out["stats"]["tools"]["totalCalls"], 3);
    let trace: Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let spans = check_trace(&trace, 3);
    let statuses: Vec<&str> = spans
        .iter()
        .filter_map(|s| s["args"]["status"].as_str())
        .collect();
    assert_eq!(statuses.iter().filter(|s| **s == "success").count(), 1);
    assert_eq!(statuses.iter().filter(|s| **s == "error").count(), 2);
}

#[test]
fn sweep_prints_a_full_table_writes_json_and_plots() {
    let s = Scratch::new();
    let json_path = s.root().join("sweep.json");
    let svg = s.root().join("sweep.svg");
    let out = s
        .bare_command()
        .args([
            "bench",
            "--sweep",
            "calls=5,12",
            "--sweep",
            "actors_per_tool=1,2",
            "--repeat",
            "2",
            "--json",
        ])
        .arg(&json_path)
        .arg("--plot")
        .arg(&svg)
        .output()
        .unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(
        lines.len(),
        2 + 4,
        "header, rule, one row per cell:\n{text}"
    );
    let width = lines[0].matches('|').count();
    for row in &lines[2..] {
        assert_eq!(row.matches('|').count(), width, "{row}");
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        assert!(
            cells.iter().all(|c| !c.is_empty()),
            "every cell filled: {row}"
        );
    }
    let calls_col: Vec<&str> = lines[2..]
        .iter()
        .map(|r| r.trim_matches('|').split('|').next().unwrap().trim())
        .collect();
    assert_eq!(calls_col, ["5", "5", "12", "12"]);
    let report: Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    let cells = report["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4);
    for cell in cells {
        assert_eq!(cell["runs"].as_array().unwrap().len(), 2);
        assert_eq!(cell["median"]["succeeded"], cell["cell"]["calls"]);
    }
    let svg_text = std::fs::read_to_string(&svg).unwrap();
    assert!(
        svg_text.starts_with("<svg") || svg_text.contains("<svg"),
        "an SVG"
    );
    assert!(svg_text.contains("Call latency"));
}

#[test]
fn mixed_workload_with_conflicting_edits_and_latency() {
    let s = Scratch::new();
    let out = s
        .bare_command()
        .args([
            "bench",
            "--calls",
            "30",
            "--mix",
            "read_file=50,grep_search=10,replace=30,run_shell_command=10",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["succeeded"], 30, "every edit applies in call order");
    assert!(report["overhead_per_call_us"].is_null());

    let out = s
        .bare_command()
        .args(["bench", "--calls", "20", "--latency", "2ms±1ms"])
        .output()
        .unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["succeeded"], 20);

    let out = s
        .bare_command()
        .args(["bench", "--calls", "3", "--latency", "soon"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--latency"), "{}", stderr(&out));
}

#[test]
fn workspace_runs_read_only_unless_writes_are_allowed_on_a_copy() {
    let s = Scratch::new();
    s.write("src/lib.rs", "pub fn a() {}\n");
    s.write("src/main.rs", "fn main() {}\n");
    let ws = s.ws().to_string_lossy().into_owned();
    let out = s
        .bare_command()
        .args(["bench", "--calls", "6", "--workspace", &ws])
        .output()
        .unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["succeeded"], 6);

    let out = s
        .bare_command()
        .args([
            "bench",
            "--calls",
            "6",
            "--workspace",
            &ws,
            "--mix",
            "read_file=1,replace=1",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--allow-writes"), "{}", stderr(&out));

    let out = s
        .bare_command()
        .args([
            "bench",
            "--calls",
            "6",
            "--workspace",
            &ws,
            "--mix",
            "read_file=1,replace=1",
            "--allow-writes",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(
        !s.ws().join(".troupe-bench").exists(),
        "the original is untouched"
    );
    assert_eq!(s.read("src/lib.rs"), "pub fn a() {}\n");
}

#[test]
fn record_session_writes_a_session_file_and_every_call_succeeds() {
    let s = Scratch::new();
    let out = s
        .bare_command()
        .args(["bench", "--calls", "20", "--record-session"])
        .output()
        .unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["succeeded"], 20);
    assert!(
        report["session_file_bytes"].as_u64().is_some_and(|b| b > 0),
        "{report}"
    );
    // The baseline records nothing.
    let out = s
        .bare_command()
        .args(["bench", "--calls", "5"])
        .output()
        .unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["session_file_bytes"].as_u64().unwrap_or(0),
        0,
        "{report}"
    );
}
