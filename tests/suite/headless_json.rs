//! What a script reads from `-o json` and `-o stream-json`: the `response` of the final
//! model round and the `stats` object with gemini-cli 0.61's keys, compared with what
//! gemini-cli printed on the same script.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::common::*;

/// The script of the comparison: a round that says something and reads a file, then
/// the answer.
fn look_then_answer() -> Vec<Value> {
    vec![
        turn(vec![
            text("Let me look."),
            call("read_file", json!({"file_path": "a.txt"})),
        ]),
        turn(vec![text("Done.")]),
    ]
}

/// The key paths of `stats`, with the names of models and tools (the keys under
/// `models` and `byName`) written `*`.
fn key_paths(value: &Value) -> BTreeSet<String> {
    fn walk(value: &Value, prefix: &str, out: &mut BTreeSet<String>) {
        let Some(map) = value.as_object() else {
            return;
        };
        let named = prefix.ends_with("models") || prefix.ends_with("byName");
        for (key, child) in map {
            let key = if named { "*" } else { key.as_str() };
            let path = match prefix {
                "" => key.to_string(),
                _ => format!("{prefix}.{key}"),
            };
            out.insert(path.clone());
            walk(child, &path, out);
        }
    }
    let mut out = BTreeSet::new();
    walk(value, "", &mut out);
    out
}

// The two key sets below were captured from the real gemini-cli 0.61.0
// (`node /tmp/peer/node_modules/@google/gemini-cli/bundle/gemini.js -m gemini-2.5-flash
// -p "Read a.txt" -o json --yolo --fake-responses responses.jsonl`, then `-o stream-json`,
// under `unshare -n` with HOME a temp dir holding run.sh's settings.json), on the script
// of `look_then_answer` (usage 100/10/110 a round), by flattening `stats` (and the
// stream-json `result.stats`) as `key_paths` does. gemini-cli printed
// `"response": "Done."`, `totalRequests` 2, `tokens.input` 200, one `read_file` with
// `decisions.accept` 1 (it counts a call run under --yolo as accepted).

/// gemini-cli 0.61's `-o json` `stats` key paths.
const GEMINI_JSON_STATS: &[&str] = &[
    "files",
    "files.totalLinesAdded",
    "files.totalLinesRemoved",
    "models",
    "models.*",
    "models.*.api",
    "models.*.api.errorsByType",
    "models.*.api.totalErrors",
    "models.*.api.totalLatencyMs",
    "models.*.api.totalRequests",
    "models.*.roles",
    "models.*.roles.main",
    "models.*.roles.main.tokens",
    "models.*.roles.main.tokens.cached",
    "models.*.roles.main.tokens.candidates",
    "models.*.roles.main.tokens.input",
    "models.*.roles.main.tokens.prompt",
    "models.*.roles.main.tokens.thoughts",
    "models.*.roles.main.tokens.tool",
    "models.*.roles.main.tokens.total",
    "models.*.roles.main.totalErrors",
    "models.*.roles.main.totalLatencyMs",
    "models.*.roles.main.totalRequests",
    "models.*.tokens",
    "models.*.tokens.cached",
    "models.*.tokens.candidates",
    "models.*.tokens.input",
    "models.*.tokens.prompt",
    "models.*.tokens.thoughts",
    "models.*.tokens.tool",
    "models.*.tokens.total",
    "tools",
    "tools.byName",
    "tools.byName.*",
    "tools.byName.*.count",
    "tools.byName.*.decisions",
    "tools.byName.*.decisions.accept",
    "tools.byName.*.decisions.auto_accept",
    "tools.byName.*.decisions.modify",
    "tools.byName.*.decisions.reject",
    "tools.byName.*.durationMs",
    "tools.byName.*.fail",
    "tools.byName.*.success",
    "tools.totalCalls",
    "tools.totalDecisions",
    "tools.totalDecisions.accept",
    "tools.totalDecisions.auto_accept",
    "tools.totalDecisions.modify",
    "tools.totalDecisions.reject",
    "tools.totalDurationMs",
    "tools.totalFail",
    "tools.totalSuccess",
];

/// gemini-cli 0.61's stream-json `result.stats` key paths.
const GEMINI_STREAM_STATS: &[&str] = &[
    "cached",
    "duration_ms",
    "input",
    "input_tokens",
    "models",
    "models.*",
    "models.*.cached",
    "models.*.input",
    "models.*.input_tokens",
    "models.*.output_tokens",
    "models.*.total_tokens",
    "output_tokens",
    "tool_calls",
    "total_tokens",
];

/// The key paths gemini-cli has that `ours` lacks.
fn missing(reference: &[&str], ours: &BTreeSet<String>) -> Vec<String> {
    reference
        .iter()
        .filter(|k| !ours.contains(**k))
        .map(|k| k.to_string())
        .collect()
}

#[test]
fn json_response_is_the_final_rounds_text() {
    let s = Scratch::new();
    s.write("a.txt", "hello\n");
    let (report, out) = s.run_json(
        &look_then_answer(),
        &["-m", "gemini-2.5-flash", "-p", "Read a.txt", "--yolo"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    // gemini-cli 0.61 on the same script: "Done." (not "Let me look.Done.").
    assert_eq!(report["response"], "Done.", "{report}");
}

#[test]
fn json_stats_have_every_key_of_gemini_cli() {
    let s = Scratch::new();
    s.write("a.txt", "hello\n");
    let (report, out) = s.run_json(
        &look_then_answer(),
        &["-m", "gemini-2.5-flash", "-p", "Read a.txt", "--yolo"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let stats = &report["stats"];
    let keys = key_paths(stats);
    assert_eq!(
        missing(GEMINI_JSON_STATS, &keys),
        Vec::<String>::new(),
        "{stats:#}"
    );
    // The values gemini-cli gave on this script.
    let model = &stats["models"]["gemini-2.5-flash"];
    assert_eq!(model["api"]["totalRequests"], 2, "{stats:#}");
    assert_eq!(model["api"]["totalErrors"], 0, "{stats:#}");
    assert_eq!(model["tokens"]["input"], 200, "{stats:#}");
    assert_eq!(model["tokens"]["prompt"], 200, "{stats:#}");
    assert_eq!(model["roles"]["main"]["totalRequests"], 2, "{stats:#}");
    assert_eq!(stats["tools"]["totalDecisions"]["accept"], 1, "{stats:#}");
    assert_eq!(
        stats["tools"]["byName"]["read_file"]["decisions"]["accept"], 1,
        "{stats:#}"
    );
}

#[test]
fn stream_json_result_stats_have_every_key_of_gemini_cli() {
    let s = Scratch::new();
    s.write("a.txt", "hello\n");
    let out = s.run(
        &look_then_answer(),
        &[
            "-m",
            "gemini-2.5-flash",
            "-p",
            "Read a.txt",
            "--yolo",
            "-o",
            "stream-json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let events = stream_events(&out);
    let result = events.last().expect("a result event");
    assert_eq!(result["type"], "result", "{result}");
    let stats = &result["stats"];
    assert_eq!(
        missing(GEMINI_STREAM_STATS, &key_paths(stats)),
        Vec::<String>::new(),
        "{stats:#}"
    );
    assert_eq!(stats["input"], 200, "{stats}");
    assert_eq!(stats["cached"], 0, "{stats}");
    assert_eq!(
        stats["models"]["gemini-2.5-flash"]["input_tokens"], 200,
        "{stats}"
    );
    // As in gemini-cli, both rounds' text were streamed as `message` deltas.
    let said: String = events
        .iter()
        .filter(|e| e["type"] == "message" && e["role"] == "assistant")
        .filter_map(|e| e["content"].as_str())
        .collect();
    assert_eq!(said, "Let me look.Done.");
}

#[test]
fn a_refused_call_counts_as_a_rejected_decision() {
    let s = Scratch::new();
    s.write("a.txt", "one\n");
    let turns = [
        turn(vec![call(
            "write_file",
            json!({"file_path": "a.txt", "content": "two\n"}),
        )]),
        turn(vec![text("Could not.")]),
    ];
    let (report, _) = s.run_json(&turns, &["-p", "change a.txt"]);
    let decisions = &report["stats"]["tools"]["byName"]["write_file"]["decisions"];
    assert_eq!(decisions["reject"], 1, "{report:#}");
    assert_eq!(report["stats"]["tools"]["totalDecisions"]["reject"], 1);
    assert_eq!(report["response"], "Could not.");
}
