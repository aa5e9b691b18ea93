//! The two confirmations that are more than yes or no: `ask_user`'s questions (a
//! picker per question: its options, "Other" to type an answer; a typed line for a
//! free question or several options) and `exit_plan_mode`'s plan approval (approve
//! with edits applied unasked or asked, or keep planning with feedback). Both run on
//! the terminal thread, like every confirmation; Esc dismisses.

use std::io::Write;

use serde_json::{json, Map, Value};

use crate::engine::sanitize::{for_terminal, one_line};
use crate::protocol::{ApprovalDecision, Question};

use super::confirm::{choose, Choice};
use super::terminal::{Palette, TurnMode};

/// What one question came to.
enum Answer {
    Given(String),
    Skipped,
    Dismissed,
}

/// Asks `questions` in turn; the answers as gemini-cli's payload
/// (`{"answers": {"<index>": "<answer>"}}`), or a cancel when the user dismissed.
pub fn ask_user(
    questions: &[Question],
    p: Palette,
    quiet: &TurnMode,
    ask_line: &mut dyn FnMut(&str) -> Option<String>,
) -> ApprovalDecision {
    let mut answers = Map::new();
    for (i, q) in questions.iter().enumerate() {
        match ask_one(q, p, quiet, ask_line) {
            Answer::Given(text) => {
                answers.insert(i.to_string(), Value::String(text));
            }
            Answer::Skipped => {}
            Answer::Dismissed => return ApprovalDecision::Cancel { feedback: None },
        }
    }
    ApprovalDecision::Answered {
        payload: json!({ "answers": answers }),
    }
}

/// A line typed by the user (`None`: end of input), with the spinner paused.
fn typed(
    prompt: &str,
    quiet: &TurnMode,
    ask_line: &mut dyn FnMut(&str) -> Option<String>,
) -> Option<String> {
    quiet.suspend();
    let line = ask_line(prompt);
    quiet.resume();
    line
}

fn ask_one(
    q: &Question,
    p: Palette,
    quiet: &TurnMode,
    ask_line: &mut dyn FnMut(&str) -> Option<String>,
) -> Answer {
    let mut out = std::io::stdout();
    let header = match q.header.trim().is_empty() {
        true => String::new(),
        false => format!("[{}] ", one_line(&q.header)),
    };
    let _ = writeln!(
        out,
        "{}",
        p.bold(&format!("? {header}{}", one_line(&q.question)))
    );
    let hint = q.placeholder.as_deref().map(one_line);
    let free_prompt = match &hint {
        Some(h) => format!("Your answer ({h}): "),
        None => "Your answer: ".to_string(),
    };
    let labels: Vec<String> = match q.kind.as_str() {
        "text" => Vec::new(),
        "yesno" => vec!["Yes".into(), "No".into()],
        _ => q.options.iter().map(|o| o.label.clone()).collect(),
    };
    if labels.is_empty() {
        return match typed(&free_prompt, quiet, ask_line) {
            Some(line) if !line.trim().is_empty() => Answer::Given(line.trim().to_string()),
            Some(_) => Answer::Skipped,
            None => Answer::Dismissed,
        };
    }
    if q.multi_select {
        return ask_several(q, &labels, quiet, ask_line);
    }
    let mut menu: Vec<(Choice, String)> = labels
        .iter()
        .enumerate()
        .map(|(i, label)| {
            let description = q.options.get(i).map(|o| o.description.trim()).unwrap_or("");
            let text = match description.is_empty() {
                true => one_line(label).into_owned(),
                false => format!("{} — {}", one_line(label), one_line(description)),
            };
            (Choice::Pick(i), text)
        })
        .collect();
    menu.push((Choice::Pick(labels.len()), "Other (type an answer)".into()));
    menu.push((Choice::No, "Skip this question".into()));
    match choose(&menu, p) {
        Choice::Pick(i) if i < labels.len() => Answer::Given(labels[i].clone()),
        Choice::Pick(_) => match typed(&free_prompt, quiet, ask_line) {
            Some(line) if !line.trim().is_empty() => Answer::Given(line.trim().to_string()),
            Some(_) => Answer::Skipped,
            None => Answer::Dismissed,
        },
        Choice::No => Answer::Skipped,
        _ => Answer::Dismissed,
    }
}

/// A question whose answer may be several options: they are listed and the user
/// types their numbers (`1,3`) or an answer of their own; gemini-cli joins the
/// labels picked with `, `.
fn ask_several(
    q: &Question,
    labels: &[String],
    quiet: &TurnMode,
    ask_line: &mut dyn FnMut(&str) -> Option<String>,
) -> Answer {
    let mut out = std::io::stdout();
    for (i, label) in labels.iter().enumerate() {
        let description = q.options.get(i).map(|o| o.description.trim()).unwrap_or("");
        let _ = writeln!(
            out,
            "   {}. {} {}",
            i + 1,
            one_line(label),
            one_line(description)
        );
    }
    let Some(line) = typed(
        "Pick one or more (such as 1,3), or type an answer: ",
        quiet,
        ask_line,
    ) else {
        return Answer::Dismissed;
    };
    let line = line.trim();
    if line.is_empty() {
        return Answer::Skipped;
    }
    let picked: Option<Vec<&str>> = line
        .split(',')
        .map(|n| {
            let n = n.trim().parse::<usize>().ok()?;
            labels.get(n.checked_sub(1)?).map(String::as_str)
        })
        .collect();
    match picked {
        Some(chosen) if !chosen.is_empty() => Answer::Given(chosen.join(", ")),
        _ => Answer::Given(line.to_string()),
    }
}

/// The lines that show a plan to approve.
pub fn describe_plan(title: &str, plan_path: &str, plan: &str, p: Palette) -> Vec<String> {
    let mut lines = vec![
        p.bold(&format!("? {}", one_line(title))),
        p.dim(&format!("  {}", one_line(plan_path))),
    ];
    lines.extend(for_terminal(plan).lines().map(|l| format!("  │ {l}")));
    lines
}

/// Approves the plan (choosing how edits are approved next) or rejects it with
/// feedback, as gemini-cli's payload; Esc dismisses (a cancel).
pub fn approve_plan(
    p: Palette,
    quiet: &TurnMode,
    ask_line: &mut dyn FnMut(&str) -> Option<String>,
) -> ApprovalDecision {
    let menu = vec![
        (
            Choice::Session,
            "Yes, and apply edits without asking (auto_edit)".to_string(),
        ),
        (
            Choice::Once,
            "Yes, and ask before each edit (default)".to_string(),
        ),
        (
            Choice::No,
            "No, keep planning (tell the model what to change)".to_string(),
        ),
    ];
    let approved = |mode: &str| ApprovalDecision::Answered {
        payload: json!({"approved": true, "approvalMode": mode}),
    };
    match choose(&menu, p) {
        Choice::Session => approved("auto_edit"),
        Choice::Once => approved("default"),
        Choice::No => {
            let feedback = typed("What should change in the plan? ", quiet, ask_line);
            ApprovalDecision::Answered {
                payload: json!({"approved": false, "feedback": feedback.unwrap_or_default()}),
            }
        }
        _ => ApprovalDecision::Cancel { feedback: None },
    }
}
