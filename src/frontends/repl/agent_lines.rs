//! How the REPL shows subagents: a line when one is queued or starts, its tool calls
//! (dimmed, under its id), a line when it ends with how and what it used, and the
//! `/agents` table.

use super::session_link::SessionLink;
use super::terminal::Palette;
use crate::engine::sanitize::one_line;
use crate::protocol::{AgentRow, AgentState, AgentStep, AgentUpdate, CallStatus, UiEvent};
use crate::protocol::{Op, OpReply};

/// The subagents still queued or running, as the spinner shows them under its line.
#[derive(Debug, Default)]
pub struct LiveAgents {
    agents: Vec<LiveAgent>,
}

#[derive(Debug)]
struct LiveAgent {
    id: String,
    name: String,
    running: bool,
    tool: Option<String>,
    turns: u32,
    started: std::time::Instant,
}

/// The most subagents the live view lists (the rest are counted).
const LIVE_LINES: usize = 8;

impl LiveAgents {
    /// Follows one update of the tree.
    pub fn note(&mut self, update: &AgentUpdate) {
        let position = self.agents.iter().position(|a| a.id == update.agent_id);
        match (&update.what, position) {
            (AgentStep::Queued { .. } | AgentStep::Started, None) => self.agents.push(LiveAgent {
                id: update.agent_id.clone(),
                name: update.name.clone(),
                running: matches!(update.what, AgentStep::Started),
                tool: None,
                turns: 0,
                started: std::time::Instant::now(),
            }),
            (AgentStep::Finished(_), Some(i)) => {
                self.agents.remove(i);
            }
            (AgentStep::Started, Some(i)) => {
                self.agents[i].running = true;
                self.agents[i].started = std::time::Instant::now();
            }
            (AgentStep::Event(event), Some(i)) => {
                let agent = &mut self.agents[i];
                match event.as_ref() {
                    UiEvent::ModelRequest { .. } => agent.turns += 1,
                    UiEvent::ToolCallRequested { name, .. } => agent.tool = Some(name.clone()),
                    UiEvent::ToolCallCompleted(_) => agent.tool = None,
                    _ => {}
                }
            }
            _ => {}
        }
    }

    /// One line per subagent still queued or running: id, state, current tool, turns,
    /// elapsed; empty when none is.
    pub fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .agents
            .iter()
            .take(LIVE_LINES)
            .map(|a| {
                let state = match (a.running, &a.tool) {
                    (false, _) => "queued".to_string(),
                    (true, Some(tool)) => format!("running {}", one_line(tool)),
                    (true, None) => "thinking".to_string(),
                };
                format!(
                    "  {} ({}) · {state} · {} turns · {} s",
                    a.id,
                    a.name,
                    a.turns,
                    a.started.elapsed().as_secs()
                )
            })
            .collect();
        if self.agents.len() > LIVE_LINES {
            lines.push(format!(
                "  … and {} more (/agents lists them)",
                self.agents.len() - LIVE_LINES
            ));
        }
        lines
    }
}

/// The transcript lines of one subagent update.
pub fn agent_lines(update: &AgentUpdate, p: Palette) -> Vec<String> {
    let who = format!("{} ({})", update.agent_id, update.name);
    let line = match &update.what {
        AgentStep::Queued { running, .. } => p.dim(&format!(
            "  ◇ {who} queued: {running} subagents are running (agents.max_concurrent)"
        )),
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
                // The tool's name is the model's: shown through the sanitiser.
                p.dim(&format!(
                    "    {mark} {} · {}",
                    update.agent_id,
                    one_line(&call.name)
                ))
            }
            _ => return Vec::new(),
        },
    };
    vec![line]
}

/// `/agents`: the subagents of the session so far. (Stopping one while it runs,
/// `Op::CancelAgent`, needs keys read during a turn, which the REPL does not do yet:
/// there Ctrl+C stops the turn and every subagent.)
pub fn agents_command(link: &SessionLink, args: &[&str], p: Palette) -> Vec<String> {
    match args {
        [] | ["list"] => match link.request(Op::ListAgents) {
            Ok(OpReply::Agents(rows)) => agents_table(&rows, p),
            Ok(_) => vec![p.red("unexpected answer to the agents listing")],
            Err(e) => vec![p.red(&e.to_string())],
        },
        _ => vec![p.red("usage: /agents")],
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
        let tool = one_line(r.current_tool.as_deref().unwrap_or("-"));
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
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::AgentTotals;

    fn update(id: &str, what: AgentStep) -> AgentUpdate {
        AgentUpdate {
            agent_id: id.into(),
            parent_id: "main".into(),
            name: "generalist".into(),
            call_id: "c".into(),
            what,
        }
    }

    #[test]
    fn the_live_view_follows_each_subagent_from_queued_to_its_end() {
        let mut live = LiveAgents::default();
        live.note(&update("generalist-1", AgentStep::Started));
        live.note(&update(
            "generalist-2",
            AgentStep::Queued {
                prompt: "p".into(),
                running: 1,
            },
        ));
        let call = UiEvent::ToolCallRequested {
            call_id: "x".into(),
            name: "read_file".into(),
            args: crate::protocol::content::CallArgs::new(serde_json::json!({})),
        };
        live.note(&update(
            "generalist-1",
            AgentStep::Event(Box::new(UiEvent::ModelRequest { round: 0 })),
        ));
        live.note(&update("generalist-1", AgentStep::Event(Box::new(call))));
        let lines = live.lines();
        assert!(
            lines[0].starts_with("  generalist-1 (generalist) · running read_file · 1 turns"),
            "{lines:?}"
        );
        assert!(
            lines[1].starts_with("  generalist-2 (generalist) · queued"),
            "{lines:?}"
        );
        live.note(&update(
            "generalist-1",
            AgentStep::Finished(AgentTotals::default()),
        ));
        assert_eq!(live.lines().len(), 1);
    }
}

#[cfg(test)]
mod sanitised {
    use super::*;

    #[test]
    fn a_tool_name_the_model_chose_draws_no_escape_sequence() {
        let call = UiEvent::ToolCallRequested {
            call_id: "x".into(),
            name: "evil\u{1b}]52;c;AAAA\u{7}".into(),
            args: crate::protocol::content::CallArgs::new(serde_json::json!({})),
        };
        let mut live = LiveAgents::default();
        let update = |what| AgentUpdate {
            agent_id: "generalist-1".into(),
            parent_id: "main".into(),
            name: "generalist".into(),
            call_id: "c".into(),
            what,
        };
        live.note(&update(AgentStep::Started));
        live.note(&update(AgentStep::Event(Box::new(call))));
        assert!(
            live.lines().iter().all(|l| !l.contains('\u{1b}')),
            "{:?}",
            live.lines()
        );
    }
}
