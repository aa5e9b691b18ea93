//! The `--fake-responses` script parser: a script is accepted iff every non-blank line
//! is a JSON object with a known `method` and a `response` (an array for a stream);
//! an accepted script then answers exactly one call per line, in order, and reports
//! running out after the last.
#![no_main]

use futures::StreamExt;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use troupe::engine::model::ModelRequest;
use troupe::providers::scripted::ScriptedModel;
use troupe::providers::ModelClient;

const STREAM: &str = "generateContentStream";
const GENERATE: &str = "generateContent";

/// The methods of the script's lines, or `None` when a line is malformed.
fn expected_methods(text: &str) -> Option<Vec<String>> {
    let mut methods = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let value: Value = serde_json::from_str(line).ok()?;
        let method = value.get("method")?.as_str()?;
        let response = value.get("response")?;
        match method {
            STREAM if response.is_array() => {}
            STREAM => return None,
            GENERATE | "countTokens" | "embedContent" => {}
            _ => return None,
        }
        methods.push(method.to_string());
    }
    Some(methods)
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let parsed = ScriptedModel::from_text("fuzz.jsonl", &text);
    let expected = expected_methods(&text);
    let (model, methods) = match (parsed, expected) {
        (Ok(model), Some(methods)) => (model, methods),
        (Err(_), None) => return,
        (Ok(_), None) => panic!("accepted a malformed script"),
        (Err(e), Some(_)) => panic!("refused a well-formed script: {e}"),
    };
    let request = || ModelRequest::new("m", Vec::new());
    for (i, method) in methods.iter().enumerate() {
        match method.as_str() {
            STREAM => {
                let events: Vec<_> = futures::executor::block_on(model.stream(request()).collect());
                if let Some(Err(e)) = events.first() {
                    assert!(
                        !e.to_string().contains("No more mock responses"),
                        "line {} not answered: {e}",
                        i + 1
                    );
                }
            }
            GENERATE => {
                let _ = futures::executor::block_on(model.generate(request()));
            }
            _ => continue,
        }
    }
    let answered = methods
        .iter()
        .take_while(|m| *m == STREAM || *m == GENERATE)
        .count();
    if answered == methods.len() {
        assert_eq!(model.consumed(), methods.len(), "lines skipped or repeated");
        let after: Vec<_> = futures::executor::block_on(model.stream(request()).collect());
        match after.first() {
            Some(Err(e)) => assert!(e.to_string().contains("No more mock responses"), "{e}"),
            other => panic!("answered past the end of the script: {other:?}"),
        }
    }
});
