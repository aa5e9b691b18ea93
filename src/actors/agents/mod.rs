//! The Agents supervisor: the subagents of one session tree.
//!
//! An `invoke_agent` call reaches the session's [`launcher::TreeLauncher`], which
//! queues the subagent for a slot of the tree's pool (`agents.max_concurrent`: waiting,
//! never refused), starts its session (a Chat and a Scheduler of its own that share the
//! tree's tools, files, model client, MCP servers, approvals and ledger;
//! [`SessionHandle::start_child`](crate::actors::session::SessionHandle::start_child)),
//! drives it through its handle to its end ([`drive`]) and answers the call with its
//! report. Everything the subagent does reaches the main session's front end as
//! [`UiEvent::Agent`] updates. The [`AgentTree`] keeps the pool, the tree's token
//! budget and the table of agents that `/agents` lists (and `Op::CancelAgent` stops one of).

pub mod catalog;
mod drive;
pub mod launcher;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

pub use crate::protocol::{AgentRow, AgentState};
use crate::protocol::{AgentStep, AgentTotals, AgentUpdate, EventSink, UiEvent};

pub use catalog::AgentCatalog;

struct Entry {
    row: AgentRow,
    started: Instant,
    cancel: CancellationToken,
}

/// The subagents of one session tree, their pool and their budget.
pub struct AgentTree {
    /// The main session's id (the `parent_id` of its own subagents).
    pub root_id: String,
    /// The pool of each level of the tree (the main session's subagents, theirs, …):
    /// a subagent waiting for its own subagents holds its slot, so levels never share
    /// one (they would deadlock when every slot is held by a waiting parent).
    pools: Mutex<Vec<Arc<Semaphore>>>,
    pub max_concurrent: usize,
    pub max_depth: u32,
    pub max_per_turn: usize,
    pub token_budget: u64,
    tokens: AtomicU64,
    /// Cancelled once the token budget is spent.
    budget_spent: CancellationToken,
    next: AtomicU64,
    agents: Mutex<Vec<Entry>>,
    /// The main session's event stream: every subagent's updates go there.
    events: EventSink,
}

impl AgentTree {
    pub fn new(
        root_id: String,
        settings: &crate::settings::AgentSettings,
        events: EventSink,
    ) -> Self {
        let max_concurrent = settings.max_concurrent.max(1);
        Self {
            root_id,
            pools: Mutex::new(Vec::new()),
            max_concurrent,
            max_depth: settings.max_depth,
            max_per_turn: settings.max_per_turn,
            token_budget: settings.token_budget,
            tokens: AtomicU64::new(0),
            budget_spent: CancellationToken::new(),
            next: AtomicU64::new(1),
            agents: Mutex::new(Vec::new()),
            events,
        }
    }

    /// The pool of the subagents started by sessions at `depth` (0: the main one).
    fn pool(&self, depth: u32) -> Arc<Semaphore> {
        let mut pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        let level = depth as usize;
        while pools.len() <= level {
            pools.push(Arc::new(Semaphore::new(self.max_concurrent)));
        }
        pools[level].clone()
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        self.agents.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Enters a new subagent of `parent_id`, queued, unless that parent has as many
    /// queued or running as `agents.max_per_turn` allows; answers its row.
    fn enter_within(
        &self,
        name: &str,
        parent_id: &str,
        cancel: CancellationToken,
    ) -> Option<AgentRow> {
        let mut table = self.table();
        if self.max_per_turn > 0 {
            let rows = table.iter().map(|e| &e.row);
            let outstanding = rows
                .filter(|r| r.parent_id == parent_id && !matches!(r.state, AgentState::Finished(_)))
                .count();
            if outstanding >= self.max_per_turn {
                return None;
            }
        }
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        let row = AgentRow {
            number,
            agent_id: format!("{name}-{number}"),
            parent_id: parent_id.to_string(),
            name: name.to_string(),
            state: AgentState::Queued,
            current_tool: None,
            turns: 0,
            tokens: 0,
            elapsed_ms: 0,
        };
        table.push(Entry {
            row: row.clone(),
            started: Instant::now(),
            cancel,
        });
        Some(row)
    }

    fn update(&self, number: u64, change: impl FnOnce(&mut AgentRow)) {
        if let Some(entry) = self.table().iter_mut().find(|e| e.row.number == number) {
            change(&mut entry.row);
        }
    }

    /// Counts `tokens` against the tree's budget; true once it is spent.
    fn spend(&self, tokens: u64) -> bool {
        let total = self.tokens.fetch_add(tokens, Ordering::Relaxed) + tokens;
        let spent = self.token_budget > 0 && total >= self.token_budget;
        if spent {
            self.budget_spent.cancel();
        }
        spent
    }

    /// The tree's subagents as they are now, in the order they were started.
    pub fn rows(&self) -> Vec<AgentRow> {
        let table = self.table();
        table
            .iter()
            .map(|e| {
                let mut row = e.row.clone();
                if !matches!(row.state, AgentState::Finished(_)) {
                    row.elapsed_ms = e.started.elapsed().as_millis() as u64;
                }
                row
            })
            .collect()
    }

    /// Ends subagent `number` (its call answers `ABORTED`); false when there is no
    /// such subagent still running or queued.
    pub fn cancel(&self, number: u64) -> bool {
        let table = self.table();
        match table.iter().find(|e| e.row.number == number) {
            Some(e) if !matches!(e.row.state, AgentState::Finished(_)) => {
                e.cancel.cancel();
                true
            }
            _ => false,
        }
    }

    /// Tells the main session's front end what a subagent did.
    fn tell(&self, row: &AgentRow, call_id: &str, what: AgentStep) {
        self.events.do_send(UiEvent::Agent(Arc::new(AgentUpdate {
            agent_id: row.agent_id.clone(),
            parent_id: row.parent_id.clone(),
            name: row.name.clone(),
            call_id: call_id.to_string(),
            what,
        })));
    }

    fn finished(&self, row: &AgentRow, call_id: &str, totals: AgentTotals) {
        self.update(row.number, |r| {
            r.state = AgentState::Finished(totals.reason.clone());
            r.current_tool = None;
            r.turns = totals.turns;
            r.tokens = totals.tokens;
            r.elapsed_ms = totals.elapsed_ms;
        });
        self.tell(row, call_id, AgentStep::Finished(totals));
    }
}
