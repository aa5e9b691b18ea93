//! Edit matching, pure: given a file's text (LF-normalised) and a `replace` call's
//! strings, the new text, which strategy found the match, or a precise error that tells
//! the model where to look. No I/O; the tools and the Corrector actor call in here.

pub mod hints;
pub mod js;
pub mod placeholders;
pub mod snapshot;
pub mod snippet;
pub mod strategies;
pub mod unescape;

use crate::protocol::ToolErrorKind;

/// Which strategy found the match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    Exact,
    Flexible,
    Regex,
    Fuzzy,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Exact => "exact",
            Strategy::Flexible => "flexible",
            Strategy::Regex => "regex",
            Strategy::Fuzzy => "fuzzy",
        }
    }
}

/// How many matches an edit requires: gemini-cli 0.61's `allow_multiple` (any number,
/// at least one) or the older `expected_replacements: n` (exactly n).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Occurrences {
    Exactly(usize),
    AtLeastOne,
}

impl Occurrences {
    /// From the two parameters; `expected_replacements` wins when both are given.
    pub fn from_params(allow_multiple: Option<bool>, expected: Option<u64>) -> Self {
        match (expected, allow_multiple) {
            (Some(n), _) => Occurrences::Exactly(usize::try_from(n).unwrap_or(usize::MAX)),
            (None, Some(true)) => Occurrences::AtLeastOne,
            (None, _) => Occurrences::Exactly(1),
        }
    }

    /// Whether several matches may all be replaced.
    pub fn allows_many(self) -> bool {
        !matches!(self, Occurrences::Exactly(1))
    }

    /// Whether `found` matches satisfy the requirement.
    pub fn accepts(self, found: usize) -> bool {
        match self {
            Occurrences::Exactly(n) => found == n,
            Occurrences::AtLeastOne => found >= 1,
        }
    }
}

/// Lines `start..=end`, 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRange {
    pub start: usize,
    pub end: usize,
}

impl std::fmt::Display for LineRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.start == self.end {
            write!(f, "line {}", self.start)
        } else {
            write!(f, "lines {}-{}", self.start, self.end)
        }
    }
}

/// What a strategy pass produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Replacement {
    pub new_content: String,
    pub occurrences: usize,
    pub strategy: Option<Strategy>,
    /// Where each match is in the original text.
    pub ranges: Vec<LineRange>,
    /// `old_string` / `new_string` after CRLF normalisation.
    pub final_old: String,
    pub final_new: String,
}

/// A failed edit: the model reads `raw`, the user sees `display`.
#[derive(Debug, Clone, PartialEq)]
pub struct EditError {
    pub kind: ToolErrorKind,
    pub raw: String,
    pub display: String,
}

impl EditError {
    fn new(kind: ToolErrorKind, raw: String, display: String) -> Self {
        Self { kind, raw, display }
    }

    /// Whether asking a corrector could help (the strings did not match as required).
    pub fn is_correctable(&self) -> bool {
        matches!(
            self.kind,
            ToolErrorKind::EditNoOccurrenceFound | ToolErrorKind::EditExpectedOccurrenceMismatch
        )
    }
}

/// The strings of one `replace` call.
#[derive(Debug, Clone, Copy)]
pub struct EditRequest<'a> {
    /// `file_path` as the model wrote it (gemini-cli quotes it in match errors).
    pub file_path: &'a str,
    pub old_string: &'a str,
    pub new_string: &'a str,
    pub want: Occurrences,
}

/// A computed edit, ready to be shown and written.
#[derive(Debug, Clone, PartialEq)]
pub struct EditPlan {
    /// The new text, LF-normalised (line endings are restored on write).
    pub new_content: String,
    pub occurrences: usize,
    pub strategy: Option<Strategy>,
    pub ranges: Vec<LineRange>,
    pub is_new_file: bool,
}

/// gemini-cli's `calculateReplacement`: exact → flexible → regex → fuzzy.
pub fn calculate_replacement(
    content: &str,
    old_string: &str,
    new_string: &str,
    want: Occurrences,
) -> Replacement {
    strategies::calculate(content, old_string, new_string, want)
}

/// gemini-cli's `calculateEdit` without the I/O: `current` is the file's LF text, or
/// `None` when it does not exist; `resolved` is the real path for messages.
pub fn compute_edit(
    current: Option<&str>,
    request: &EditRequest,
    resolved: &str,
) -> Result<EditPlan, EditError> {
    let Some(content) = current else {
        if request.old_string.is_empty() {
            return Ok(EditPlan {
                new_content: request.new_string.replace("\r\n", "\n"),
                occurrences: 1,
                strategy: None,
                ranges: Vec::new(),
                is_new_file: true,
            });
        }
        return Err(EditError::new(
            ToolErrorKind::FileNotFound,
            format!("File not found: {resolved}"),
            "File not found. Cannot apply edit. Use an empty old_string to create a new file."
                .into(),
        ));
    };
    if request.old_string.is_empty() {
        return Err(EditError::new(
            ToolErrorKind::AttemptToCreateExistingFile,
            format!("File already exists, cannot create: {resolved}"),
            "Failed to edit. Attempted to create a file that already exists.".into(),
        ));
    }
    let replacement = calculate_replacement(
        content,
        request.old_string,
        request.new_string,
        request.want,
    );
    if let Some(error) = replacement_error(request, content, &replacement) {
        return Err(error);
    }
    Ok(EditPlan {
        new_content: replacement.new_content,
        occurrences: replacement.occurrences,
        strategy: replacement.strategy,
        ranges: replacement.ranges,
        is_new_file: false,
    })
}

/// gemini-cli's `getErrorReplaceResult`, with Troupe's hints appended: where the closest
/// region is when nothing matched, where each match is when too many did.
pub fn replacement_error(
    request: &EditRequest,
    content: &str,
    replacement: &Replacement,
) -> Option<EditError> {
    let fp = request.file_path;
    let found = replacement.occurrences;
    if found == 0 {
        let mut raw = format!(
            "Could not find an exact match for 'old_string' in '{fp}'. If previous edits modified the file or you are modifying lines outside your recent read window, please use ReadFile to inspect the target lines before retrying with an exact 'old_string'."
        );
        if let Some(hint) = hints::closest_region(content, &replacement.final_old, fp) {
            raw.push_str("\n\n");
            raw.push_str(&hint);
        }
        return Some(EditError::new(
            ToolErrorKind::EditNoOccurrenceFound,
            raw,
            format!("Could not find an exact match for old_string in '{fp}'."),
        ));
    }
    if !request.want.accepts(found) {
        let (mut raw, display) = match request.want {
            Occurrences::Exactly(1) | Occurrences::AtLeastOne => (
                format!("Failed to edit, Expected 1 occurrence but found {found} for old_string in file: {fp}. If you intended to replace multiple occurrences, set 'allow_multiple' to true."),
                format!("Failed to edit, expected 1 occurrence but found {found}."),
            ),
            Occurrences::Exactly(n) => {
                let term = if n == 1 { "occurrence" } else { "occurrences" };
                (
                    format!("Failed to edit, Expected {n} {term} but found {found} for old_string in file: {fp}"),
                    format!("Failed to edit, expected {n} {term} but found {found}."),
                )
            }
        };
        raw.push_str("\n\n");
        raw.push_str(&hints::describe_matches(content, &replacement.ranges));
        return Some(EditError::new(
            ToolErrorKind::EditExpectedOccurrenceMismatch,
            raw,
            display,
        ));
    }
    if replacement.final_old == replacement.final_new {
        return Some(EditError::new(
            ToolErrorKind::EditNoChange,
            format!(
                "No changes to apply. The old_string and new_string are identical in file: {fp}"
            ),
            "No changes to apply. The old_string and new_string are identical.".into(),
        ));
    }
    if replacement.new_content == content {
        return Some(EditError::new(
            ToolErrorKind::EditNoChange,
            format!("No changes to apply. The new content is identical to the current content in file: {fp}"),
            "No changes to apply. The new content is identical to the current content.".into(),
        ));
    }
    None
}

/// The sentence gemini-cli adds after a fuzzy match: `Applied fuzzy match at line(s) …`.
pub fn fuzzy_feedback(plan: &EditPlan) -> Option<String> {
    if plan.strategy != Some(Strategy::Fuzzy) || plan.ranges.is_empty() {
        return None;
    }
    let ranges: Vec<String> = plan
        .ranges
        .iter()
        .map(|r| {
            if r.start == r.end {
                r.start.to_string()
            } else {
                format!("{}-{}", r.start, r.end)
            }
        })
        .collect();
    let s = if ranges.len() > 1 { "s" } else { "" };
    Some(format!(
        "Applied fuzzy match at line{s} {}.",
        ranges.join(", ")
    ))
}

#[cfg(test)]
mod tests;
