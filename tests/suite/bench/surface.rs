//! The command-line surface around the benchmark: usage errors said once and refused
//! up front, help text on every argument, the plot's axes, and `troupe demo` showing
//! what it did (the diff it applied, the timing of each parallel batch).

use crate::common::*;

#[test]
fn a_bench_error_is_prefixed_once() {
    let s = Scratch::new();
    let out = s
        .bare_command()
        .args(["bench", "--sweep", "calls"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    // A debug build's warning may come first; the error is one line of its own.
    let errors: Vec<&str> = err.lines().filter(|l| !l.contains("warning:")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(
        errors[0].starts_with("troupe: bench: --sweep `calls`: write PARAM=V1,V2,…"),
        "{err}"
    );
    assert!(!err.contains("troupe: troupe"), "{err}");
}

#[test]
fn zero_calls_is_a_usage_error() {
    let s = Scratch::new();
    let out = s
        .bare_command()
        .args(["bench", "--calls", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "stdout: {}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("--calls"), "{err}");
    assert!(err.contains("at least 1 call"), "{err}");
    assert!(stdout(&out).is_empty(), "nothing ran: {}", stdout(&out));
}

#[test]
fn config_and_trust_arguments_have_help() {
    let s = Scratch::new();
    let help = |args: &[&str]| {
        let out = s.bare_command().args(args).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let config = help(&["config", "--help"]);
    // The flag's line and the one after it (clap puts long helps on the next line).
    let lines: Vec<&str> = config.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim_start().starts_with("-c, --config <KEY=VALUE>"))
        .unwrap_or_else(|| panic!("{config}"));
    let text = lines[at..(at + 2).min(lines.len())].join(" ");
    assert!(text.contains("Override a setting"), "{config}");
    assert!(config.contains("--allowed-mcp-server-names"), "{config}");
    for command in ["trust", "untrust"] {
        let text = help(&[command, "--help"]);
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("[DIR]"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(line.contains("default: the current directory"), "{text}");
    }
}

/// The texts of an SVG's `<text>` elements.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_string())
        })
        .collect()
}

#[test]
fn a_sweep_over_orders_of_magnitude_is_plotted_on_a_log_axis() {
    let s = Scratch::new();
    let svg = s.root().join("sweep.svg");
    let out = s
        .bare_command()
        .args(["bench", "--sweep", "calls=10,100,1000", "--plot"])
        .arg(&svg)
        .output()
        .unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let text = std::fs::read_to_string(&svg).unwrap();
    let texts = svg_texts(&text);
    let numbers: Vec<&String> = texts.iter().filter(|t| t.parse::<f64>().is_ok()).collect();
    for tick in ["10", "100", "1000"] {
        assert!(
            numbers.iter().any(|n| *n == tick),
            "a tick at {tick}: {numbers:?}"
        );
    }
    assert!(
        numbers.iter().all(|n| !n.contains('.')),
        "whole-number ticks only: {numbers:?}"
    );
    assert!(texts.iter().any(|t| t == "calls (log scale)"), "{texts:?}");
    // The default palette (plotters' Palette99) is not colour-blind safe; the lines
    // use Okabe–Ito's colours.
    assert!(text.contains("#0072B2"), "Okabe–Ito blue");
    assert!(text.contains("#E69F00"), "Okabe–Ito orange");
}

#[test]
fn the_demo_shows_its_diff_and_the_timing_of_its_parallel_batches() {
    let s = Scratch::new();
    let tmp = s.root().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let out = s
        .bare_command()
        .arg("demo")
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("[parallel batch of 4 calls (list_directory, read_file, read_file, glob): "),
        "{text}"
    );
    let timing = text
        .lines()
        .find(|l| l.starts_with("[parallel batch of 4 calls"))
        .unwrap_or_default();
    assert!(
        timing.contains(" ms on the clock, ") && timing.ends_with(" ms one after another]"),
        "{timing}"
    );
    for line in [
        "--- a/src/app.py",
        "+++ b/src/app.py",
        "-        print(\"Hello, \" + name)",
        "+        print(\"Hello, \" + name + \"!\")",
        "--- /dev/null",
        "+++ b/NOTES.md",
        "+# Notes",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} in:\n{text}");
    }
    assert!(
        text.lines().any(|l| l.starts_with("@@ -")),
        "a hunk: {text}"
    );
}
