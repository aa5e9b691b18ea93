//! A call's `resultDisplay` in the session file, in gemini-cli's shape: the display
//! text, or for an edit whose result carries the file's old and new text (see
//! `tools::file_edit::with_contents`), gemini-cli's file-diff object
//! (`fileDiff`, `fileName`, `filePath`, `originalContent`, `newContent`, `isNewFile`).
//! Front ends that show edits as diffs (ACP) read the same texts back, live from the
//! result's data and on `session/load` from the file, so both show one diff.

use serde_json::{json, Value};

/// The texts of one edit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EditTexts<'a> {
    /// The file as the confirmation named it.
    pub file_path: &'a str,
    /// `None`: the file was absent (or empty).
    pub original: Option<&'a str>,
    pub new: &'a str,
}

/// The edit texts a result's data carries (`file_path`, `original_content`,
/// `new_content`), if it does.
pub fn edit_of_data(data: &Value) -> Option<EditTexts<'_>> {
    Some(EditTexts {
        file_path: data.get("file_path")?.as_str()?,
        original: data.get("original_content").and_then(Value::as_str),
        new: data.get("new_content")?.as_str()?,
    })
}

/// The edit texts of a recorded gemini-cli file-diff `resultDisplay`, if it is one.
pub fn edit_of_display(display: &Value) -> Option<EditTexts<'_>> {
    Some(EditTexts {
        file_path: display.get("filePath")?.as_str()?,
        original: display.get("originalContent").and_then(Value::as_str),
        new: display.get("newContent")?.as_str()?,
    })
}

/// The `resultDisplay` to record for a call shown as `display` whose result carries
/// `data`.
pub fn result_display(display: &str, data: Option<&Value>) -> Value {
    let Some((edit, data)) = data.and_then(|d| edit_of_data(d).map(|e| (e, d))) else {
        return json!(display);
    };
    let file_name = edit.file_path.rsplit('/').next().unwrap_or(edit.file_path);
    json!({
        "fileDiff": data.get("diff").and_then(Value::as_str).unwrap_or(""),
        "fileName": file_name,
        "filePath": edit.file_path,
        "originalContent": edit.original,
        "newContent": edit.new,
        "isNewFile": edit.original.is_none(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_is_recorded_as_gemini_clis_file_diff_and_read_back() {
        let data = json!({"diff": "@@ -1 +1 @@\n-a\n+b\n", "file_path": "/w/x.txt",
            "original_content": "a\n", "new_content": "b\n"});
        let shown = result_display("1 added, 1 removed", Some(&data));
        assert_eq!(shown["fileName"], "x.txt");
        assert_eq!(shown["fileDiff"], "@@ -1 +1 @@\n-a\n+b\n");
        assert_eq!(shown["isNewFile"], false);
        assert_eq!(edit_of_display(&shown), edit_of_data(&data));
        let plain = result_display("Read 3 lines", Some(&json!({"strategy": "exact"})));
        assert_eq!(plain, json!("Read 3 lines"));
        let created =
            json!({"file_path": "/w/n.txt", "original_content": null, "new_content": "n"});
        assert_eq!(result_display("Created", Some(&created))["isNewFile"], true);
    }
}
