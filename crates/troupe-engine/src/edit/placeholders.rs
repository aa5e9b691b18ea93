//! gemini-cli's omission-placeholder detector: lines such as `// rest of code ...` or
//! `(unchanged methods ...)` that a model writes instead of the real code. Beyond
//! gemini-cli, a `#` comment marker is recognised as well as `//`.

const PREFIXES: [&str; 7] = [
    "rest of",
    "rest of method",
    "rest of methods",
    "rest of code",
    "unchanged code",
    "unchanged method",
    "unchanged methods",
];

fn normalize(line: &str) -> Option<String> {
    let mut text = super::js::trim(line);
    if text.is_empty() {
        return None;
    }
    // gemini-cli strips `//`; Troupe also strips `#` (Python, shell, Ruby comments).
    if let Some(rest) = text.strip_prefix("//").or_else(|| text.strip_prefix('#')) {
        text = super::js::trim(rest);
    }
    if text.len() >= 2 && text.starts_with('(') && text.ends_with(')') {
        text = super::js::trim(&text[1..text.len() - 1]);
    }
    let at = text.find("...")?;
    let prefix_raw = super::js::trim(&text[..at]).to_lowercase();
    let suffix = super::js::trim(&text[at + 3..]);
    let prefix = prefix_raw
        .split([' ', '\t', '\n', '\r'])
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if !PREFIXES.contains(&prefix.as_str()) {
        return None;
    }
    if !suffix.is_empty() && !suffix.chars().all(|c| c == '.') {
        return None;
    }
    Some(format!("{prefix} ..."))
}

/// Every placeholder in `text`, normalised (`rest of code ...`).
pub fn detect(text: &str) -> Vec<String> {
    text.replace("\r\n", "\n")
        .split('\n')
        .filter_map(normalize)
        .collect()
}

/// Placeholders of `new_string` that `old_string` does not also contain.
pub fn introduced(old_string: &str, new_string: &str) -> Vec<String> {
    let old = detect(old_string);
    detect(new_string)
        .into_iter()
        .filter(|p| !old.contains(p))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_usual_shapes() {
        assert_eq!(
            detect("a\n  // rest of code ...\n"),
            vec!["rest of code ..."]
        );
        assert_eq!(detect("(rest of methods ...)"), vec!["rest of methods ..."]);
        assert_eq!(detect("    # rest of code ..."), vec!["rest of code ..."]);
        assert_eq!(detect("Unchanged  Code ....."), vec!["unchanged code ..."]);
        assert!(detect("rest of the story ...").is_empty());
        assert!(detect("let x = y...;").is_empty());
        assert!(detect("rest of ... and more").is_empty());
    }

    #[test]
    fn placeholders_already_in_old_string_are_allowed() {
        assert!(introduced("// rest of code ...", "x\n// rest of code ...").is_empty());
        assert_eq!(
            introduced("x", "// rest of code ..."),
            vec!["rest of code ..."]
        );
    }
}
