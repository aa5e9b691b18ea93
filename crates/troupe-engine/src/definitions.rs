//! The definitions an edit removes (`edit.keep_used_definitions`): the functions,
//! classes and types a file defines, by name, read from its tree-sitter tree. An edit
//! that renames `format_price` removes its definition; when the name is still used, in
//! the file or elsewhere, every use now fails, so the tools refuse such an edit.

use std::collections::BTreeMap;
use std::path::Path;

use tree_sitter::{Node, Parser};

use super::syntax_check::{Grammar, MAX_CHECKED_BYTES};

/// The node kinds that define a name (in their `name` field), per grammar; `None` for
/// a grammar that defines no code (JSON, TOML, YAML).
fn defining_kinds(grammar: Grammar) -> Option<&'static [&'static str]> {
    Some(match grammar {
        Grammar::Python => &["function_definition", "class_definition"],
        Grammar::JavaScript | Grammar::TypeScript | Grammar::Tsx => &[
            "function_declaration",
            "generator_function_declaration",
            "class_declaration",
            "method_definition",
            "interface_declaration",
            "type_alias_declaration",
        ],
        Grammar::Rust => &[
            "function_item",
            "struct_item",
            "enum_item",
            "trait_item",
            "type_item",
            "const_item",
            "static_item",
        ],
        Grammar::Go => &["function_declaration", "method_declaration", "type_spec"],
        Grammar::Json | Grammar::Toml | Grammar::Yaml => return None,
    })
}

/// How many times each name is defined in `text`; `None` when it does not parse
/// cleanly enough to tell (an ERROR node) or the grammar defines no code.
pub fn defined_names(grammar: Grammar, text: &str) -> Option<BTreeMap<String, usize>> {
    let kinds = defining_kinds(grammar)?;
    let mut parser = Parser::new();
    parser.set_language(&grammar.language()).ok()?;
    let tree = parser.parse(text, None)?;
    let root = tree.root_node();
    if root.has_error() {
        return None;
    }
    let mut names = BTreeMap::new();
    let mut stack: Vec<Node> = vec![root];
    while let Some(node) = stack.pop() {
        if kinds.contains(&node.kind()) {
            if let Some(name) = node
                .child_by_field_name("name")
                .and_then(|n| text.get(n.byte_range()))
            {
                *names.entry(name.to_string()).or_insert(0) += 1;
            }
        }
        let mut cursor = node.walk();
        stack.extend(node.named_children(&mut cursor));
    }
    Some(names)
}

/// The names `after` defines fewer times than `before` did (sorted), when `path` has a
/// code grammar and both texts parse and are small enough to check.
pub fn removed_definitions(path: &Path, before: &str, after: &str) -> Vec<String> {
    let Some(grammar) = Grammar::for_path(path) else {
        return Vec::new();
    };
    if before.len() > MAX_CHECKED_BYTES || after.len() > MAX_CHECKED_BYTES {
        return Vec::new();
    }
    let (Some(old), Some(new)) = (
        defined_names(grammar, before),
        defined_names(grammar, after),
    ) else {
        return Vec::new();
    };
    old.into_iter()
        .filter(|(name, count)| new.get(name).copied().unwrap_or(0) < *count)
        .map(|(name, _)| name)
        .collect()
}

/// Whether `text` uses `name` as a whole word (an identifier character on neither side).
pub fn uses_word(text: &str, name: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    text.match_indices(name).any(|(at, _)| {
        let before_ok = text[..at].chars().next_back().is_none_or(|c| !is_ident(c));
        let after_ok = text[at + name.len()..]
            .chars()
            .next()
            .is_none_or(|c| !is_ident(c));
        before_ok && after_ok
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHOP: &str = "def format_price(value):\n    return f\"{value:.2f}\"\n\n\nclass Cart:\n    def total(self):\n        return 0\n";

    #[test]
    fn a_renamed_function_is_a_removed_definition_and_a_docstring_is_not() {
        let path = Path::new("shop/formatting.py");
        let renamed = SHOP.replace("def format_price", "def format_amount");
        assert_eq!(removed_definitions(path, SHOP, &renamed), ["format_price"]);
        let documented = SHOP.replace("(value):\n", "(value):\n    \"\"\"Format a price.\"\"\"\n");
        assert!(removed_definitions(path, SHOP, &documented).is_empty());
        let method_gone = SHOP.replace("    def total(self):\n        return 0\n", "    pass\n");
        assert_eq!(removed_definitions(path, SHOP, &method_gone), ["total"]);
        // Not code, or not parsing: nothing is claimed.
        assert!(removed_definitions(Path::new("a.json"), "{}", "[]").is_empty());
        assert!(removed_definitions(path, SHOP, "def (").is_empty());
    }

    #[test]
    fn rust_go_and_typescript_definitions_are_read() {
        let rs = defined_names(Grammar::Rust, "fn a() {}\nstruct B;\nconst C: u8 = 1;").unwrap();
        assert_eq!(rs.keys().collect::<Vec<_>>(), ["B", "C", "a"]);
        let go = defined_names(Grammar::Go, "package p\nfunc F() {}\ntype T struct{}\n").unwrap();
        assert_eq!(go.keys().collect::<Vec<_>>(), ["F", "T"]);
        let ts = defined_names(Grammar::TypeScript, "function f() {}\ninterface I {}\n").unwrap();
        assert_eq!(ts.keys().collect::<Vec<_>>(), ["I", "f"]);
    }

    #[test]
    fn a_word_is_used_only_whole() {
        assert!(uses_word("x = format_price(1)", "format_price"));
        assert!(!uses_word("x = format_prices(1)", "format_price"));
        assert!(!uses_word("my_format_price()", "format_price"));
        assert!(uses_word("format_price", "format_price"));
    }
}
