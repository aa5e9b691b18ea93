//! How the REPL shows subagents: a line when one is queued or starts, its tool calls
//! (dimmed, under its id), a line when it ends with how and what it used, and the
//! `/agents` table.

use super::session_link::SessionLink;
use super::terminal::Palette;
use crate::engine::sanitize::for_terminal;
use crate::protocol::{AgentRow, AgentState, AgentStep, AgentUpdate, CallStatus, UiEvent};
use crate::protocol::{Op, OpReply};

/// The transcript lines of one subagent update.
pub fn agent_lines(update: &AgentUpdate, p: Palette) -> Vec<String> {
    let who = format!("{} ({})", update.agent_id, update.name);
    let line = match &update.what {
        AgentStep::Queued { .. } => p.dim(&format!("  ◇ {who} queued")),
        AgentStep::Started => p.cyan(&format!("  ◆ {who} started")),
        AgentStep::Finished(t) => {
            let text = format!(
                "  ◆ {who} {} · {} turns · {} tool calls · {} tokens · {:.1} s",
                t.reason,
                t.turns,
                t.tool_calls,
                t.tokens,
                t.elapsed_ms as f64 / 1000.0
            );
            match t.reason.as_str() {
                "GOAL" => p.green(&text),
                "ABORTED" => p.yellow(&text),
                _ => p.red(&text),
            }
        }
        AgentStep::Event(event) => match event.as_ref() {
            UiEvent::ToolCallCompleted(call) => {
                let mark = match call.status {
                    CallStatus::Success => "✓",
                    CallStatus::Cancelled => "⊘",
                    _ => "✗",
                };
                p.dim(&format!("    {mark} {} · {}", update.agent_id, call.name))
            }
            _ => return Vec::new(),
        },
    };
    vec![for_terminal(&line).into_owned()]
}

/// `/agents` (the table) and `/agents cancel N`.
pub fn agents_command(link: &SessionLink, args: &[&str], p: Palette) -> Vec<String> {
    match args {
        [] | ["list"] => match link.request(Op::ListAgents) {
            Ok(OpReply::Agents(rows)) => agents_table(&rows, p),
            Ok(_) => vec![p.red("unexpected answer to the agents listing")],
            Err(e) => vec![p.red(&e.to_string())],
        },
        ["cancel", n] => match n.parse::<u64>() {
            Ok(n) => match link.request(Op::CancelAgent(n)) {
                Ok(_) => vec![p.yellow(&format!(
                    "  Stopping subagent {n}: its call answers ABORTED."
                ))],
                Err(e) => vec![p.red(&e.to_string())],
            },
            Err(_) => vec![p.red(&format!("not a subagent number: {n} (/agents lists them)"))],
        },
        _ => vec![p.red("usage: /agents [cancel N]")],
    }
}

/// `/agents`: one line per subagent of the session's tree.
pub fn agents_table(rows: &[AgentRow], p: Palette) -> Vec<String> {
    if rows.is_empty() {
        return vec![p.dim("  No subagents have run in this session.")];
    }
    let mut lines = vec![p.bold(
        "  #   agent                      state      tool               turns  tokens   elapsed",
    )];
    for r in rows {
        let state = match &r.state {
            AgentState::Queued => "queued".to_string(),
            AgentState::Running => "running".to_string(),
            AgentState::Finished(reason) => reason.to_lowercase(),
        };
        let tool = r.current_tool.as_deref().unwrap_or("-");
        lines.push(format!(
            "  {:<3} {:<26} {:<10} {:<18} {:>5}  {:>7}  {:>6.1} s",
            r.number,
            format!("{} ({})", r.agent_id, r.name),
            state,
            tool,
            r.turns,
            r.tokens,
            r.elapsed_ms as f64 / 1000.0
        ));
    }
    lines.push(p.dim("  /agents cancel N stops one subagent (its call answers ABORTED)."));
    lines
}
