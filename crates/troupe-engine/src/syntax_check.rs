//! The parse check of edits (`edit.check_syntax`): an edit that would turn a file that
//! parses into one that does not is refused. Files are parsed with tree-sitter grammars
//! picked by extension (Python, JavaScript, TypeScript/TSX, Rust, Go, JSON, TOML, YAML);
//! other files are not checked. tree-sitter recovers from errors, so "does not parse"
//! means the tree holds an ERROR or MISSING node.
//!
//! The file as it was is the baseline: a file that did not parse before the edit may
//! stay broken (the grammar may not know all of its syntax, or the model may be fixing
//! it step by step), so only the step from parsing to not parsing is refused.

use std::fmt;
use std::path::Path;

use tree_sitter::{Language, Node, Parser};

/// Larger texts are not checked (a parse takes a few milliseconds per 100 KB).
pub const MAX_CHECKED_BYTES: usize = 2 * 1024 * 1024;
/// Characters of the offending text quoted in a description.
const QUOTED_CHARS: usize = 40;
/// Characters of the offending line shown.
const SHOWN_LINE_CHARS: usize = 160;

/// A language the check knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grammar {
    /// `.py`, `.pyi`
    Python,
    /// `.js`, `.mjs`, `.cjs`, `.jsx`
    JavaScript,
    /// `.ts`, `.mts`, `.cts`
    TypeScript,
    /// `.tsx`
    Tsx,
    /// `.rs`
    Rust,
    /// `.go`
    Go,
    /// `.json`
    Json,
    /// `.toml`
    Toml,
    /// `.yaml`, `.yml`
    Yaml,
}

impl Grammar {
    /// The grammar for `path`'s extension (case-insensitive), or `None`: unchecked.
    pub fn for_path(path: &Path) -> Option<Grammar> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "py" | "pyi" => Grammar::Python,
            "js" | "mjs" | "cjs" | "jsx" => Grammar::JavaScript,
            "ts" | "mts" | "cts" => Grammar::TypeScript,
            "tsx" => Grammar::Tsx,
            "rs" => Grammar::Rust,
            "go" => Grammar::Go,
            "json" => Grammar::Json,
            "toml" => Grammar::Toml,
            "yaml" | "yml" => Grammar::Yaml,
            _ => return None,
        })
    }

    /// The language's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Grammar::Python => "Python",
            Grammar::JavaScript => "JavaScript",
            Grammar::TypeScript => "TypeScript",
            Grammar::Tsx => "TSX",
            Grammar::Rust => "Rust",
            Grammar::Go => "Go",
            Grammar::Json => "JSON",
            Grammar::Toml => "TOML",
            Grammar::Yaml => "YAML",
        }
    }

    pub(crate) fn language(self) -> Language {
        match self {
            Grammar::Python => tree_sitter_python::LANGUAGE.into(),
            Grammar::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Grammar::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Grammar::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Grammar::Rust => tree_sitter_rust::LANGUAGE.into(),
            Grammar::Go => tree_sitter_go::LANGUAGE.into(),
            Grammar::Json => tree_sitter_json::LANGUAGE.into(),
            Grammar::Toml => tree_sitter_toml_ng::LANGUAGE.into(),
            Grammar::Yaml => tree_sitter_yaml::LANGUAGE.into(),
        }
    }
}

/// Where a text stops parsing: the first ERROR or MISSING node of its tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// The language it was parsed as.
    pub grammar: Grammar,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// `missing ")"` or `unexpected "…"`.
    pub description: String,
    /// The offending line (cut to a readable length).
    pub source_line: String,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "syntax error at line {}, column {} ({})",
            self.line, self.column, self.description
        )
    }
}

/// The first syntax error of `text` parsed as `grammar`, or `None` when it parses (or
/// the parser could not run: the check never refuses for a reason of its own).
pub fn first_error(grammar: Grammar, text: &str) -> Option<SyntaxError> {
    let mut parser = Parser::new();
    parser.set_language(&grammar.language()).ok()?;
    let tree = parser.parse(text, None)?;
    let root = tree.root_node();
    if !root.has_error() {
        return match grammar {
            Grammar::Python => python_only_error(root, text),
            _ => None,
        };
    }
    let node = first_bad_node(root).unwrap_or(root);
    Some(describe(grammar, node, text))
}

/// What tree-sitter's Python grammar accepts and Python does not: a line break in a
/// one-line string, or a block with no statement (`def f():` followed by a line that
/// is not indented below it: Python's "expected an indented block").
fn python_only_error(root: Node<'_>, text: &str) -> Option<SyntaxError> {
    let empty = python_empty_block(root).map(|node| {
        let mut error = describe_at(Grammar::Python, node, text);
        error.description = "expected an indented block after this line".into();
        error
    });
    let broken = python_line_break_in_string(root, text).map(|node| {
        let mut error = describe_at(Grammar::Python, node, text);
        error.description = "a line break inside a one-line string".into();
        error
    });
    match (empty, broken) {
        (Some(a), Some(b)) => Some(if (b.line, b.column) < (a.line, a.column) {
            b
        } else {
            a
        }),
        (a, b) => a.or(b),
    }
}

/// The statement (`def`, `if`, `for`, …) whose block holds no statement, only
/// comments or nothing: tree-sitter's grammar takes it, Python refuses it.
fn python_empty_block(root: Node<'_>) -> Option<Node<'_>> {
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        if node.kind() == "block" && children.iter().all(|c| c.kind() == "comment") {
            return Some(node.parent().unwrap_or(node));
        }
        stack.extend(children.into_iter().rev());
    }
    None
}

/// The first Python string that is not triple-quoted yet holds a line break not
/// escaped by a backslash: tree-sitter's grammar accepts it, Python does not (a small
/// model's `'\n'.join(…)` arrived through JSON as a real line break).
fn python_line_break_in_string<'t>(root: Node<'t>, text: &str) -> Option<Node<'t>> {
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if node.kind() == "string" {
            let body = text.get(node.byte_range()).unwrap_or("");
            let quotes = body.trim_start_matches(|c: char| c.is_ascii_alphabetic());
            let triple = quotes.starts_with("'''") || quotes.starts_with("\"\"\"");
            let broken = body
                .match_indices('\n')
                .any(|(at, _)| !body[..at].ends_with('\\'));
            if !triple && broken {
                return Some(node);
            }
            continue;
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    None
}

/// The error `after` would have that `before` did not: `Some` only when `path` has a
/// known grammar, both texts are small enough, `after` does not parse and `before`
/// did (`None` for `before` = a new file, which is not checked: it has no baseline,
/// and damages nothing that was there).
pub fn introduced_error(path: &Path, before: Option<&str>, after: &str) -> Option<SyntaxError> {
    let grammar = Grammar::for_path(path)?;
    let before = before?;
    if before.len() > MAX_CHECKED_BYTES || after.len() > MAX_CHECKED_BYTES {
        return None;
    }
    let error = first_error(grammar, after)?;
    match first_error(grammar, before) {
        Some(_) => None,
        None => Some(error),
    }
}

/// The first ERROR or MISSING node in document order below `node`.
fn first_bad_node(node: Node<'_>) -> Option<Node<'_>> {
    if node.is_error() || node.is_missing() {
        return Some(node);
    }
    if !node.has_error() {
        return None;
    }
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
    children.into_iter().find_map(first_bad_node)
}

/// The node to point at in the ERROR or MISSING `node`, and what is wrong there.
fn pinpoint<'t>(node: Node<'t>, text: &str) -> (Node<'t>, String) {
    if node.is_missing() {
        let what = if node.is_named() {
            format!("missing {}", node.kind())
        } else {
            format!("missing \"{}\"", node.kind())
        };
        return (node, what);
    }
    // An error region is often a whole statement or document; an unbalanced bracket
    // inside it is the likelier culprit, then an error nested in it.
    if let Some(found) = unbalanced_bracket(node) {
        return found;
    }
    let mut cursor = node.walk();
    let children: Vec<Node<'t>> = node.children(&mut cursor).collect();
    if let Some(inner) = children.into_iter().find_map(first_bad_node) {
        return pinpoint(inner, text);
    }
    let found = text.get(node.start_byte()..node.end_byte()).unwrap_or("");
    let what = match found.lines().map(str::trim).find(|l| !l.is_empty()) {
        None => "unexpected end of text".to_string(),
        Some(l) => {
            let cut: String = l.chars().take(QUOTED_CHARS).collect();
            let more = if cut.len() < l.len() { "…" } else { "" };
            format!("cannot parse \"{cut}{more}\"")
        }
    };
    (node, what)
}

/// The first bracket token of `node` never closed, or a closing one that closes
/// nothing (tokens only: brackets inside strings and comments are not tokens).
fn unbalanced_bracket(node: Node<'_>) -> Option<(Node<'_>, String)> {
    let mut open: Vec<Node<'_>> = Vec::new();
    for leaf in leaves(node) {
        let opener = match leaf.kind() {
            "(" | "[" | "{" => {
                open.push(leaf);
                continue;
            }
            ")" => "(",
            "]" => "[",
            "}" => "{",
            _ => continue,
        };
        if open.last().is_some_and(|o| o.kind() == opener) {
            open.pop();
        } else if !leaf.is_missing() {
            return Some((leaf, format!("unexpected \"{}\"", leaf.kind())));
        }
    }
    open.first()
        .map(|o| (*o, format!("\"{}\" is never closed", o.kind())))
}

/// The leaves (tokens) below `node`, in document order.
fn leaves(node: Node<'_>) -> Vec<Node<'_>> {
    let mut out = Vec::new();
    let mut cursor = node.walk();
    loop {
        if cursor.node().child_count() == 0 {
            out.push(cursor.node());
        }
        if cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return out;
            }
        }
    }
}

fn describe(grammar: Grammar, node: Node<'_>, text: &str) -> SyntaxError {
    let (node, description) = pinpoint(node, text);
    let mut error = describe_at(grammar, node, text);
    error.description = description;
    error
}

/// Where `node` starts, with its line; the description is left empty.
fn describe_at(grammar: Grammar, node: Node<'_>, text: &str) -> SyntaxError {
    let description = String::new();
    let start = node.start_byte().min(text.len());
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let line_text = text.get(line_start..line_end).unwrap_or("");
    let column = text.get(line_start..start).map_or(0, |s| s.chars().count()) + 1;
    let line_text = line_text.strip_suffix('\r').unwrap_or(line_text);
    SyntaxError {
        grammar,
        line: text[..line_start].matches('\n').count() + 1,
        column,
        description,
        source_line: line_text.chars().take(SHOWN_LINE_CHARS).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_python_line_break_inside_a_one_line_string_is_an_error() {
        let broken = "def f(lines):\n    return '\n'.join(lines)\n";
        let error = first_error(Grammar::Python, broken).expect("refused");
        assert_eq!((error.line, error.column), (2, 12));
        assert_eq!(error.description, "a line break inside a one-line string");
        for fine in [
            "def f(lines):\n    return '\\n'.join(lines)\n",
            "s = '''a\nb'''\n",
            "s = \"\"\"a\nb\"\"\"\n",
            "s = 'a\\\nb'\n",
            "s = f'{x}'\n",
        ] {
            assert_eq!(first_error(Grammar::Python, fine), None, "{fine}");
        }
    }

    #[test]
    fn every_grammar_loads_and_accepts_valid_text() {
        let cases = [
            ("a.py", "def f(x):\n    return (x + 1)\n"),
            ("a.js", "function f(x) { return x + 1; }\n"),
            ("a.ts", "function f(x: number): number { return x + 1; }\n"),
            ("a.tsx", "const A = () => <div>hi</div>;\n"),
            ("a.rs", "fn f(x: u32) -> u32 { x + 1 }\n"),
            (
                "a.go",
                "package main\n\nfunc f(x int) int { return x + 1 }\n",
            ),
            ("a.json", "{\"a\": [1, 2]}\n"),
            ("a.toml", "[a]\nb = 1\n"),
            ("a.yaml", "a:\n  - 1\n  - 2\n"),
        ];
        for (name, text) in cases {
            let g = Grammar::for_path(Path::new(name)).unwrap();
            assert_eq!(first_error(g, text), None, "{name}");
        }
    }

    #[test]
    fn a_removed_paren_is_located() {
        let before = "x = 1\nprint(len(x))\ny = 2\n";
        let after = "x = 1\nprint(len(x)\ny = 2\n";
        let e = introduced_error(Path::new("a.py"), Some(before), after).unwrap();
        assert_eq!(
            e.to_string(),
            "syntax error at line 2, column 6 (\"(\" is never closed)"
        );
        assert_eq!(e.source_line, "print(len(x)");
    }

    #[test]
    fn a_stray_closing_bracket_and_a_missing_token_are_named() {
        let e = first_error(Grammar::Python, "def f(x):\n    return 1)\n").unwrap();
        assert_eq!(
            e.to_string(),
            "syntax error at line 2, column 13 (unexpected \")\")"
        );
        let e = first_error(Grammar::Rust, "fn main() {\n    let x = (1;\n}\n").unwrap();
        assert_eq!(
            e.to_string(),
            "syntax error at line 2, column 15 (missing \")\")"
        );
    }

    #[test]
    fn text_beyond_latin_1_and_control_characters_parse_without_crashing() {
        // tree-sitter-bash's scanner once read outside a table on such characters.
        let text = "x = '\u{10FFFF}\u{2028}é中\u{0}\u{7}' # \u{1F600}\n{\u{FFFD}: [\u{300}]}\n";
        for name in [
            "a.py", "a.js", "a.ts", "a.tsx", "a.rs", "a.go", "a.json", "a.toml", "a.yaml",
        ] {
            let g = Grammar::for_path(Path::new(name)).unwrap();
            let _ = first_error(g, text);
            let _ = first_error(g, &text.repeat(50));
        }
    }

    #[test]
    fn a_python_block_without_a_statement_is_an_error_as_in_python() {
        // A small model's replace of `pass` by a whole new `def`: the outer function
        // is left with no indented body, which tree-sitter's grammar accepts.
        let before = "def leap_year(year):\n    pass\n";
        let after = "def leap_year(year):\n    def leap_year(year):\n    if year % 4 == 0:\n        return True\n    return False\n";
        let e = introduced_error(Path::new("leap.py"), Some(before), after).unwrap();
        assert_eq!(
            e.to_string(),
            "syntax error at line 2, column 5 (expected an indented block after this line)"
        );
        let only_comment = "if x:\n    # later\ny = 1\n";
        assert!(first_error(Grammar::Python, only_comment).is_some());
        for fine in [
            "def f():\n    pass\n",
            "def f(): return 1\n",
            "class A:\n    ...\n",
            "if x:\n    # c\n    y = 1\n",
        ] {
            assert_eq!(first_error(Grammar::Python, fine), None, "{fine}");
        }
    }

    #[test]
    fn a_broken_baseline_new_files_and_unknown_extensions_are_not_checked() {
        let broken = "print(\n";
        assert_eq!(
            introduced_error(Path::new("a.py"), Some(broken), "print(("),
            None
        );
        assert_eq!(introduced_error(Path::new("a.py"), None, broken), None);
        assert_eq!(
            introduced_error(Path::new("a.txt"), Some("ok"), broken),
            None
        );
    }
}
