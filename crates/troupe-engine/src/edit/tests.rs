//! Unit tests of the matcher: every strategy and error kind, line endings, final
//! newlines, `$`, tabs, Unicode, empty files and over-escaped strings.

use super::snapshot::FileSnapshot;
use super::unescape::unescape;
use super::*;

const ONE: Occurrences = Occurrences::Exactly(1);

fn req<'a>(old: &'a str, new: &'a str, want: Occurrences) -> EditRequest<'a> {
    EditRequest {
        file_path: "f.py",
        old_string: old,
        new_string: new,
        want,
    }
}

fn edit(content: &str, old: &str, new: &str) -> Result<EditPlan, EditError> {
    compute_edit(Some(content), &req(old, new, ONE), "/ws/f.py")
}

#[test]
fn exact_match_replaces_literally() {
    let plan = edit("a = 1\nb = 2\n", "b = 2", "b = 3").unwrap();
    assert_eq!(plan.new_content, "a = 1\nb = 3\n");
    assert_eq!(plan.strategy, Some(Strategy::Exact));
    assert_eq!(plan.ranges, vec![LineRange { start: 2, end: 2 }]);
}

#[test]
fn dollar_patterns_are_inserted_literally() {
    let plan = edit("price = 1\n", "price = 1", "price = \"$& $1 $$ $'\"").unwrap();
    assert_eq!(plan.new_content, "price = \"$& $1 $$ $'\"\n");
}

#[test]
fn flexible_reindents_to_the_file() {
    let content = "def f(x):\n    if x:\n        return 1\n    return 0\n";
    let plan = edit(content, "if x:\n  return 1", "if x:\n    return 2").unwrap();
    assert_eq!(plan.strategy, Some(Strategy::Flexible));
    assert_eq!(
        plan.new_content,
        "def f(x):\n    if x:\n        return 2\n    return 0\n"
    );
    assert_eq!(plan.ranges, vec![LineRange { start: 2, end: 3 }]);
}

#[test]
fn flexible_with_tabs_keeps_tabs() {
    let content = "fn main() {\n\tif a {\n\t\tb();\n\t}\n}\n";
    let plan = edit(content, "if a {\n    b();\n}", "if a {\n    c();\n}").unwrap();
    assert_eq!(plan.strategy, Some(Strategy::Flexible));
    assert_eq!(
        plan.new_content,
        "fn main() {\n\tif a {\n\t\tc();\n\t}\n}\n"
    );
}

#[test]
fn regex_tolerates_spacing_inside_lines() {
    let content = "def g():\n    x = foo(a, b)\n    return x\n";
    let plan = edit(content, "x = foo(a,  b)", "x = foo(b, a)").unwrap();
    assert_eq!(plan.strategy, Some(Strategy::Regex));
    assert_eq!(
        plan.new_content,
        "def g():\n    x = foo(b, a)\n    return x\n"
    );
}

#[test]
fn fuzzy_fixes_a_small_typo_and_reports_lines() {
    let content = "def h(items, taxRate):\n    return computeTotal(items, taxRate)\n";
    let plan = edit(
        content,
        "return computeTotal(items, taxrate)",
        "return computeTotal(items, taxRate) * 2",
    )
    .unwrap();
    assert_eq!(plan.strategy, Some(Strategy::Fuzzy));
    assert_eq!(
        plan.new_content,
        "def h(items, taxRate):\n    return computeTotal(items, taxRate) * 2\n"
    );
    assert_eq!(
        fuzzy_feedback(&plan).as_deref(),
        Some("Applied fuzzy match at line 2.")
    );
}

#[test]
fn fuzzy_is_not_used_for_short_strings() {
    let err = edit("abcdefgh\n", "abcdefgX", "y").unwrap_err();
    assert_eq!(err.kind, ToolErrorKind::EditNoOccurrenceFound);
}

#[test]
fn no_occurrence_names_the_closest_region() {
    let content = "import os\n\ndef greet(name):\n    print('hello', name)\n    return name\n";
    let err = edit(
        content,
        "def greet(nm, x):\n    print('hallo there', name)",
        "x",
    )
    .unwrap_err();
    assert_eq!(err.kind, ToolErrorKind::EditNoOccurrenceFound);
    assert!(err
        .raw
        .starts_with("Could not find an exact match for 'old_string' in 'f.py'."));
    assert!(
        err.raw.contains("The closest match is at lines 3-4"),
        "{}",
        err.raw
    );
    assert!(
        err.raw.contains(
            r#"read_file(file_path: "f.py", start_line: 1, end_line: 6) and copy old_string exactly"#
        ),
        "{}",
        err.raw
    );
    assert!(!err.raw.contains("| def greet(name):"), "{}", err.raw);
    assert_eq!(
        err.display,
        "Could not find an exact match for old_string in 'f.py'."
    );
}

#[test]
fn two_matches_without_allow_multiple_change_nothing_and_name_both() {
    let content = "x = 1\ny = 2\nx = 1\n";
    let err = edit(content, "x = 1", "x = 3").unwrap_err();
    assert_eq!(err.kind, ToolErrorKind::EditExpectedOccurrenceMismatch);
    assert!(err.raw.starts_with("Failed to edit, Expected 1 occurrence but found 2 for old_string in file: f.py. If you intended to replace multiple occurrences, set 'allow_multiple' to true."));
    assert!(err.raw.contains("- line 1:\n     1 | x = 1"), "{}", err.raw);
    assert!(err.raw.contains("- line 3:\n     3 | x = 1"), "{}", err.raw);
    assert_eq!(
        err.display,
        "Failed to edit, expected 1 occurrence but found 2."
    );
}

#[test]
fn allow_multiple_and_expected_replacements() {
    let content = "x\ny\nx\n";
    let all = compute_edit(
        Some(content),
        &req("x", "z", Occurrences::from_params(Some(true), None)),
        "/p",
    )
    .unwrap();
    assert_eq!(all.new_content, "z\ny\nz\n");
    assert_eq!(all.occurrences, 2);
    let two = compute_edit(
        Some(content),
        &req("x", "z", Occurrences::from_params(None, Some(2))),
        "/p",
    )
    .unwrap();
    assert_eq!(two.new_content, "z\ny\nz\n");
    let err = compute_edit(
        Some(content),
        &req("x", "z", Occurrences::from_params(None, Some(3))),
        "/p",
    )
    .unwrap_err();
    assert!(err.raw.starts_with(
        "Failed to edit, Expected 3 occurrences but found 2 for old_string in file: f.py"
    ));
    assert_eq!(
        err.display,
        "Failed to edit, expected 3 occurrences but found 2."
    );
}

#[test]
fn flexible_multiple_matches_are_all_counted() {
    let content = "  a\n  b\nc\n    a\n    b\n";
    let err = edit(content, "a\nb", "q").unwrap_err();
    assert_eq!(err.kind, ToolErrorKind::EditExpectedOccurrenceMismatch);
    assert!(
        err.raw.contains("lines 1-2") && err.raw.contains("lines 4-5"),
        "{}",
        err.raw
    );
}

#[test]
fn identical_strings_are_no_change() {
    let err = edit("a\n", "a", "a").unwrap_err();
    assert_eq!(err.kind, ToolErrorKind::EditNoChange);
    assert_eq!(
        err.raw,
        "No changes to apply. The old_string and new_string are identical in file: f.py"
    );
    // Differs only in indentation the re-indent puts back: nothing would change.
    let err = edit("    a\n    b\n", "a\n  b", "a\nb").unwrap_err();
    assert_eq!(err.kind, ToolErrorKind::EditNoChange);
}

#[test]
fn file_not_found_create_and_create_existing() {
    let err = compute_edit(None, &req("x", "y", ONE), "/ws/n.py").unwrap_err();
    assert_eq!(err.kind, ToolErrorKind::FileNotFound);
    assert_eq!(err.raw, "File not found: /ws/n.py");
    let plan = compute_edit(None, &req("", "new\r\nfile\n", ONE), "/ws/n.py").unwrap();
    assert!(plan.is_new_file);
    assert_eq!(plan.new_content, "new\nfile\n");
    let err = compute_edit(Some(""), &req("", "y", ONE), "/ws/n.py").unwrap_err();
    assert_eq!(err.kind, ToolErrorKind::AttemptToCreateExistingFile);
    assert_eq!(err.raw, "File already exists, cannot create: /ws/n.py");
}

#[test]
fn empty_file_has_nothing_to_match() {
    let err = edit("", "anything", "y").unwrap_err();
    assert_eq!(err.kind, ToolErrorKind::EditNoOccurrenceFound);
}

#[test]
fn final_newline_is_never_added_or_removed() {
    let plan = edit("a\nb", "b", "c\n").unwrap();
    assert_eq!(plan.new_content, "a\nc");
    let plan = edit("a\nb\n", "b\n", "c").unwrap();
    assert_eq!(plan.new_content, "a\nc\n");
    let plan = edit("  a\n  b", "a\nb", "x\ny").unwrap();
    assert_eq!(plan.new_content, "  x\n  y");
}

#[test]
fn crlf_files_are_matched_lf_and_restored_on_write() {
    let snap = FileSnapshot::from_bytes(b"one\r\n    two\r\nthree\r\n").unwrap();
    let plan = edit(&snap.text, "two\r\nthree", "2\n3").unwrap();
    assert_eq!(plan.strategy, Some(Strategy::Exact));
    assert_eq!(plan.new_content, "one\n    2\n3\n");
    assert_eq!(snap.encode(&plan.new_content), b"one\r\n    2\r\n3\r\n");
    let plan = edit(&snap.text, "one\r\n  two", "one\r\n  zwei").unwrap();
    assert_eq!(plan.strategy, Some(Strategy::Flexible));
    assert_eq!(
        snap.encode(&plan.new_content),
        b"one\r\n    zwei\r\nthree\r\n"
    );
}

#[test]
fn unicode_is_matched_by_characters() {
    let content = "名前 = \"太郎\"\nemoji = \"😀\"\n";
    let plan = edit(content, "emoji = \"😀\"", "emoji = \"🎉\"").unwrap();
    assert_eq!(plan.new_content, "名前 = \"太郎\"\nemoji = \"🎉\"\n");
    let plan = edit("    名前 = 1\n", "名前 =  1", "名前 = 2").unwrap();
    assert_eq!(plan.strategy, Some(Strategy::Regex));
    assert_eq!(plan.new_content, "    名前 = 2\n");
}

#[test]
fn over_escaped_old_string_matches_only_after_unescaping() {
    let content = "print('a')\n";
    let err = edit(content, "print(\\'a\\')", "print(\\'b\\')").unwrap_err();
    assert_eq!(err.kind, ToolErrorKind::EditNoOccurrenceFound);
    let old = unescape("print(\\'a\\')");
    let new = unescape("print(\\'b\\')");
    let plan = edit(content, &old, &new).unwrap();
    assert_eq!(plan.new_content, "print('b')\n");
}

#[test]
fn lone_carriage_return_never_loses_text() {
    // gemini-cli's line splitter drops the text before a lone `\r`; Troupe keeps it.
    let content = "keep\rthis\n    x = 1\n";
    let plan = edit(content, "x = 1\n", "x = 2\n").unwrap();
    assert_eq!(plan.new_content, "keep\rthis\n    x = 2\n");
    let plan = edit(content, "x = 1  ", "x = 2").unwrap();
    assert_eq!(plan.strategy, Some(Strategy::Flexible));
    assert_eq!(plan.new_content, "keep\rthis\n    x = 2\n");
}

#[test]
fn regex_replaces_only_the_first_without_allow_multiple_but_counts_all() {
    let r = calculate_replacement("  f( a )\n  f( a )\n", "f(a)", "g()", ONE);
    assert_eq!(r.strategy, Some(Strategy::Regex));
    assert_eq!(r.occurrences, 2);
    assert_eq!(r.new_content, "  g()\n  f( a )\n");
}

#[test]
fn apply_indentation_keeps_relative_indent() {
    let out = strategies::apply_indentation(&["if a:", "    b", "", "c"], "\t");
    assert_eq!(out, vec!["\tif a:", "\t    b", "", "\tc"]);
    let out = strategies::apply_indentation(&["  x", "y"], "    ");
    assert_eq!(out, vec!["    x", "    y"]);
}

#[test]
fn consistently_wrong_indentation_is_mapped_to_the_files() {
    // The model wrote 0/2 where the file has 4/8, in old_string and new_string alike.
    let content = "def greet(name):\n    if name:\n        print(name)\n    return name\n";
    let plan = edit(
        content,
        "if name:\n  print(name)",
        "if name:\n  print(name + '!')\n  log(name)",
    )
    .unwrap();
    assert_eq!(plan.strategy, Some(Strategy::Flexible));
    assert_eq!(
        plan.new_content,
        "def greet(name):\n    if name:\n        print(name + '!')\n        log(name)\n    return name\n"
    );
}

#[test]
fn unclear_indentation_falls_back_to_gemini_cli_rule() {
    let out = strategies::apply_indentation_mapped(&["  a"], &["b"], &["    b"]);
    assert_eq!(out, None);
    let out = strategies::apply_indentation_mapped(&["a", "\tb"], &["a", "  b"], &["  a", "    b"]);
    assert_eq!(out, None);
}
