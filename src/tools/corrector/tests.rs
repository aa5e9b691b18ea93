//! The Corrector against a scripted model and a real FileSystem pool.

use std::path::Path;

use serde_json::json;

use super::*;
use crate::platform::filesystem::FileSystem;
use crate::platform::workspace::Workspace;
use crate::providers::scripted::ScriptedModel;

fn answer(value: Value) -> String {
    json!({"method": "generateContent", "response": {"candidates": [{"content": {"role": "model", "parts": [{"text": value.to_string()}]}}]}}).to_string()
}

struct Setup {
    _dir: tempfile::TempDir,
    path: PathBuf,
    corrector: Addr<Corrector>,
    model: Arc<ScriptedModel>,
}

fn setup(content: &str, script: &[String], use_model: bool) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let path = root.join("a.py");
    std::fs::write(&path, content).unwrap();
    let workspace = Arc::new(Workspace::new(Path::new(&root), &[]).unwrap());
    let fs = FsClient::new(FileSystem::start_pool(workspace, 1).unwrap());
    let model = Arc::new(ScriptedModel::from_text("script", &script.join("\n")).unwrap());
    let corrector = Corrector::new(
        model.clone(),
        "m".into(),
        fs,
        CorrectorConfig {
            use_model,
            timeout: Duration::from_secs(5),
            cache_entries: 50,
        },
    )
    .start();
    Setup {
        _dir: dir,
        path,
        corrector,
        model,
    }
}

fn request(s: &Setup, old: &str, new: &str) -> CorrectEdit {
    let bytes = std::fs::read(&s.path).unwrap();
    CorrectEdit {
        path: s.path.clone(),
        snapshot: FileSnapshot::from_bytes(&bytes).unwrap(),
        old_string: old.into(),
        new_string: new.into(),
        instruction: Some("rename the greeting".into()),
        want: Occurrences::Exactly(1),
        error: "Could not find an exact match".into(),
        cancel: CancellationToken::new(),
    }
}

const FILE: &str = "def greet(name):\n    print('hello', name)\n";

#[actix::test]
async fn over_escaped_strings_are_fixed_without_a_model() {
    let s = setup("print('a')\n", &[], true);
    let out = s
        .corrector
        .send(request(&s, "print(\\'a\\')", "print(\\'b\\')"))
        .await
        .unwrap();
    let Correction::Fixed {
        old_string,
        new_string,
        method,
        ..
    } = out
    else {
        panic!("{out:?}")
    };
    assert_eq!(
        (old_string.as_str(), new_string.as_str(), method),
        ("print('a')", "print('b')", CorrectionMethod::Unescape)
    );
    assert_eq!(s.model.consumed(), 0);
}

#[actix::test]
async fn instruction_fixer_corrects_and_is_cached() {
    let fix = answer(
        json!({"search": "    print('hello', name)", "replace": "    print('hi', name)", "explanation": "wrong words"}),
    );
    let s = setup(FILE, &[fix], true);
    for round in 0..2 {
        let out = s
            .corrector
            .send(request(&s, "print('helo there')", "print('hi')"))
            .await
            .unwrap();
        let Correction::Fixed {
            old_string,
            method,
            cached,
            ..
        } = out
        else {
            panic!("round {round}: {out:?}")
        };
        assert_eq!(old_string, "    print('hello', name)");
        assert_eq!(method, CorrectionMethod::Instruction);
        assert_eq!(cached, round == 1);
    }
    assert_eq!(s.model.consumed(), 1);
}

#[actix::test]
async fn a_fix_that_does_not_match_falls_back_to_old_string_correction() {
    let script = [
        answer(json!({"search": "not in the file", "replace": "x", "explanation": "?"})),
        answer(json!({"corrected_target_snippet": "def greet(name):"})),
        answer(json!({"corrected_new_string": "def greet(person):"})),
    ];
    let s = setup(FILE, &script, true);
    let out = s
        .corrector
        .send(request(&s, "def greet(nme):", "def greet(person):"))
        .await
        .unwrap();
    let Correction::Fixed {
        old_string,
        new_string,
        method,
        ..
    } = out
    else {
        panic!("{out:?}")
    };
    assert_eq!(old_string, "def greet(name):");
    assert_eq!(new_string, "def greet(person):");
    assert_eq!(method, CorrectionMethod::OldString);
}

#[actix::test]
async fn no_changes_required_is_reported() {
    let script = [answer(
        json!({"search": "", "replace": "", "explanation": "already done", "noChangesRequired": true}),
    )];
    let s = setup(FILE, &script, true);
    let out = s.corrector.send(request(&s, "zzz", "yyy")).await.unwrap();
    assert_eq!(
        out,
        Correction::NoChangeRequired {
            explanation: "already done".into()
        }
    );
}

#[actix::test]
async fn the_latest_content_is_used_when_the_file_changed() {
    let fix =
        answer(json!({"search": "NEW LINE", "replace": "NEWER", "explanation": "file changed"}));
    let s = setup(FILE, &[fix], true);
    let req = request(&s, "nothing", "x");
    std::fs::write(&s.path, "NEW LINE\n").unwrap();
    let out = s.corrector.send(req).await.unwrap();
    let Correction::Fixed { snapshot, .. } = out else {
        panic!("{out:?}")
    };
    assert_eq!(snapshot.text, "NEW LINE\n");
}

#[actix::test]
async fn without_model_nothing_but_the_fast_path_runs() {
    let s = setup(FILE, &[], false);
    let out = s.corrector.send(request(&s, "zzz", "y")).await.unwrap();
    assert!(matches!(out, Correction::Failed { .. }), "{out:?}");
}

#[actix::test]
async fn a_failing_model_leaves_the_original_error() {
    // The script is empty: every model call fails.
    let s = setup(FILE, &[], true);
    let out = s.corrector.send(request(&s, "zzz", "y")).await.unwrap();
    assert!(matches!(out, Correction::Failed { .. }), "{out:?}");
}
