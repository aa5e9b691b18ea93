//! `ask_user {questions}`: gemini-cli 0.61's questions from the model to the user (a
//! choice among 2–4 options, a free text, or yes/no). The front end asks them (the
//! REPL's picker, the ACP client's permission request) and the answers come back as
//! gemini-cli's `{"answers": {"<question index>": "<answer>"}}`. A run with no person
//! to answer refuses the call, and does not declare the tool, as gemini-cli does.

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::{Decider, Services, Tool, ToolContext};
use crate::engine::policy::PolicyDecision;
use crate::protocol::{ConfirmationDetails, Question, ToolKind, ToolOutput};

/// The name the model calls.
pub const NAME: &str = "ask_user";

/// Why the call is refused when no person answers (after gemini-cli's "Tool
/// execution denied by policy.").
pub const NO_USER: &str =
    "No user is there to answer: this session is not interactive. Decide yourself, or say what you need in your final answer.";

/// The `ask_user` tool.
#[derive(Debug, Default)]
pub struct AskUser;

/// `ask_user`'s parameters.
#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    /// The questions, asked in order.
    pub questions: Vec<Question>,
}

/// gemini-cli's `\n` written as two characters, made a line break.
fn unescape(text: &str) -> String {
    text.replace("\\r\\n", "\n").replace("\\n", "\n")
}

/// The questions as the user is shown them (gemini-cli's `createInvocation`).
fn normalized(questions: &[Question]) -> Vec<Question> {
    questions
        .iter()
        .map(|q| {
            let mut q = q.clone();
            q.question = unescape(&q.question);
            q.header = unescape(&q.header);
            q.placeholder = q.placeholder.as_deref().map(unescape);
            for option in &mut q.options {
                option.label = unescape(&option.label);
                option.description = unescape(option.description.trim());
            }
            q
        })
        .collect()
}

/// The answers (a map from the question's index) in the order of the questions, as
/// gemini-cli's answer object; what the user was shown, gemini-cli's way.
fn answer(questions: &[Question], answers: &Map<String, Value>) -> (String, String) {
    let mut ordered: Vec<(usize, &str)> = answers
        .iter()
        .filter_map(|(k, v)| Some((k.parse::<usize>().ok()?, v.as_str()?)))
        .collect();
    ordered.sort_by_key(|(i, _)| *i);
    let mut map = Map::new();
    for (i, text) in &ordered {
        map.insert(i.to_string(), Value::String((*text).to_string()));
    }
    let llm = json!({"answers": map}).to_string();
    if ordered.is_empty() {
        return (llm, "User submitted without answering questions.".into());
    }
    let lines: Vec<String> = ordered
        .iter()
        .map(|(i, text)| {
            let category = questions
                .get(*i)
                .map(|q| q.header.clone())
                .unwrap_or_else(|| format!("Q{i}"));
            let prefix = format!("  {category} → ");
            let indent = " ".repeat(prefix.chars().count());
            format!(
                "{prefix}{}",
                text.split('\n')
                    .collect::<Vec<_>>()
                    .join(&format!("\n{indent}"))
            )
        })
        .collect();
    (llm, format!("**User answered:**\n{}", lines.join("\n")))
}

impl Tool for AskUser {
    type Params = Params;

    fn name(&self) -> &'static str {
        NAME
    }

    fn display_name(&self) -> &'static str {
        "Ask User"
    }

    /// gemini-cli's `Kind.Communicate`, which ACP labels `other`.
    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn interactive_only(&self) -> bool {
        true
    }

    /// The user of a subagent's session is the main session's.
    fn main_session_only(&self) -> bool {
        true
    }

    fn declares_wait_for_previous(&self) -> bool {
        false
    }

    fn run_once(&self) -> bool {
        false
    }

    fn description(&self) -> String {
        "Asks the user one or more questions (choices, free text or yes/no) to learn their preferences, settle unclear requirements or let them decide.".into()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "required": ["questions"],
            "properties": {
                "questions": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 4,
                    "items": {
                        "type": "object",
                        "required": ["question", "header", "type"],
                        "properties": {
                            "question": {"type": "string", "description": "The whole question, ending with a question mark."},
                            "header": {"type": "string", "description": "A very short tag for the question (\"Auth\", \"Library\")."},
                            "type": {"type": "string", "enum": ["choice", "text", "yesno"], "default": "choice", "description": "'choice' (the default): pick among options; 'text': a free answer; 'yesno': yes or no."},
                            "options": {
                                "type": "array",
                                "description": "For 'choice': 2 to 4 options (the user may also type another answer).",
                                "items": {
                                    "type": "object",
                                    "required": ["label", "description"],
                                    "properties": {
                                        "label": {"type": "string", "description": "The option, in 1-5 words."},
                                        "description": {"type": "string", "description": "What choosing it means."}
                                    }
                                }
                            },
                            "multiSelect": {"type": "boolean", "description": "For 'choice': whether several options may be picked."},
                            "placeholder": {"type": "string", "description": "A hint shown where the user types an answer."}
                        }
                    }
                }
            }
        })
    }

    /// gemini-cli's `validateToolParamValues`.
    fn validate(&self, p: &Params, _services: &Services) -> Result<(), String> {
        if p.questions.is_empty() {
            return Err("At least one question is required.".into());
        }
        for (i, q) in p.questions.iter().enumerate() {
            let n = i + 1;
            if q.kind == "choice" {
                if q.options.len() < 2 {
                    return Err(format!(
                        "Question {n}: type='choice' requires 'options' array with 2-4 items."
                    ));
                }
                if q.options.len() > 4 {
                    return Err(format!(
                        "Question {n}: 'options' array must have at most 4 items."
                    ));
                }
            }
            for (j, option) in q.options.iter().enumerate() {
                if option.label.trim().is_empty() {
                    return Err(format!("Question {n}, option {}: 'label' is required and must be a non-empty string.", j + 1));
                }
            }
        }
        Ok(())
    }

    /// A person answers in every mode; nobody can in a non-interactive run.
    fn decider(&self, _p: &Params, _services: &Services) -> Option<Decider> {
        Some(Box::new(|_, interactive| {
            Some(match interactive {
                true => PolicyDecision::Ask,
                false => PolicyDecision::Deny(NO_USER.into()),
            })
        }))
    }

    fn confirmation(
        &self,
        p: &Params,
        _ctx: &ToolContext,
    ) -> BoxFuture<'static, Option<ConfirmationDetails>> {
        let questions = normalized(&p.questions);
        Box::pin(async move {
            Some(ConfirmationDetails::AskUser {
                title: "Ask User".into(),
                questions,
            })
        })
    }

    fn execute(&self, p: Params, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let questions = normalized(&p.questions);
        let answers = ctx
            .answer
            .as_ref()
            .and_then(|a| a.get("answers"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let (llm, display) = answer(&questions, &answers);
        Box::pin(async move { ToolOutput::text(llm, display) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_gemini_cli_s_object_in_question_order() {
        let q: Vec<Question> = serde_json::from_value(json!([
            {"question": "Which?", "header": "Lib", "type": "choice",
             "options": [{"label": "A", "description": ""}, {"label": "B", "description": ""}]},
            {"question": "Why?", "header": "Reason", "type": "text"}
        ]))
        .unwrap();
        let answers = json!({"1": "because\nof x", "0": "A"});
        let (llm, display) = answer(&q, answers.as_object().unwrap());
        assert_eq!(llm, r#"{"answers":{"0":"A","1":"because\nof x"}}"#);
        assert_eq!(
            display,
            "**User answered:**\n  Lib → A\n  Reason → because\n           of x"
        );
        let (llm, display) = answer(&q, &Map::new());
        assert_eq!(llm, r#"{"answers":{}}"#);
        assert_eq!(display, "User submitted without answering questions.");
    }
}
