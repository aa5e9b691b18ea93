//! The prompts and JSON response schemas of the Corrector's model calls, after
//! gemini-cli's `llm-edit-fixer.ts` and the older `editCorrector.ts`.

use serde_json::{json, Value};

/// System prompt of the instruction-based fixer.
pub const FIXER_SYSTEM: &str = "You are an expert code-editing assistant specializing in debugging and correcting failed search-and-replace operations.

# Primary Goal
Analyze a failed edit attempt and provide a corrected `search` string that matches the text in the file precisely. The correction should be as minimal as possible, staying very close to the original `search` string. Do NOT invent a completely new edit. DO NOT GIVE ADVICE.

# Rules for Correction
1. **Minimal Correction:** stay as close as possible to the original `search` string; fix whitespace, indentation, line endings or escaping.
2. **Explain the Fix:** state in `explanation` exactly why the original `search` failed and how the new one fixes it.
3. **Preserve the `replace` String:** do NOT modify `replace` unless the fix of `search` requires it to keep the edit's intent.
4. **No Changes Case:** if the change described by the instruction is already present in the file, set `noChangesRequired` to true and explain why.
5. **Exactness:** the `search` field must be the EXACT literal text from the file. Do not escape characters.";

/// The fixer's user prompt.
pub fn fixer_prompt(
    instruction: &str,
    old_string: &str,
    new_string: &str,
    error: &str,
    content: &str,
) -> String {
    format!(
        "\n# Goal of the Original Edit\n<instruction>\n{instruction}\n</instruction>\n\n# Failed Attempt Details\n- **Original `search` parameter (failed):**\n<search>\n{old_string}\n</search>\n- **Original `replace` parameter:**\n<replace>\n{new_string}\n</replace>\n- **Error Encountered:**\n<error>\n{error}\n</error>\n\n# Full File Content\n<file_content>\n{content}\n</file_content>\n\n# Your Task\nBased on the error and the file content, provide a corrected `search` string that will succeed. Remember to keep your correction minimal and explain the precise reason for the failure in your `explanation`.\n"
    )
}

/// The fixer's response schema.
pub fn fixer_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "explanation": {"type": "string"},
            "search": {"type": "string"},
            "replace": {"type": "string"},
            "noChangesRequired": {"type": "boolean"}
        },
        "required": ["search", "replace", "explanation"]
    })
}

/// System prompt of the older old/new-string correction.
pub const CORRECTION_SYSTEM: &str = "You are an expert code-editing assistant. Your task is to analyze a failed edit attempt and provide a corrected version of the text snippets. The correction should be as minimal as possible, staying very close to the original. Focus ONLY on fixing issues like whitespace, indentation, line endings, or incorrect escaping. Do NOT invent a completely new edit. Your job is to fix the provided parameters to make the edit succeed. Return ONLY the corrected snippet in the specified JSON format.";

/// Asks for the exact literal segment of the file a snippet meant.
pub fn old_string_prompt(content: &str, snippet: &str) -> String {
    format!(
        "Context: A process needs to find an exact literal, unique match for a specific text snippet within a file's content. The provided snippet failed to match exactly. This is most likely because it has been overly escaped or its whitespace differs.\n\nTask: Analyze the provided file content and the problematic target snippet. Identify the segment in the file content that the snippet was *most likely* intended to match. Output the *exact*, literal text of that segment from the file content. Focus *only* on removing extra escape characters and correcting formatting, whitespace, or minor differences to achieve a PERFECT literal match. If no clear, unique match can be found, return an empty string for the corrected target snippet.\n\nProblematic target snippet:\n```\n{snippet}\n```\n\nFile Content:\n```\n{content}\n```\n\nReturn ONLY the corrected target snippet in the specified JSON format with the key 'corrected_target_snippet'."
    )
}

/// Asks for `new_string` adjusted to a corrected `old_string`.
pub fn new_string_prompt(original_old: &str, corrected_old: &str, original_new: &str) -> String {
    format!(
        "Context: A text replacement operation was planned. The original text to be replaced (original_old_string) was slightly different from the actual text in the file (corrected_old_string). The original_old_string has now been corrected to match the file content.\nWe now need to adjust the replacement text (original_new_string) so that it makes sense as a replacement for the corrected_old_string, while preserving the original intent of the change.\n\noriginal_old_string (what was initially intended to be found):\n```\n{original_old}\n```\n\ncorrected_old_string (what was actually found in the file and will be replaced):\n```\n{corrected_old}\n```\n\noriginal_new_string (what was intended to replace original_old_string):\n```\n{original_new}\n```\n\nTask: Based on the differences between original_old_string and corrected_old_string, and the content of original_new_string, generate a corrected_new_string. This corrected_new_string should be what original_new_string would have been if it was designed to replace corrected_old_string directly, while maintaining the spirit of the original transformation.\n\nReturn ONLY the corrected string in the specified JSON format with the key 'corrected_new_string'."
    )
}

/// `{type: object, properties: {<key>: string}, required: [<key>]}`.
pub fn string_schema(key: &str) -> Value {
    json!({
        "type": "object",
        "properties": {key: {"type": "string"}},
        "required": [key]
    })
}
