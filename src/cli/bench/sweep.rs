//! `--sweep` and `--repeat`: every combination of the swept values, each run in a
//! child `troupe bench` process, and the table of medians over the runs.

use serde_json::{json, Value};

use super::measure::{round, Cell};
use super::{describe, plot, BenchError};
use crate::cli::BenchArgs;

/// Parameters `--sweep` can vary.
const SWEEPABLE: [&str; 5] = [
    "calls",
    "actors_per_tool",
    "fs_threads",
    "window",
    "tool_threads",
];

/// Every combination of the swept values (the flags give the rest).
fn cells(args: &BenchArgs, base: Cell) -> Result<Vec<Cell>, BenchError> {
    let mut cells = vec![base];
    for spec in &args.sweep {
        let (name, values) = spec
            .split_once('=')
            .ok_or_else(|| BenchError::Usage(format!("--sweep `{spec}`: write PARAM=V1,V2,…")))?;
        let name = name.trim().replace('-', "_");
        if !SWEEPABLE.contains(&name.as_str()) {
            return Err(BenchError::Usage(format!(
                "--sweep: `{name}` is not one of {}",
                SWEEPABLE.join(", ")
            )));
        }
        let values: Vec<usize> = values
            .split(',')
            .map(|v| v.trim().parse::<usize>())
            .collect::<Result<_, _>>()
            .map_err(|_| {
                BenchError::Usage(format!("--sweep `{spec}`: values must be whole numbers"))
            })?;
        if values.is_empty() || (name != "tool_threads" && values.contains(&0)) {
            return Err(BenchError::Usage(format!(
                "--sweep `{spec}`: values must be at least 1"
            )));
        }
        let name = name.as_str();
        cells = cells
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |&v| {
                    let mut c = c;
                    match name {
                        "calls" => c.calls = v,
                        "actors_per_tool" => c.actors_per_tool = v,
                        "fs_threads" => c.fs_threads = v,
                        "window" => c.window = v,
                        _ => c.tool_threads = v,
                    }
                    c
                })
            })
            .collect();
    }
    Ok(cells)
}

/// One swept run: its cell, each repetition's metrics, the median.
struct CellResult {
    cell: Cell,
    runs: Vec<Value>,
    median: Value,
    latencies_us: Vec<f64>,
}

pub(super) fn sweep(args: &BenchArgs, base: Cell) -> Result<i32, BenchError> {
    let cells = cells(args, base)?;
    let repeat = args.repeat.max(1);
    let exe = std::env::current_exe()?;
    let mut results = Vec::new();
    let total = cells.len() * repeat;
    for (i, cell) in cells.iter().enumerate() {
        let mut runs = Vec::new();
        let mut latencies = Vec::new();
        for r in 0..repeat {
            eprintln!(
                "troupe bench: run {}/{total}: calls={} actors_per_tool={} fs_threads={} window={} tool_threads={}",
                i * repeat + r + 1,
                cell.calls,
                cell.actors_per_tool,
                cell.fs_threads,
                cell.window,
                cell.tool_threads
            );
            let last = i + 1 == cells.len() && r + 1 == repeat;
            let mut run = child_run(&exe, args, *cell, last)?;
            if let Some(l) = run.as_object_mut().and_then(|o| o.remove("latencies_us")) {
                latencies = serde_json::from_value(l).unwrap_or_default();
            }
            runs.push(run);
        }
        let median = median_of(&runs);
        results.push(CellResult {
            cell: *cell,
            runs,
            median,
            latencies_us: latencies,
        });
    }
    println!("{}", table(&results));
    let report = json!({
        "workload": describe(args),
        "repeat": repeat,
        "cells": results.iter().map(|r| json!({
            "cell": r.cell, "median": r.median, "runs": r.runs,
        })).collect::<Vec<_>>(),
    });
    if let Some(path) = &args.json {
        std::fs::write(
            path,
            serde_json::to_string_pretty(&report).unwrap_or_default(),
        )?;
    }
    if let Some(path) = &args.plot {
        let series: Vec<plot::Series> = results
            .iter()
            .map(|r| plot::Series {
                label: label_of(&r.cell, &args.sweep),
                latencies_us: r.latencies_us.clone(),
                calls_per_s: r.median["turn_calls_per_s"].as_f64().unwrap_or(0.0),
            })
            .collect();
        plot::draw(path, &series)?;
    }
    let all_ok = results.iter().all(|r| {
        r.runs
            .iter()
            .all(|run| run["succeeded"].as_u64() == Some(r.cell.calls as u64))
    });
    Ok(if all_ok { 0 } else { 1 })
}

/// `troupe bench` for one cell in a child process; its JSON.
fn child_run(
    exe: &std::path::Path,
    args: &BenchArgs,
    cell: Cell,
    last: bool,
) -> Result<Value, BenchError> {
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("bench")
        .args(["--calls", &cell.calls.to_string()])
        .args(["--actors-per-tool", &cell.actors_per_tool.to_string()])
        .args(["--fs-threads", &cell.fs_threads.to_string()])
        .args(["--window", &cell.window.to_string()])
        .args(["--tool-threads", &cell.tool_threads.to_string()])
        .args(["--seed", &args.seed.to_string()])
        .arg("--emit-latencies");
    // The tool as `--tool` spells it (`read-file`, `list-directory`, `glob`).
    let tool = clap::ValueEnum::to_possible_value(&args.tool.builtin())
        .map(|value| value.get_name().to_string())
        .unwrap_or_else(|| "read-file".into());
    cmd.args(["--tool", &tool]);
    if let Some(mix) = &args.mix {
        cmd.args(["--mix", mix]);
    }
    if let Some(latency) = &args.latency {
        cmd.args(["--latency", latency]);
    }
    if let Some(files) = args.files {
        cmd.args(["--files", &files.to_string()]);
    }
    if let Some(dir) = &args.workspace {
        cmd.arg("--workspace").arg(dir);
    }
    if let Some(mcp) = args.mcp_spec() {
        cmd.args(["--mcp", mcp]);
    }
    if args.record_session {
        cmd.arg("--record-session");
    }
    if args.allow_writes {
        cmd.arg("--allow-writes");
    }
    if let (true, Some(trace)) = (last, &args.trace) {
        cmd.arg("--trace").arg(trace);
    }
    let out = cmd.stderr(std::process::Stdio::inherit()).output()?;
    serde_json::from_slice(&out.stdout).map_err(|e| {
        BenchError::Run(format!(
            "{e}; exit {:?}, output: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout)
        ))
    })
}

/// The median of each numeric metric over the runs.
fn median_of(runs: &[Value]) -> Value {
    let mut out = serde_json::Map::new();
    let Some(first) = runs.first().and_then(Value::as_object) else {
        return Value::Object(out);
    };
    for key in first.keys() {
        let mut values: Vec<f64> = runs.iter().filter_map(|r| r[key].as_f64()).collect();
        if values.len() != runs.len() {
            if let Some(v) = first.get(key) {
                out.insert(key.clone(), v.clone());
            }
            continue;
        }
        values.sort_by(|a, b| a.total_cmp(b));
        let mid = values.len() / 2;
        let median = if values.len() % 2 == 1 {
            values[mid]
        } else {
            (values[mid - 1] + values[mid]) / 2.0
        };
        let integral = runs.iter().all(|r| r[key].is_u64());
        out.insert(
            key.clone(),
            if integral {
                json!(median.round() as u64)
            } else {
                json!(round(median))
            },
        );
    }
    Value::Object(out)
}

fn label_of(cell: &Cell, sweep: &[String]) -> String {
    let swept: Vec<String> = sweep
        .iter()
        .filter_map(|s| s.split_once('=').map(|(n, _)| n.trim().replace('-', "_")))
        .collect();
    let all = [
        ("calls", cell.calls),
        ("actors_per_tool", cell.actors_per_tool),
        ("fs_threads", cell.fs_threads),
        ("window", cell.window),
        ("tool_threads", cell.tool_threads),
    ];
    let shown: Vec<String> = all
        .iter()
        .filter(|(n, _)| swept.iter().any(|s| s == n))
        .map(|(n, v)| format!("{n}={v}"))
        .collect();
    if shown.is_empty() {
        format!("calls={}", cell.calls)
    } else {
        shown.join(" ")
    }
}

/// The table of medians: one row per cell, every column filled (`n/a` where a figure
/// does not apply, e.g. the bare-loop overhead of a mixed workload).
fn table(results: &[CellResult]) -> String {
    const COLUMNS: [(&str, &str); 15] = [
        ("calls", "calls"),
        ("actors/tool", "actors_per_tool"),
        ("fs thr", "fs_threads"),
        ("window", "window"),
        ("tool thr", "tool_threads"),
        ("ok", "succeeded"),
        ("turn ms", "turn_wall_ms"),
        ("calls/s", "turn_calls_per_s"),
        ("p50 µs", "p50_us"),
        ("p99 µs", "p99_us"),
        ("overhead µs/call", "overhead_per_call_us"),
        ("CPU overhead µs/call", "cpu_overhead_per_call_us"),
        ("CPU ×bare", "cpu_ratio"),
        ("RSS MB", "peak_rss_mb"),
        ("start ms", "session_start_ms"),
    ];
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            COLUMNS
                .iter()
                .map(|(_, key)| match &r.median[*key] {
                    Value::Number(n) => {
                        let v = n.as_f64().unwrap_or(0.0);
                        if v.fract() == 0.0 {
                            format!("{v:.0}")
                        } else {
                            format!("{v:.2}")
                        }
                    }
                    Value::Null => "n/a".into(),
                    other => other.to_string(),
                })
                .collect()
        })
        .collect();
    let widths: Vec<usize> = COLUMNS
        .iter()
        .enumerate()
        .map(|(i, (h, _))| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([h.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: Vec<String>| -> String {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:>w$}", w = *w))
            .collect();
        format!("| {} |", padded.join(" | "))
    };
    let mut out = vec![line(COLUMNS.iter().map(|(h, _)| h.to_string()).collect())];
    out.push(format!(
        "|{}|",
        widths
            .iter()
            .map(|w| "-".repeat(w + 2))
            .collect::<Vec<_>>()
            .join("|")
    ));
    out.extend(rows.into_iter().map(line));
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::super::base_cell;
    use super::*;
    use clap::Parser;

    fn bench_args(extra: &[&str]) -> BenchArgs {
        let mut argv = vec!["troupe", "bench"];
        argv.extend(extra);
        match crate::cli::Cli::parse_from(argv).command {
            Some(crate::cli::Command::Bench(mut args)) => {
                args.calls = args.calls_given.unwrap_or(1000);
                *args
            }
            _ => panic!("not bench"),
        }
    }

    #[test]
    fn sweep_makes_every_combination_in_order() {
        let args = bench_args(&["--sweep", "calls=10,20", "--sweep", "actors_per_tool=1,2,4"]);
        let base = base_cell(&args).unwrap();
        let all = cells(&args, base).unwrap();
        assert_eq!(all.len(), 6);
        assert_eq!((all[0].calls, all[0].actors_per_tool), (10, 1));
        assert_eq!((all[5].calls, all[5].actors_per_tool), (20, 4));
        assert!(cells(&bench_args(&["--sweep", "speed=1"]), base).is_err());
        assert!(cells(&bench_args(&["--sweep", "window=0"]), base).is_err());
    }

    #[test]
    fn medians_and_table_fill_every_cell() {
        let runs = vec![
            json!({"turn_wall_ms": 3.0, "overhead_per_call_us": null, "succeeded": 10}),
            json!({"turn_wall_ms": 1.0, "overhead_per_call_us": null, "succeeded": 10}),
            json!({"turn_wall_ms": 2.0, "overhead_per_call_us": null, "succeeded": 10}),
        ];
        let median = median_of(&runs);
        assert_eq!(median["turn_wall_ms"], json!(2.0));
        let args = bench_args(&[]);
        let result = CellResult {
            cell: base_cell(&args).unwrap(),
            runs,
            median,
            latencies_us: vec![],
        };
        let text = table(&[result]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        let cells: Vec<&str> = lines[2]
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        assert_eq!(cells.len(), 15);
        assert!(cells.iter().all(|c| !c.is_empty()), "{text}");
        assert!(cells.contains(&"n/a"));
    }
}
