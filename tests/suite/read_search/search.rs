//! glob, grep_search and read_many_files end to end, and one turn running several
//! read/search tools at once.

use serde_json::{json, Value};

use super::{answer_parts, answers, error, git_repo, output};
use crate::common::*;

#[test]
fn glob_roots_ignore_counts_case_and_literals() {
    let s = Scratch::new();
    git_repo(&s);
    s.write(".gitignore", "skip.py\n");
    s.write("src/A.PY", "a");
    s.write("src/b.py", "b");
    s.write("skip.py", "s");
    s.write("pages/[id].tsx", "t");
    s.write("pages/i.tsx", "t");
    let other = s.root().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("c.py"), "c").unwrap();
    let other = other.canonicalize().unwrap();
    let ws = s.ws();
    let r = answers(
        &s,
        vec![
            call("glob", json!({"pattern": "**/*.py"})),
            call(
                "glob",
                json!({"pattern": "**/*.py", "dir_path": "src", "case_sensitive": true}),
            ),
            call("glob", json!({"pattern": "pages/[id].tsx"})),
            call("glob", json!({"pattern": "*.zzz"})),
            call("glob", json!({"pattern": "*.py", "dir_path": "missing"})),
            call(
                "glob",
                json!({"pattern": "**/*.py", "respect_git_ignore": false, "dir_path": "."}),
            ),
            call("read_file", json!({"file_path": other.join("c.py")})),
            call("list_directory", json!({"dir_path": other})),
        ],
        &["--include-directories", other.to_str().unwrap()],
    );
    let all = output(&r[0]);
    assert!(all.starts_with("Found 3 file(s) matching \"**/*.py\" across 2 workspace directories (1 additional files were ignored), sorted by modification time (newest first):\n"), "{all}");
    for f in [ws.join("src/A.PY"), ws.join("src/b.py"), other.join("c.py")] {
        assert!(all.contains(&f.display().to_string()), "{all}");
    }
    assert_eq!(
        output(&r[1]),
        format!(
            "Found 1 file(s) matching \"**/*.py\" within {}/src, sorted by modification time (newest first):\n{}/src/b.py",
            ws.display(),
            ws.display()
        )
    );
    assert!(output(&r[2]).ends_with(&format!("\n{}/pages/[id].tsx", ws.display())));
    assert!(output(&r[2]).starts_with("Found 1 file(s)"));
    assert_eq!(
        output(&r[3]),
        "No files found matching pattern \"*.zzz\" within 2 workspace directories"
    );
    assert_eq!(
        error(&r[4]),
        format!("Search path does not exist {}/missing", ws.display())
    );
    assert!(output(&r[5]).starts_with("Found 3 file(s) matching \"**/*.py\" within"));
    assert!(output(&r[5]).contains("skip.py"));
    // The second root is readable like the first.
    assert_eq!(output(&r[6]), "c");
    assert_eq!(
        output(&r[7]),
        format!("Directory listing for {}:\nc.py (1 bytes)", other.display())
    );
}

/// A tree exercising every filter of grep_search.
fn grep_tree(s: &Scratch) {
    git_repo(s);
    s.write(".gitignore", "ignored.txt\n");
    s.write("sub/.gitignore", "nested.txt\n");
    s.write(".geminiignore", "gem.txt\n");
    s.write(".troupeignore", "troupe.txt\n");
    s.write("ignored.txt", "needle\n");
    s.write("sub/nested.txt", "needle\n");
    s.write("gem.txt", "needle\n");
    s.write("troupe.txt", "needle\n");
    s.write(".hidden", "needle\n");
    s.write("build/gen.txt", "needle\n");
    std::fs::write(s.ws().join("bin.dat"), b"needle\0\x01\x02").unwrap();
    let body: String = (1..=60)
        .map(|i| {
            if i == 30 {
                "let Needle = 1;\n".to_string()
            } else {
                format!("filler {i}\n")
            }
        })
        .collect();
    s.write("src/one.rs", &body);
    s.write(
        "src/many.txt",
        "needle a\nneedle b\nskip needle\nneedle c\nNEEDLE d\n",
    );
    s.write("src/dots.txt", "a.b\naxb\n");
    // Links are not followed: a loop and a link out of the workspace change nothing.
    std::os::unix::fs::symlink(s.ws().join("src/loop_b"), s.ws().join("src/loop_a")).unwrap();
    std::os::unix::fs::symlink(s.ws().join("src/loop_a"), s.ws().join("src/loop_b")).unwrap();
    std::fs::write(s.root().join("outside.txt"), "needle\n").unwrap();
    std::os::unix::fs::symlink(s.root().join("outside.txt"), s.ws().join("src/out.txt")).unwrap();
}

#[test]
fn grep_search_filters_format_and_options() {
    let s = Scratch::new();
    grep_tree(&s);
    let r = answers(
        &s,
        vec![
            call(
                "grep_search",
                json!({"pattern": "needle", "names_only": true}),
            ),
            call(
                "grep_search",
                json!({"pattern": "needle", "include_pattern": "*.rs"}),
            ),
            call(
                "grep_search",
                json!({"pattern": "needle", "dir_path": "src/many.txt",
                "exclude_pattern": "^skip", "case_sensitive": true}),
            ),
            call(
                "grep_search",
                json!({"pattern": "a.b", "fixed_strings": true, "dir_path": "src"}),
            ),
            call(
                "grep_search",
                json!({"pattern": "needle", "dir_path": "src", "max_matches_per_file": 2,
                "include_pattern": "many.txt", "context": 1}),
            ),
            call(
                "grep_search",
                json!({"pattern": "needle", "total_max_matches": 2, "dir_path": "src",
                "include_pattern": "*.txt"}),
            ),
            call(
                "grep_search",
                json!({"pattern": "needle", "no_ignore": true, "names_only": true}),
            ),
            call("grep_search", json!({"pattern": "([unclosed"})),
            call(
                "search_file_content",
                json!({"pattern": "zzz_absent", "path": "src", "include": "*.rs"}),
            ),
            call("grep_search", json!({"pattern": "x", "dir_path": "nope"})),
        ],
        &[],
    );
    assert_eq!(
        output(&r[0]),
        "Found 2 files with matches for pattern \"needle\" in path \".\":\nsrc/many.txt\nsrc/one.rs"
    );
    let one = output(&r[1]);
    assert!(one.starts_with("Found 1 match for pattern \"needle\" in path \".\" (filter: \"*.rs\"):\n---\nFile: src/one.rs\nL1- filler 1\n"), "{one}");
    assert!(one.contains("\nL29- filler 29\nL30: let Needle = 1;\nL31- filler 31\n"));
    assert!(one.ends_with("L60- filler 60\n---"), "{one}");
    assert_eq!(
        output(&r[2]),
        "Found 3 matches for pattern \"needle\" in path \"src/many.txt\":\n---\nFile: many.txt\nL1: needle a\nL2: needle b\nL4: needle c\nL5- NEEDLE d\n---"
    );
    assert_eq!(
        output(&r[3]),
        "Found 1 match for pattern \"a.b\" in path \"src\":\n---\nFile: dots.txt\nL1: a.b\nL2- axb\n---"
    );
    assert_eq!(
        output(&r[4]),
        "Found 2 matches for pattern \"needle\" in path \"src\" (filter: \"many.txt\"):\n---\nFile: many.txt\nL1: needle a\nL2: needle b\n---"
    );
    let limited = output(&r[5]);
    assert!(limited.starts_with("Found 2 matches for pattern \"needle\" in path \"src\" (filter: \"*.txt\") (results limited to 2 matches for performance):\n---\nFile: many.txt\nL1: needle a\nL2: needle b\n"), "{limited}");
    let everything = output(&r[6]);
    for f in [
        ".hidden",
        "build/gen.txt",
        "gem.txt",
        "ignored.txt",
        "sub/nested.txt",
        "troupe.txt",
        "src/many.txt",
    ] {
        assert!(
            everything.contains(&format!("\n{f}")),
            "{f} missing in {everything}"
        );
    }
    assert!(
        !everything.contains("bin.dat"),
        "binary files are skipped: {everything}"
    );
    assert!(
        error(&r[7])
            .starts_with("Invalid regular expression pattern provided: ([unclosed. Error: "),
        "{}",
        r[7]
    );
    assert_eq!(r[8]["name"], "search_file_content");
    assert_eq!(
        output(&r[8]),
        "No matches found for pattern \"zzz_absent\" in path \"src\" (filter: \"*.rs\")."
    );
    assert_eq!(
        error(&r[9]),
        format!("Path does not exist: {}/nope", s.ws().display())
    );
}

#[test]
fn read_many_files_patterns_excludes_and_skips() {
    let s = Scratch::new();
    git_repo(&s);
    s.write(".gitignore", "src/gen.rs\n");
    s.write("src/a.rs", "fn a() {}\n");
    s.write("src/deep/b.rs", "fn b() {}\n");
    s.write("src/gen.rs", "generated\n");
    s.write("build/c.rs", "fn c() {}\n");
    s.write("docs/guide.md", "# guide\n");
    s.write("README.md", "readme\n");
    std::fs::write(s.ws().join("docs/shot.png"), [0x89, b'P', b'N', b'G', 0]).unwrap();
    std::fs::write(s.ws().join("logo.png"), [0x89, b'P', b'N', b'G', 1]).unwrap();
    let ws = s.ws();
    let parts = answer_parts(
        &s,
        vec![
            call(
                "read_many_files",
                json!({"include": ["src/**/*.rs", "README.md", "docs/", "**/*.rs", "logo.*"]}),
            ),
            call("read_many_files", json!({"paths": ["*.none"]})),
            call(
                "read_many_files",
                json!({"include": ["**/*.rs"], "useDefaultExcludes": false,
                "exclude": ["src/deep/**"], "file_filtering_options": {"respect_git_ignore": false}}),
            ),
        ],
        &[],
    );
    let r: Vec<Value> = parts
        .iter()
        .filter_map(|p| p.get("functionResponse").cloned())
        .collect();
    let out = output(&r[0]);
    let block = |rel: &str, body: &str| format!("--- {}/{rel} ---\n\n{body}\n\n", ws.display());
    let expected_text = [
        block("README.md", "readme\n"),
        block("docs/guide.md", "# guide\n"),
        block("src/a.rs", "fn a() {}\n"),
        block("src/deep/b.rs", "fn b() {}\n"),
    ]
    .concat();
    assert!(
        out.starts_with(&format!("{expected_text}\n--- End of content ---")),
        "{out}"
    );
    assert!(out.contains("Skipped 2 item(s):\n- 1 file(s) (Reason: ignored by project ignore files)\n- docs/shot.png (Reason: asset file (image/pdf/audio) was not explicitly requested by name or extension)"), "{out}");
    assert!(!out.contains("build/c.rs"));
    let inline: Vec<&Value> = parts
        .iter()
        .filter(|p| p.get("inlineData").is_some())
        .collect();
    assert_eq!(inline.len(), 1, "logo.png was asked for by name");
    assert_eq!(
        output(&r[1]),
        "No files matching the criteria were found or all were skipped."
    );
    let third = output(&r[2]);
    assert!(third.contains(&block("build/c.rs", "fn c() {}\n")));
    assert!(third.contains(&block("src/gen.rs", "generated\n")));
    assert!(!third.contains("b.rs"));
}

#[test]
fn one_turn_runs_grep_read_many_and_read_range_in_parallel() {
    let s = Scratch::new();
    let body: String = (1..=10).map(|i| format!("row {i}\n")).collect();
    s.write("data/table.txt", &body);
    s.write("lib/x.py", "def target():\n    return 1\n");
    s.write("lib/y.py", "print('y')\n");
    let ws = s.ws();
    let r = answers(
        &s,
        vec![
            call(
                "grep_search",
                json!({"pattern": "def \\w+", "dir_path": "lib"}),
            ),
            call("read_many_files", json!({"include": ["lib/*.py"]})),
            call(
                "read_file",
                json!({"file_path": "data/table.txt", "start_line": 4, "end_line": 5}),
            ),
        ],
        &[],
    );
    let names: Vec<&str> = r.iter().map(|x| x["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["grep_search", "read_many_files", "read_file"]);
    assert_eq!(
        output(&r[0]),
        "Found 1 match for pattern \"def \\w+\" in path \"lib\":\n---\nFile: x.py\nL1: def target():\nL2-     return 1\n---"
    );
    assert_eq!(
        output(&r[1]),
        format!(
            "--- {ws}/lib/x.py ---\n\ndef target():\n    return 1\n\n\n--- {ws}/lib/y.py ---\n\nprint('y')\n\n\n\n--- End of content ---",
            ws = ws.display()
        )
    );
    assert_eq!(
        output(&r[2]),
        "\nIMPORTANT: The file content has been truncated.\nStatus: Showing lines 4-5 of 11 total lines.\nAction: To read more of the file, you can use the 'start_line' and 'end_line' parameters in a subsequent 'read_file' call. For example, to read the next section of the file, use start_line: 6.\n\n--- FILE CONTENT (truncated) ---\nrow 4\nrow 5"
    );
    // All three are declared to the model with 0.61's parameter names.
    let decls = s.requests()[0]["tools"][0]["functionDeclarations"].clone();
    let decl = |name: &str| -> Value {
        decls
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} not declared"))
    };
    let grep_props = decl("grep_search")["parametersJsonSchema"]["properties"].clone();
    for key in [
        "pattern",
        "dir_path",
        "include_pattern",
        "exclude_pattern",
        "names_only",
        "case_sensitive",
        "fixed_strings",
        "context",
        "after",
        "before",
        "no_ignore",
        "max_matches_per_file",
        "total_max_matches",
    ] {
        assert!(grep_props.get(key).is_some(), "grep_search lacks {key}");
    }
    assert!(
        decl("read_many_files")["parametersJsonSchema"]["properties"]["useDefaultExcludes"]
            .is_object()
    );
    assert!(decl("read_file")["parametersJsonSchema"]["properties"]
        .get("offset")
        .is_none());
}
