use super::*;

const APPENDIX: &str = include_str!("../../../tests/fixtures/sessions/spec-appendix.jsonl");

fn responses(history: &[Content]) -> Vec<String> {
    history
        .iter()
        .flat_map(|c| c.parts.iter())
        .filter_map(|p| p.function_response.as_deref())
        .map(|r| r.id.clone().unwrap_or_default())
        .collect()
}

#[test]
fn gemini_cli_file_rebuilds_with_each_response_once() {
    let loaded = load(APPENDIX, "a.jsonl").unwrap();
    assert_eq!(
        loaded.meta.session_id,
        "2bf63e19-a0e4-4cd0-a4c8-2fb6fac4c3e3"
    );
    let rebuilt = rebuild(&loaded.messages);
    assert_eq!(
        responses(&rebuilt.history),
        ["read_file_1795423898444_0", "write_file_1795423898734_0"]
    );
    let roles: Vec<Role> = rebuilt.history.iter().map(|c| c.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Model,
            Role::User,
            Role::Model,
            Role::User,
            Role::Model
        ]
    );
    assert_eq!(
        rebuilt.history[0].text(),
        "Please read hello.txt and write out.txt"
    );
    assert_eq!(rebuilt.history[1].text(), "Let me read it.");
    let call = rebuilt.history[1].function_calls().next().unwrap();
    assert_eq!(call.id.as_deref(), Some("read_file_1795423898444_0"));
    assert_eq!(rebuilt.interrupted_calls, 0);
}

#[test]
fn a_rewrite_by_gemini_cli_resume_still_gives_each_response_once() {
    let loaded = load(APPENDIX, "a.jsonl").unwrap();
    let rebuilt = rebuild(&loaded.messages);
    // gemini-cli's resume appends its history as Part[] messages plus `_response`
    // records while the gemini records keep their toolCalls.
    let mut text = APPENDIX.to_string();
    let mut messages: Vec<Value> = loaded.messages.values().cloned().collect();
    let mut n = 0;
    let mut ids = || {
        n += 1;
        format!("r{n}")
    };
    messages.extend(history_records(&rebuilt.history, &mut ids, "t"));
    text.push_str(&json!({"$set": {"messages": messages}}).to_string());
    text.push('\n');
    let again = rebuild(&load(&text, "a.jsonl").unwrap().messages);
    assert_eq!(responses(&again.history).len(), 2);
}

#[test]
fn corrupt_lines_are_skipped_with_file_and_line() {
    let mut lines: Vec<&str> = APPENDIX.lines().collect();
    lines.insert(3, "{\"id\":\"broken");
    let text = lines.join("\n");
    let loaded = load(&text, "s.jsonl").unwrap();
    assert_eq!(
        loaded.warnings,
        ["s.jsonl:4: skipped a corrupt session record"]
    );
    assert_eq!(rebuild(&loaded.messages).history.len(), 6);
}

#[test]
fn a_file_that_is_not_a_session_is_refused() {
    assert!(matches!(
        load("hello\nworld\n", "x.txt"),
        Err(SessionFileError::NotASession { .. })
    ));
    assert!(load("{\"a\":1}\n", "x.json").is_err());
}

#[test]
fn unanswered_calls_are_answered_as_interrupted_and_repaired() {
    let text = [
        json!({"sessionId": "s", "projectHash": "h", "startTime": "t", "lastUpdated": "t", "kind": "main"}),
        json!({"id": "u1", "timestamp": "t", "type": "user", "content": [{"text": "go"}]}),
        json!({"id": "g1", "timestamp": "t", "type": "gemini", "content": "", "toolCalls": [
            {"id": "read_file__a", "name": "read_file", "args": {"file_path": "x"}, "result": null, "status": "executing"},
            {"id": "read_file__b", "name": "read_file", "args": {"file_path": "y"}, "result": null, "status": "executing"}]}),
    ]
    .iter()
    .map(|v| format!("{v}\n"))
    .collect::<String>();
    let rebuilt = rebuild(&load(&text, "s").unwrap().messages);
    assert_eq!(responses(&rebuilt.history), ["a", "b"]);
    assert_eq!(rebuilt.interrupted_calls, 2);
    assert_eq!(rebuilt.repaired_records.len(), 1);
    let repaired = format!("{text}{}\n", rebuilt.repaired_records[0]);
    let again = rebuild(&load(&repaired, "s").unwrap().messages);
    assert_eq!(responses(&again.history), ["a", "b"]);
    assert_eq!(again.interrupted_calls, 0);
}

#[test]
fn rewind_drops_the_message_and_what_follows() {
    let text = [
        json!({"sessionId": "s", "projectHash": "h"}),
        json!({"id": "u1", "type": "user", "content": [{"text": "one"}]}),
        json!({"id": "g1", "type": "gemini", "content": "ok"}),
        json!({"id": "u2", "type": "user", "content": [{"text": "two"}]}),
        json!({"$rewindTo": "u2"}),
    ]
    .iter()
    .map(|v| format!("{v}\n"))
    .collect::<String>();
    let loaded = load(&text, "s").unwrap();
    assert_eq!(loaded.messages.len(), 2);
}

#[test]
fn titles_are_cleaned_and_cut() {
    assert_eq!(clean_title("  fix\n the\tbug "), "fix the bug");
    assert_eq!(clean_title("修复 bug"), "修复 bug");
    let long = "x".repeat(120);
    assert_eq!(clean_title(&long).len(), 100);
}

#[test]
fn a_recorded_call_id_reads_back_as_the_wire_id() {
    let mut recorded = String::from("left over");
    record_call_id("read_file", "read_file_17_3", &mut recorded);
    assert_eq!(recorded, "read_file__read_file_17_3");
    assert_eq!(wire_call_id("read_file", &recorded), "read_file_17_3");
    record_call_id("glob", "", &mut recorded);
    assert_eq!(recorded, "glob__", "the buffer is cleared first");
}
