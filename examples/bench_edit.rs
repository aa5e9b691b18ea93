//! Edit-matcher benchmark: exact, flexible, regex and missing edits on a generated
//! 50,000-line file, timed per edit; optionally the same inputs through gemini-cli's own
//! `calculateReplacement` (the edit oracle's peer install) for a ratio and a check that
//! both produce the same file.
//!
//!     cargo run --release --example bench_edit [-- --lines 50000 --iters 20]
//!     PEER_DIR=/tmp/peer cargo run --release --example bench_edit     # with gemini-cli
//!
//! The gemini-cli side runs `examples/edit_timing.mjs` with node, on the same cases.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use troupe::engine::edit::{self, EditRequest, Occurrences};

struct Case {
    name: &'static str,
    old: String,
    new: String,
}

fn generate(lines: usize) -> String {
    let mut out = String::with_capacity(lines * 32);
    let mut i = 0;
    while out.lines().count() < lines && i < lines {
        out.push_str(&format!(
            "def func_{i}(a, b):\n    value_{i} = compute(a, b)\n    if value_{i} > {i}:\n        return value_{i}\n    return None\n\n"
        ));
        i += 1;
    }
    let kept: Vec<&str> = out.lines().take(lines).collect();
    kept.join("\n") + "\n"
}

fn cases(functions: usize) -> Vec<Case> {
    let f = functions * 7 / 10;
    let r = functions * 4 / 5;
    vec![
        Case {
            name: "exact",
            old: format!("    value_{f} = compute(a, b)\n"),
            new: format!("    value_{f} = compute(b, a)\n"),
        },
        Case {
            name: "flexible",
            old: format!("value_{f} = compute(a, b)\nif value_{f} > {f}:\n  return value_{f}"),
            new: format!("value_{f} = compute(a, b)\nif value_{f} > {f}:\n  return value_{f} * 2"),
        },
        Case {
            name: "flex-shift",
            old: format!("value_{r} = compute(a, b)\nif value_{r} > {r}:\n    return value_{r}"),
            new: format!("value_{r} = compute(a, b)\nif value_{r} > {r}:\n    return -value_{r}"),
        },
        Case {
            name: "regex",
            old: format!("if value_{r}>{r} :"),
            new: format!("if value_{r} >= {r}:"),
        },
        Case {
            name: "miss",
            old: "this line does not exist anywhere in the file, not even close".to_string(),
            new: "x".to_string(),
        },
    ]
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn sha(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn main() {
    let lines = arg("--lines", 50_000);
    let iters = arg("--iters", 20).max(1);
    let content = generate(lines);
    let functions = lines / 6;
    let cases = cases(functions);
    println!(
        "edit matcher on a {}-line file ({} KB), {iters} edits per case",
        content.lines().count(),
        content.len() / 1024
    );
    let mut ours: Vec<(f64, String, String, usize)> = Vec::new();
    for case in &cases {
        let request = EditRequest {
            file_path: "big.py",
            old_string: &case.old,
            new_string: &case.new,
            want: Occurrences::Exactly(1),
        };
        let mut result = edit::compute_edit(Some(&content), &request, "/ws/big.py");
        let started = Instant::now();
        for _ in 0..iters {
            result = edit::compute_edit(Some(&content), &request, "/ws/big.py");
        }
        let ms = started.elapsed().as_secs_f64() * 1000.0 / iters as f64;
        let (strategy, hash, occurrences) = match &result {
            Ok(plan) => (
                plan.strategy.map_or("none", |s| s.as_str()).to_string(),
                sha(&plan.new_content),
                plan.occurrences,
            ),
            Err(e) => (format!("error:{:?}", e.kind), sha(&content), 0),
        };
        println!(
            "  troupe     {:<9} {ms:>9.3} ms/edit  strategy={strategy}",
            case.name
        );
        ours.push((ms, strategy, hash, occurrences));
    }
    let Some(peer) = std::env::var_os("PEER_DIR").map(PathBuf::from) else {
        println!("(set PEER_DIR to the gemini-cli install of the edit oracle to compare)");
        return;
    };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/edit_timing.mjs");
    let input = json!({
        "content": content,
        "iters": iters,
        "cases": cases.iter().map(|c| json!({"name": c.name, "old_string": c.old, "new_string": c.new})).collect::<Vec<_>>(),
    });
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => return eprintln!("tempdir: {e}"),
    };
    let input_path = dir.path().join("cases.json");
    if let Err(e) = std::fs::write(&input_path, input.to_string()) {
        return eprintln!("write cases: {e}");
    }
    let output = Command::new("node")
        .arg(&script)
        .arg(&input_path)
        .env("PEER_DIR", &peer)
        .output();
    let output = match output {
        Ok(o) if o.status.success() => o,
        Ok(o) => return eprintln!("node failed: {}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => return eprintln!("cannot run node: {e}"),
    };
    let theirs: Vec<Value> = match serde_json::from_slice(&output.stdout) {
        Ok(v) => v,
        Err(e) => return eprintln!("bad oracle output: {e}"),
    };
    for (case, (mine, theirs)) in cases.iter().zip(ours.iter().zip(&theirs)) {
        let ms = theirs["ms"].as_f64().unwrap_or(f64::NAN);
        let same = theirs["sha"].as_str() == Some(mine.2.as_str())
            && theirs["occurrences"].as_u64() == Some(mine.3 as u64);
        println!(
            "  gemini-cli {:<9} {ms:>9.3} ms/edit  strategy={}  ratio gemini/troupe = {:.1}x  same result: {same}",
            case.name,
            theirs["strategy"].as_str().unwrap_or("?"),
            ms / mine.0
        );
    }
}
