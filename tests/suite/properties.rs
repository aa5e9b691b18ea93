//! Property tests (proptest; they run with the suite on any toolchain — the
//! coverage-guided cargo-fuzz targets of the same parsers are in `fuzz/`) of everything
//! that parses what a model, a server, a script or a user hands in: the edit matcher,
//! the SSE framing, the Gemini and OpenAI stream decoders, the fake-responses parser,
//! the shell-command parser and path resolution. Each starts with the checked-in seed
//! corpus (`tests/corpus/<target>/`), then random cases: `PROPTEST_CASES` sets how many
//! (CI: the default below; a long run: thousands).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use proptest::prelude::*;
use serde_json::Value;

use troupe::engine::edit::{calculate_replacement, Occurrences};
use troupe::platform::filesystem::{Confined, OpenMode};
use troupe::platform::workspace::Workspace;

/// Cases per property unless `PROPTEST_CASES` says otherwise.
const CI_CASES: u32 = 128;

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(CI_CASES);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// The seed corpus of one target: every file's text.
fn corpus(target: &str) -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(target);
    let mut out: Vec<String> = std::fs::read_dir(&dir)
        .expect("corpus dir")
        .flatten()
        .map(|e| String::from_utf8_lossy(&std::fs::read(e.path()).expect("seed")).into_owned())
        .collect();
    out.sort();
    assert!(!out.is_empty(), "empty corpus {target}");
    out
}

/// Text drawn from the characters that matter to each parser.
fn tricky_text(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just(' '),
            Just('\t'),
            Just('\n'),
            Just('\r'),
            Just('a'),
            Just('b'),
            Just('$'),
            Just('('),
            Just(')'),
            Just('`'),
            Just('\''),
            Just('"'),
            Just('\\'),
            Just('{'),
            Just('}'),
            Just(':'),
            Just(','),
            Just('['),
            Just(']'),
            Just('é'),
            Just('日'),
            Just('\0'),
            Just('.'),
            Just('/'),
            Just(';'),
            Just('|'),
            Just('&'),
            Just('<'),
            Just('>'),
            Just('='),
            Just('#'),
            any::<char>(),
        ],
        0..max,
    )
    .prop_map(|v| v.into_iter().collect())
}

/// JSON values of any shape (bounded depth).
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "[a-z_]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let keys = prop_oneof![
            Just("candidates".to_string()),
            Just("content".to_string()),
            Just("parts".to_string()),
            Just("text".to_string()),
            Just("functionCall".to_string()),
            Just("name".to_string()),
            Just("args".to_string()),
            Just("finishReason".to_string()),
            Just("choices".to_string()),
            Just("delta".to_string()),
            Just("tool_calls".to_string()),
            Just("index".to_string()),
            Just("function".to_string()),
            Just("arguments".to_string()),
            Just("finish_reason".to_string()),
            Just("error".to_string()),
            Just("usageMetadata".to_string()),
            Just("thought".to_string()),
            "[a-z]{1,5}",
        ];
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(keys, inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn check_edit(content: &str, old: &str, new: &str) {
    for want in [
        Occurrences::Exactly(1),
        Occurrences::AtLeastOne,
        Occurrences::Exactly(2),
    ] {
        let r = calculate_replacement(content, old, new, want);
        // An exact, unique match of a plain string replaces exactly that.
        // (A match at the very end keeps the file's final newline, and CRLF in the new
        // text becomes LF, as in gemini-cli.)
        if !old.is_empty()
            && !content.contains('\r')
            && !new.contains('\r')
            && !content.ends_with(old)
            && !new.contains('$')
            && content.matches(old).count() == 1
            && want == Occurrences::Exactly(1)
            && r.occurrences == 1
            && r.strategy.map(|s| s.as_str()) == Some("exact")
        {
            assert_eq!(r.new_content, content.replacen(old, new, 1));
        }
    }
}

#[test]
fn edit_matcher_seed_corpus() {
    let seeds = corpus("edit");
    for content in &seeds {
        for old in &seeds {
            check_edit(content, old, "X");
            check_edit(content, old.trim(), "  Y\n");
        }
    }
}

/// The SSE events of `body` delivered in `cuts` chunks, through Troupe's reader.
fn sse_events(body: &[u8], cuts: &[usize]) -> Vec<Result<String, String>> {
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    let mut at = 0;
    for &cut in cuts {
        let end = (at + cut).min(body.len());
        chunks.push(body[at..end].to_vec());
        at = end;
    }
    chunks.push(body[at..].to_vec());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        use futures::StreamExt;
        let stream = futures::stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok::<_, std::io::Error>(bytes::Bytes::from(c))),
        );
        let response = http::Response::builder()
            .header("content-type", "text/event-stream")
            .body(reqwest::Body::wrap_stream(stream))
            .expect("response");
        let timeouts = troupe::providers::http::Timeouts {
            connect: std::time::Duration::from_secs(5),
            first_byte: std::time::Duration::from_secs(5),
            idle: std::time::Duration::from_secs(5),
        };
        troupe::providers::http::sse_data("fuzz", reqwest::Response::from(response), timeouts)
            .map(|e| e.map(|d| d.data).map_err(|e| e.to_string()))
            .collect()
            .await
    })
}

#[test]
fn sse_seed_corpus() {
    for seed in corpus("sse") {
        let whole = sse_events(seed.as_bytes(), &[]);
        let bytewise = sse_events(seed.as_bytes(), &vec![1; seed.len()]);
        assert_eq!(whole, bytewise, "chunking changed the events of {seed:?}");
    }
}

fn openai_decode(chunks: &[Value]) {
    let mut decoder = troupe::providers::openai::wire::StreamDecoder::default();
    for chunk in chunks {
        if decoder.push(chunk).is_err() {
            return;
        }
    }
    let _ = decoder.finish();
}

#[test]
fn openai_and_gemini_seed_corpus() {
    for seed in corpus("openai") {
        let chunks: Vec<Value> = seed
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        openai_decode(&chunks);
        for c in &chunks {
            let _ = troupe::engine::model::gemini_chunk_events(c);
        }
    }
}

#[test]
fn fake_responses_seed_corpus() {
    for seed in corpus("fake_responses") {
        let _ = troupe::providers::scripted::ScriptedModel::from_text("seed", &seed);
    }
}

fn shell_all(command: &str) {
    use troupe::engine::shell_syntax as sh;
    let _ = sh::parse(command);
    let _ = sh::strip_shell_wrapper(command);
    let _ = sh::has_command_substitution(command);
    let _ = sh::command_roots(command);
    let _ = sh::approval_keys(command);
    let _ = sh::allow_list_keys(command);
    let _ = troupe::engine::shell_readonly::structure_problem(command);
    let inside = |p: &std::path::Path| p.starts_with("/ws");
    let scope = troupe::engine::shell_readonly::PathScope {
        cwd: std::path::PathBuf::from("/ws"),
        home: std::path::PathBuf::from("/home/u"),
        inside: &inside,
        glob_inside: &inside,
        tree_clean: &|_: &std::path::Path| true,
    };
    let _ = troupe::engine::shell_readonly::classify(command, &scope);
}

#[test]
fn shell_seed_corpus() {
    for seed in corpus("shell") {
        shell_all(&seed);
        for line in seed.lines() {
            shell_all(line);
        }
    }
}

/// A workspace with links that lead out, a sentinel outside, and the confined opener.
struct PathWorld {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    confined: Confined,
}

const SENTINEL: &str = "OUTSIDE-SENTINEL";

fn path_world() -> PathWorld {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().canonicalize().expect("canonical");
    let ws = base.join("ws");
    std::fs::create_dir_all(ws.join("sub/deep")).expect("dirs");
    std::fs::write(base.join("secret"), SENTINEL).expect("secret");
    std::fs::write(ws.join("sub/a"), "inside").expect("inside");
    std::os::unix::fs::symlink(&base, ws.join("link_out")).expect("link");
    std::os::unix::fs::symlink("../../..", ws.join("sub/deep/up")).expect("up");
    std::os::unix::fs::symlink(ws.join("sub"), ws.join("abs_in")).expect("abs in");
    let workspace = Arc::new(Workspace::new(&ws, &[]).expect("workspace"));
    let confined = Confined::new(workspace).expect("confined");
    PathWorld {
        _dir: dir,
        ws,
        confined,
    }
}

/// Whatever `raw` is, an open succeeds only inside the workspace, and never reads the
/// sentinel.
fn check_path(world: &PathWorld, raw: &str) {
    use std::io::Read;
    let path = world.confined.resolve(raw);
    if let Ok(mut opened) = world.confined.open(&path, OpenMode::Read) {
        assert!(
            opened.real_path.starts_with(&world.ws),
            "{raw:?} opened {}",
            opened.real_path.display()
        );
        let mut text = String::new();
        let _ = opened.file.read_to_string(&mut text);
        assert!(!text.contains(SENTINEL), "{raw:?} read the sentinel");
    }
    if let Ok(opened) = world.confined.open(&path, OpenMode::Handle) {
        assert!(opened.real_path.starts_with(&world.ws), "{raw:?}");
    }
}

#[test]
fn path_seed_corpus() {
    let world = path_world();
    for seed in corpus("paths") {
        for line in seed.lines() {
            check_path(&world, line);
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn edit_matcher_never_panics_and_exact_matches_replace_exactly(
        content in tricky_text(200),
        old in tricky_text(20),
        new in tricky_text(20),
    ) {
        check_edit(&content, &old, &new);
        // A substring of the content is always found.
        if content.len() > 4 {
            let start = content.char_indices().nth(content.chars().count() / 3).map_or(0, |(i, _)| i);
            let end = content.char_indices().nth(content.chars().count() / 2).map_or(content.len(), |(i, _)| i);
            check_edit(&content, &content[start..end], &new);
        }
    }

    #[test]
    fn sse_framing_does_not_depend_on_chunking(
        body in proptest::collection::vec(prop_oneof![
            Just(b'\n'), Just(b'\r'), Just(b':'), Just(b' '), Just(b'd'), Just(b'a'),
            Just(b't'), Just(b'{'), Just(b'}'), any::<u8>(),
        ], 0..200),
        prefix_data in any::<bool>(),
        cuts in proptest::collection::vec(1usize..16, 0..20),
    ) {
        let mut body = body;
        if prefix_data {
            let mut with = b"data: ".to_vec();
            with.extend(body);
            body = with;
        }
        let whole = sse_events(&body, &[]);
        let cut = sse_events(&body, &cuts);
        prop_assert_eq!(whole, cut);
    }

    #[test]
    fn stream_decoders_never_panic(chunks in proptest::collection::vec(json_value(), 0..6)) {
        openai_decode(&chunks);
        for c in &chunks {
            let _ = troupe::engine::model::gemini_chunk_events(c);
        }
    }

    #[test]
    fn fake_responses_parser_never_panics(
        lines in proptest::collection::vec(prop_oneof![
            json_value().prop_map(|v| v.to_string()),
            tricky_text(40),
        ], 0..6),
    ) {
        let _ = troupe::providers::scripted::ScriptedModel::from_text("fuzz", &lines.join("\n"));
    }

    #[test]
    fn shell_parser_never_panics(command in tricky_text(80)) {
        shell_all(&command);
    }

    #[test]
    fn confined_paths_never_lead_outside(
        parts in proptest::collection::vec(prop_oneof![
            Just(".."), Just("."), Just("sub"), Just("a"), Just("deep"), Just("up"),
            Just("link_out"), Just("abs_in"), Just("secret"), Just("ws"), Just(""),
        ], 0..8),
        absolute in any::<bool>(),
    ) {
        let world = path_world();
        let mut raw = parts.join("/");
        if absolute {
            raw = format!("{}/{raw}", world.ws.display());
        }
        check_path(&world, &raw);
    }
}
