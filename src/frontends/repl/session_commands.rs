//! Session commands of the REPL: `/resume [N|ID]`, `/chat save|resume|list|delete TAG`
//! (gemini-cli's tagged copies, `checkpoint-<tag>.json`), `/rewind [N]` and
//! `/restore [NAME]` (checkpoints). Texts follow gemini-cli's where it has them.

use std::path::PathBuf;
use std::sync::Mutex;

use serde_json::{json, Value};

use crate::actors::session::SessionOptions;
use crate::engine::history::curated;
use crate::engine::sanitize::one_line;
use crate::engine::text::iso8601;
use crate::platform::sessions::checkpoint::Checkpoints;
use crate::platform::sessions::plan::{open_existing, SessionPlan};
use crate::platform::sessions::{list_text, write_atomic, SessionStore};
use crate::protocol::content::{Content, Role};
use crate::protocol::{Op, OpError, OpReply};

use super::terminal::Palette;
use super::SessionLink;

/// What the REPL holds of the session on disk.
pub struct SessionParts {
    pub store: Option<SessionStore>,
    pub checkpoints: Option<Checkpoints>,
    /// The id of the session being recorded (changes with `/resume N`).
    pub current: Mutex<String>,
    resumed: Option<(String, usize, Vec<String>)>,
}

impl SessionParts {
    pub fn new(plan: Option<&SessionPlan>, options: &SessionOptions) -> Self {
        let store = plan.map(|p| p.store.clone());
        let checkpoints = store
            .as_ref()
            .filter(|_| options.settings.general.checkpointing)
            .map(|s| {
                Checkpoints::new(
                    &crate::settings::troupe_home(),
                    &s.slug,
                    options.workspace.primary(),
                    &s.project_dir,
                )
            });
        let resumed = plan.filter(|p| p.existing).map(|p| {
            let prompts = p
                .history
                .iter()
                .filter(|c| c.role == Role::User && !c.has_function_response())
                .map(Content::text)
                .collect();
            (p.session_id.clone(), p.history.len(), prompts)
        });
        Self {
            store,
            checkpoints,
            current: Mutex::new(String::new()),
            resumed,
        }
    }

    /// The line printed at start when a session was resumed.
    pub fn resumed_line(&self) -> Option<String> {
        let (id, turns, prompts) = self.resumed.as_ref()?;
        let last = prompts
            .last()
            .map(|p| format!(" Last prompt: {}", one_line(p)))
            .unwrap_or_default();
        Some(format!("Resumed session {id} ({turns} turns).{last}"))
    }

    fn current(&self) -> String {
        self.current.lock().map(|c| c.clone()).unwrap_or_default()
    }
}

/// Runs `/resume`, `/chat`, `/rewind` or `/restore`.
pub fn run(name: &str, args: &[&str], link: &SessionLink, p: Palette) -> Vec<String> {
    match (name, args) {
        ("resume", []) => pick_and_resume(link, p),
        ("resume" | "chat", ["save" | "resume" | "load" | "list" | "delete", ..])
        | ("chat", []) => chat(args, link, p),
        ("resume", [which]) => resume(which, link, p),
        ("rewind", []) => prompts(link, p),
        ("rewind", [n]) => rewind(n, link, p),
        ("restore", []) => checkpoints(link, p),
        ("restore", [checkpoint]) => restore(checkpoint, link, p),
        _ => vec![p.yellow(&format!("Usage: /{name} — see /help."))],
    }
}

fn list(link: &SessionLink, p: Palette) -> Vec<String> {
    let Some(store) = &link.sessions.store else {
        return vec![p.yellow("Sessions are not recorded (sessions.record = false).")];
    };
    let current = link.sessions.current();
    let mut out: Vec<String> = list_text(&store.list(), Some(&current))
        .trim_start_matches('\n')
        .lines()
        .map(str::to_string)
        .collect();
    out.push(p.dim("/resume N continues session N."));
    out
}

/// `/resume` alone: on a terminal, the list to pick from (arrows or the number, Enter,
/// Esc to keep the current session); elsewhere the list.
fn pick_and_resume(link: &SessionLink, p: Palette) -> Vec<String> {
    use std::io::IsTerminal;
    let interactive = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let Some(store) = link.sessions.store.as_ref().filter(|_| interactive) else {
        return list(link, p);
    };
    let sessions = store.list();
    if sessions.is_empty() {
        return list(link, p);
    }
    let current = link.sessions.current();
    let text = list_text(&sessions, Some(&current));
    // The newest session other than this one is marked first.
    let newest = sessions
        .iter()
        .rposition(|s| s.session_id != current)
        .unwrap_or(0);
    let mut lines = text.trim_start_matches('\n').lines();
    if let Some(header) = lines.next() {
        println!("{header}");
    }
    println!(
        "{}",
        p.dim("↑/↓ or the number to choose, Enter to resume, Esc to stay in this session")
    );
    // `  N. title (age) [id]` without the number, which the picker draws itself.
    let labels: Vec<String> = lines
        .map(|l| {
            let l = l.trim_start();
            l.split_once(". ").map_or(l, |(_, rest)| rest).to_string()
        })
        .collect();
    match super::picker::pick(&labels, newest, p) {
        Some(index) => resume(&(index + 1).to_string(), link, p),
        None => vec![p.dim("Staying in this session; /resume N continues session N.")],
    }
}

fn resume(which: &str, link: &SessionLink, p: Palette) -> Vec<String> {
    let Some(store) = &link.sessions.store else {
        return vec![p.yellow("Sessions are not recorded (sessions.record = false).")];
    };
    let info = match store.select(which) {
        Ok(info) => info,
        Err(e) => return e.to_string().lines().map(|l| p.red(l)).collect(),
    };
    if info.session_id == link.sessions.current() {
        return vec![p.dim("That is the current session.")];
    }
    let title = info.title.clone();
    let plan = match open_existing(store.clone(), info) {
        Ok(plan) => plan,
        Err(e) => return vec![p.red(&e.to_string())],
    };
    let mut out: Vec<String> = plan.warnings.iter().map(|w| p.yellow(w)).collect();
    let turns = plan.history.len();
    let switched = link.request(Op::SwitchSession {
        file: plan.file,
        session_id: plan.session_id.clone(),
        existing: true,
        repairs: plan.repairs,
        lock: std::sync::Arc::new(plan.lock),
    });
    // Not recorded (`sessions.record = false`): the history is taken all the same.
    let switched = match switched {
        Err(OpError::Unavailable { .. }) => Ok(OpReply::Done),
        other => other,
    };
    if let Err(e) = switched.and_then(|_| link.request(Op::SeedHistory(plan.history))) {
        return vec![p.red(&e.to_string())];
    }
    if let Ok(mut current) = link.sessions.current.lock() {
        current.clone_from(&plan.session_id);
    }
    out.push(format!(
        "Resumed session {} ({turns} turns): {}",
        plan.session_id,
        one_line(&title)
    ));
    out
}

fn history(link: &SessionLink) -> Result<Vec<Content>, String> {
    match link.request(Op::GetHistory) {
        Ok(OpReply::History(history)) => Ok(history),
        Ok(_) => Ok(Vec::new()),
        Err(e) => Err(format!("The chat is unavailable: {e}")),
    }
}

/// Replaces the history (recorded); the error to show when the session refused.
fn set_history(link: &SessionLink, history: Vec<Content>) -> Option<String> {
    link.request(Op::SetHistory(history))
        .err()
        .map(|e| e.to_string())
}

/// `checkpoint-<encodeURIComponent(tag)>.json` in the project's temp dir.
fn tag_file(link: &SessionLink, tag: &str) -> Option<PathBuf> {
    let store = link.sessions.store.as_ref()?;
    Some(
        store
            .project_dir
            .join(format!("checkpoint-{}.json", encode_uri_component(tag))),
    )
}

fn chat(args: &[&str], link: &SessionLink, p: Palette) -> Vec<String> {
    let sub = args.first().copied().unwrap_or("");
    let tag = args.get(1..).unwrap_or(&[]).join(" ");
    if matches!(sub, "save" | "resume" | "load" | "delete") && tag.is_empty() {
        return vec![p.yellow(&format!("Missing tag. Usage: /chat {sub} <tag>"))];
    }
    match sub {
        "save" => {
            let Some(file) = tag_file(link, &tag) else {
                return vec![p.yellow("Sessions are not recorded (sessions.record = false).")];
            };
            let history = match history(link) {
                Ok(h) => curated(&h),
                Err(e) => return vec![p.red(&e)],
            };
            if history.is_empty() {
                return vec!["No conversation found to save.".into()];
            }
            let body = json!({"history": history, "authType": "gemini-api-key"});
            match write_atomic(&file, body.to_string().as_bytes()) {
                Ok(()) => vec![format!("Conversation checkpoint saved with tag: {tag}.")],
                Err(e) => vec![p.red(&e.to_string())],
            }
        }
        "resume" | "load" => {
            let Some(file) = tag_file(link, &tag) else {
                return vec![p.yellow("Sessions are not recorded (sessions.record = false).")];
            };
            let saved = std::fs::read_to_string(&file)
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .and_then(|v| serde_json::from_value::<Vec<Content>>(v["history"].clone()).ok());
            let Some(history) = saved else {
                return vec![format!("No saved checkpoint found with tag: {tag}.")];
            };
            let turns = history.len();
            if let Some(e) = set_history(link, history) {
                return vec![p.red(&e)];
            }
            vec![format!(
                "Resumed the conversation saved as {tag} ({turns} turns)."
            )]
        }
        "delete" => match tag_file(link, &tag).map(std::fs::remove_file) {
            Some(Ok(())) => vec![format!("Conversation checkpoint '{tag}' has been deleted.")],
            _ => vec![format!("Error: No checkpoint found with tag '{tag}'.")],
        },
        _ => tags(link),
    }
}

fn tags(link: &SessionLink) -> Vec<String> {
    let Some(store) = &link.sessions.store else {
        return vec!["No saved conversation checkpoints found.".into()];
    };
    let mut found: Vec<(std::time::SystemTime, String)> = std::fs::read_dir(&store.project_dir)
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let tag = name
                        .strip_prefix("checkpoint-")?
                        .strip_suffix(".json")?
                        .to_string();
                    let modified = e.metadata().and_then(|m| m.modified()).ok()?;
                    Some((modified, decode_uri_component(&tag)))
                })
                .collect()
        })
        .unwrap_or_default();
    if found.is_empty() {
        return vec!["No saved conversation checkpoints found.".into()];
    }
    found.sort();
    let mut out = vec!["List of saved conversations:".to_string(), String::new()];
    for (modified, tag) in found {
        let when = iso8601(modified);
        out.push(format!("  - {tag} ({} {})", &when[..10], &when[11..19]));
    }
    out.push(String::new());
    out.push("Note: Newest last, oldest first".into());
    out
}

/// The user's prompts in the history: (index in history, text).
fn user_prompts(history: &[Content]) -> Vec<(usize, String)> {
    history
        .iter()
        .enumerate()
        .filter(|(_, c)| c.role == Role::User && !c.has_function_response())
        .map(|(i, c)| (i, c.text()))
        .collect()
}

fn prompts(link: &SessionLink, p: Palette) -> Vec<String> {
    let history = match history(link) {
        Ok(h) => h,
        Err(e) => return vec![p.red(&e)],
    };
    let prompts = user_prompts(&history);
    if prompts.is_empty() {
        return vec!["Nothing to rewind.".into()];
    }
    let mut out = vec!["Your prompts:".to_string()];
    for (n, (_, text)) in prompts.iter().enumerate() {
        let first = one_line(text.lines().next().unwrap_or(""));
        out.push(format!(
            "  {}. {}",
            n + 1,
            super::terminal::fit(&first, 100)
        ));
    }
    out.push(p.dim("/rewind N drops prompt N and everything after it."));
    out
}

fn rewind(n: &str, link: &SessionLink, p: Palette) -> Vec<String> {
    let mut history = match history(link) {
        Ok(h) => h,
        Err(e) => return vec![p.red(&e)],
    };
    let prompts = user_prompts(&history);
    let Some((at, text)) = n
        .parse::<usize>()
        .ok()
        .filter(|n| *n >= 1)
        .and_then(|n| prompts.get(n - 1).cloned())
    else {
        return vec![p.yellow(&format!("There is no prompt {n}; /rewind lists them."))];
    };
    history.truncate(at);
    if let Some(e) = set_history(link, history) {
        return vec![p.red(&e)];
    }
    let mut out = vec![format!("Rewound to before: {}", one_line(&text))];
    if link.sessions.checkpoints.is_some() {
        out.push(p.dim("Files are unchanged; /restore lists checkpoints to put them back."));
    }
    out
}

fn checkpoints(link: &SessionLink, p: Palette) -> Vec<String> {
    let Some(checkpoints) = &link.sessions.checkpoints else {
        return vec![p.yellow(
            "Checkpointing is off: turn it on with --checkpointing or general.checkpointing = true.",
        )];
    };
    let names = checkpoints.list();
    if names.is_empty() {
        return vec!["No restorable tool calls found.".into()];
    }
    let mut out = vec![
        "Available tool calls to restore:".to_string(),
        String::new(),
    ];
    out.extend(names);
    out
}

fn restore(name: &str, link: &SessionLink, p: Palette) -> Vec<String> {
    let Some(checkpoints) = &link.sessions.checkpoints else {
        return checkpoints_off(p);
    };
    match checkpoints.restore(name) {
        Ok(history) => {
            if let Some(e) = set_history(link, history) {
                return vec![p.red(&e)];
            }
            vec!["Restored project to the state before the tool call.".into()]
        }
        Err(e) => vec![p.red(&e.to_string())],
    }
}

fn checkpoints_off(p: Palette) -> Vec<String> {
    vec![p.yellow(
        "Checkpointing is off: turn it on with --checkpointing or general.checkpointing = true.",
    )]
}

/// JavaScript's `encodeURIComponent`.
pub fn encode_uri_component(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The inverse of [`encode_uri_component`] (invalid escapes kept as they are).
pub fn decode_uri_component(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(b) = u8::from_str_radix(&text[i + 1..i + 3], 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_encoded_like_encode_uri_component() {
        assert_eq!(encode_uri_component("my tag"), "my%20tag");
        assert_eq!(encode_uri_component("a/b"), "a%2Fb");
        assert_eq!(decode_uri_component("my%20tag"), "my tag");
        assert_eq!(decode_uri_component("%E4%BD%A0"), "你");
    }
}
