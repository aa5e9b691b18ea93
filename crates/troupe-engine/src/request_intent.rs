//! What a prompt asks for, read from its words, and what a turn's calls did about it:
//! the small profile's honest outcome (`model.check_outcome`) and its edit guards.
//! Each decision is a plain rule on words, documented in docs/models.md, so a user can
//! tell in advance how a prompt is read.

/// Words of a prompt that ask for a change to files (compared in lower case, with
/// their common endings taken off).
const CHANGE_WORDS: &[&str] = &[
    "add",
    "append",
    "change",
    "convert",
    "correct",
    "create",
    "delete",
    "document",
    "edit",
    "fix",
    "format",
    "generate",
    "implement",
    "improve",
    "insert",
    "make",
    "modify",
    "move",
    "refactor",
    "remove",
    "rename",
    "replace",
    "rewrite",
    "save",
    "set",
    "update",
    "write",
];

/// Words that ask for something to be run.
const RUN_WORDS: &[&str] = &["run", "rerun", "execute", "exec"];

/// Words that name tests (in a prompt or a command).
const TEST_WORDS: &[&str] = &[
    "test",
    "tests",
    "pytest",
    "unittest",
    "jest",
    "vitest",
    "mocha",
    "rspec",
    "tox",
    "nox",
    "ctest",
    "phpunit",
    "testsuite",
];

/// The words of `text` in lower case (runs of ASCII letters).
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
}

/// `word` is `stem` or `stem` with a common ending (`fixes`, `fixed`, `fixing`,
/// `renamed`, `running`, `creation`).
fn is_form_of(word: &str, stem: &str) -> bool {
    word == stem
        || ["s", "es", "ed", "d", "ing", "ion"].iter().any(|end| {
            word.strip_suffix(end).is_some_and(|w| {
                w == stem
                    || w.strip_suffix(w.chars().last().unwrap_or(' ')) == Some(stem)
                    || format!("{w}e") == stem
            })
        })
}

/// Whether `prompt` asks for a change to files: it has a word of [`CHANGE_WORDS`]
/// (`fix`, `fixes`, `fixed`, `fixing`, `Rename`, …). A path or a name in code
/// (`shop/formatting.py`, `format_price`, anything with `/`, `.`, `_` or a backquote
/// inside once the punctuation around it is taken off) is not a word of the request.
pub fn asks_for_change(prompt: &str) -> bool {
    prompt
        .split_whitespace()
        .map(|token| token.trim_matches(|c: char| "\"'()[]{}<>,;:!?.".contains(c)))
        .filter(|token| !token.contains(['/', '.', '_', '`', '\\']))
        .flat_map(words)
        .any(|word| CHANGE_WORDS.iter().any(|stem| is_form_of(&word, stem)))
}

/// Whether `prompt` asks for the tests to be run: in one of its sentences a word of
/// [`RUN_WORDS`] (`run`, `rerun`, `execute`, with their endings) comes before a word
/// of [`TEST_WORDS`] (`test`, `tests`, `pytest`, `unittest`, …). "Run the tests and
/// count" asks; "fix the failing test" and "the test run fails" do not.
pub fn asks_to_run_tests(prompt: &str) -> bool {
    prompt
        .split(['!', '?', '\n', ';'])
        .flat_map(|s| s.split(". "))
        .any(|sentence| {
            let mut asked_to_run = false;
            for word in words(sentence) {
                if asked_to_run && TEST_WORDS.contains(&word.as_str()) {
                    return true;
                }
                asked_to_run |= RUN_WORDS.iter().any(|stem| is_form_of(&word, stem));
            }
            false
        })
}

/// Whether `prompt` speaks of tests at all: one of its words is a word of
/// [`TEST_WORDS`] ("fix the failing test", "make the tests pass", "run pytest").
pub fn mentions_tests(prompt: &str) -> bool {
    words(prompt).any(|w| TEST_WORDS.contains(&w.as_str()))
}

/// Whether a shell `command` runs tests: one of its words is a word of [`TEST_WORDS`]
/// (`python3 -m pytest -q`, `cargo test`, `npm test`, `python3 test_shop.py`), or it is
/// `make check`.
pub fn is_test_command(command: &str) -> bool {
    let lower = command.to_ascii_lowercase();
    words(&lower).any(|w| TEST_WORDS.contains(&w.as_str())) || lower.contains("make check")
}

/// Words that ask to write or change tests, when a test word follows them.
const TEST_EDIT_WORDS: &[&str] = &[
    "add", "append", "change", "create", "delete", "edit", "extend", "modify", "remove", "rename",
    "rewrite", "update", "write",
];

/// Whether `prompt` asks for the tests themselves to be changed: in one of its
/// sentences a word of [`TEST_EDIT_WORDS`] (add, write, update, edit, rename, …, with
/// their endings) comes before a test word ("Add a test for discount", "update the
/// tests", "rename x in tests/test_shop.py"). "Fix the failing test" and "make the
/// tests pass" do not: they ask for the code under test to change.
pub fn asks_to_edit_tests(prompt: &str) -> bool {
    prompt
        .split(['!', '?', '\n', ';'])
        .flat_map(|s| s.split(". "))
        .any(|sentence| {
            let mut asked = false;
            for word in words(sentence) {
                if asked && TEST_WORDS.contains(&word.as_str()) {
                    return true;
                }
                asked |= TEST_EDIT_WORDS.iter().any(|stem| is_form_of(&word, stem));
            }
            false
        })
}

/// Whether a workspace-relative `path` is a test file by the usual conventions: in a
/// `test`/`tests`/`spec`/`__tests__` folder, or named `test_*`, `*_test.*`,
/// `*.test.*`, `*_spec.*`, `*.spec.*`, `*Test.java`-like (`…Test.` / `…Tests.`).
pub fn is_test_path(path: &str) -> bool {
    let mut parts: Vec<&str> = path.split('/').collect();
    let name = parts.pop().unwrap_or("");
    let in_tests = parts
        .iter()
        .any(|d| matches!(*d, "test" | "tests" | "spec" | "__tests__"));
    let stem = name.split('.').next().unwrap_or(name);
    in_tests
        || stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_spec")
        || stem.ends_with("Test")
        || stem.ends_with("Tests")
        || name.contains(".test.")
        || name.contains(".spec.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_files_and_prompts_that_ask_to_edit_them() {
        for path in [
            "tests/test_shop.py",
            "acronym_test.py",
            "test_cart.py",
            "src/app.test.ts",
            "spec/models/user_spec.rb",
            "src/test/java/AppTest.java",
        ] {
            assert!(is_test_path(path), "{path}");
        }
        for path in [
            "shop/cart.py",
            "acronym.py",
            "contest.py",
            "src/testing_utils.rs",
        ] {
            assert!(!is_test_path(path), "{path}");
        }
        for asks in [
            "Add a test for discount to tests/test_shop.py",
            "Update the tests",
            "Rename x in tests/test_shop.py",
        ] {
            assert!(asks_to_edit_tests(asks), "{asks}");
        }
        for other in [
            "Fix the failing test in tests/test_shop.py",
            "Implement acronym.py so that the tests in acronym_test.py pass",
            "Make the tests pass",
        ] {
            assert!(!asks_to_edit_tests(other), "{other}");
        }
    }

    #[test]
    fn a_prompt_asks_for_a_change_by_its_words() {
        for asks in [
            "Fix shop/cart.py.",
            "Add a one-line docstring to format_price",
            "In shop/report.py, rename the local variable tmp to lines",
            "Write a file SUMMARY.md with one line per module",
            "The bug needs fixing",
            "Please make it faster",
            "update the README",
        ] {
            assert!(asks_for_change(asks), "{asks}");
        }
        for question in [
            "List the Python files in the shop folder.",
            "Read shop/pricing.py and explain what the function discount does.",
            "What is the value of TAX_RATE in this project?",
            "Run the tests with the command `python3 -m unittest` and tell me how many tests passed.",
            "Which settings exist?",
            "Explain `shop/formatting.py`, and what report.py does.",
            "What does format_update_total return?",
        ] {
            assert!(!asks_for_change(question), "{question}");
        }
    }

    #[test]
    fn a_prompt_asks_to_run_the_tests_when_a_run_word_comes_before_a_test_word() {
        for asks in [
            "Run the tests and tell me how many pass.",
            "Implement abbreviate, then run the tests with pytest",
            "Fix it. Rerun the unit tests afterwards",
            "Please execute the test suite",
            "run pytest",
        ] {
            assert!(asks_to_run_tests(asks), "{asks}");
        }
        for other in [
            "Fix the failing test",
            "The test run fails. Fix shop/cart.py",
            "Add a test for discount",
            "Run the linter",
        ] {
            assert!(!asks_to_run_tests(other), "{other}");
        }
    }

    #[test]
    fn a_prompt_mentions_tests_by_a_test_word() {
        assert!(mentions_tests("Fix the failing test"));
        assert!(mentions_tests("make the tests in acronym_test.py pass"));
        assert!(!mentions_tests("What is the value of TAX_RATE?"));
        assert!(!mentions_tests("Read the latest contest results"));
    }

    #[test]
    fn test_commands_are_known_by_their_words() {
        for command in [
            "python3 -m pytest -q",
            "cargo test",
            "npm test",
            "python3 -m unittest discover",
            "python3 test_shop.py",
            "npx jest",
            "make check",
        ] {
            assert!(is_test_command(command), "{command}");
        }
        for command in [
            "ls shop",
            "python3 shop/cart.py",
            "cat README.md",
            "git status",
        ] {
            assert!(!is_test_command(command), "{command}");
        }
    }
}
