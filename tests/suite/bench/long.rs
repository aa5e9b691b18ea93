//! `troupe bench --turns` and `--prompt-size`: well-formed reports (their timings are
//! never asserted).

use serde_json::Value;

use crate::common::*;

fn bench(s: &Scratch, args: &[&str]) -> Value {
    let out = s.bare_command().arg("bench").args(args).output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn turns_reports_both_runs_by_tenth_and_their_ratio() {
    let s = Scratch::new();
    let report = bench(&s, &["--turns", "40"]);
    assert_eq!(report["turns"], 40, "{report}");
    assert_eq!(report["linear_ratio"], 4.0, "{report}");
    let runs = report["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2, "{report}");
    for (run, turns) in runs.iter().zip([10, 40]) {
        assert_eq!(run["turns"], turns, "{run}");
        assert_eq!(
            run["succeeded"], true,
            "every read of the run succeeded: {run}"
        );
        for key in ["wall_ms", "cpu_ms", "per_turn_us", "peak_rss_mb"] {
            assert!(run[key].as_f64().is_some_and(|v| v > 0.0), "{key}: {run}");
        }
        let tenths = run["per_turn_us_by_tenth"].as_array().expect("tenths");
        // One gap fewer than turns, in at most ten groups.
        assert!(!tenths.is_empty() && tenths.len() <= 10, "{run}");
        assert!(
            tenths.iter().all(|t| t.as_f64().is_some_and(|v| v > 0.0)),
            "{run}"
        );
    }
    let ratio = report["ratio"].as_f64().expect("ratio");
    let (quarter, full) = (
        runs[0]["wall_ms"].as_f64().unwrap(),
        runs[1]["wall_ms"].as_f64().unwrap(),
    );
    assert!(
        (ratio - full / quarter).abs() < 0.02 * ratio.max(1.0),
        "{report}"
    );
    // Too few turns to compare with a quarter: a usage error naming the flag.
    let out = s
        .bare_command()
        .args(["bench", "--turns", "3"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--turns 3"), "{}", stderr(&out));
}

#[test]
fn prompt_size_measures_the_first_request_of_each_profile() {
    let s = Scratch::new();
    let report = bench(&s, &["--prompt-size"]);
    for profile in ["default", "small"] {
        let p = &report[profile];
        let bytes = p["bytes"].as_u64().expect("bytes");
        let parts =
            p["system_instruction_bytes"].as_u64().unwrap() + p["tools_bytes"].as_u64().unwrap();
        assert!(parts > 0 && parts < bytes, "{report}");
        // A quarter of the characters (fewer than the bytes where text is not ASCII).
        let tokens = p["estimated_tokens"].as_u64().expect("estimated_tokens");
        assert!(
            tokens <= bytes.div_ceil(4) && tokens >= bytes / 8,
            "{report}"
        );
        assert!(p["tools"].as_u64().is_some_and(|n| n > 0), "{report}");
    }
    // The small profile offers fewer tools and a shorter prompt.
    assert!(report["small"]["tools"].as_u64() < report["default"]["tools"].as_u64());
    assert!(report["small"]["bytes"].as_u64() < report["default"]["bytes"].as_u64());
    assert!(report["small_over_default"]
        .as_f64()
        .is_some_and(|r| r > 0.0 && r < 1.0));
}
