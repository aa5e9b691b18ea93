//! One turn in the REPL: the prompt goes to the Chat actor, and until the turn ends the
//! REPL thread prints events above a spinner, answers confirmations, and turns Ctrl+C
//! (SIGINT, delivered by the signal handler) into `CancelTurn`.

use std::io::Write;
use std::time::{Duration, Instant};

use crossbeam_channel::{select, Receiver};

use crate::protocol::{ApprovalDecision, Op, TurnOutcome, UiEvent, CHAT_STOPPED};

use super::bridge::FrontMsg;
use super::confirm::{confirm, ConfirmContext};
use super::input::LineEditor;
use super::render::{Activity, EventRenderer, LARGE_BATCH};
use super::terminal::{fit, width, Palette, TurnMode};
use super::SessionLink;

/// How long the REPL waits for a cancelled turn to wind down before giving the prompt
/// back anyway.
const CANCEL_WAIT: Duration = Duration::from_secs(5);

const WINDING_DOWN: &str =
    "The cancelled turn is still winding down; its last events will appear above the prompt.";

const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// The status line under the transcript while a turn runs.
struct Spinner {
    enabled: bool,
    shown: bool,
    frame: usize,
    started: Instant,
}

impl Spinner {
    fn draw(&mut self, activity: &Activity, agents: &[String], p: Palette) {
        if !self.enabled {
            return;
        }
        self.frame = (self.frame + 1) % FRAMES.len();
        let what = match activity {
            Activity::Thinking => "Thinking…".to_string(),
            Activity::Waiting(what) => format!("{}…", what.describe()),
            Activity::Cancelling => "Cancelling…".to_string(),
            Activity::Tools {
                running,
                done,
                total,
            } if *total > LARGE_BATCH || *running > 1 => {
                format!("Running tools: {running} running / {done} done of {total}")
            }
            Activity::Tools { .. } => "Running tool…".to_string(),
        };
        let secs = self.started.elapsed().as_secs();
        // One line, never wrapped, so `\r` + clear-line erases all of it.
        let status = fit(
            &format!("{what} ({secs}s · Ctrl+C to cancel)"),
            width().saturating_sub(3),
        );
        let mut out = std::io::stdout();
        let _ = write!(
            out,
            "\r\x1b[J{} {}",
            p.cyan(FRAMES[self.frame]),
            p.dim(&status)
        );
        // The running subagents, a line each under the spinner; the cursor goes back
        // to the spinner's line, so one clear to the end of the screen erases all.
        for line in agents {
            let _ = write!(
                out,
                "\n\x1b[K{}",
                p.dim(&fit(line, width().saturating_sub(1)))
            );
        }
        if !agents.is_empty() {
            let _ = write!(out, "\x1b[{}A\r", agents.len());
        }
        let _ = out.flush();
        self.shown = true;
    }

    fn clear(&mut self) {
        if self.shown {
            let mut out = std::io::stdout();
            let _ = write!(out, "\r\x1b[J");
            let _ = out.flush();
            self.shown = false;
        }
    }
}

/// The parts of the REPL a turn uses.
pub struct TurnParts<'a> {
    pub editor: &'a mut LineEditor,
    pub link: &'a SessionLink,
    pub events: &'a Receiver<FrontMsg>,
    pub sigint: &'a Receiver<()>,
    pub palette: Palette,
    pub spinner: bool,
}

/// Runs one prompt to the end of its turn (or until a cancelled turn is given up on);
/// `model_parts` (the prompt with its `@path` content) go to the model instead of the
/// bare text when given. Returns true when the turn ended because
/// the Chat actor (or every actor) stopped.
pub fn run_turn_with(
    parts: TurnParts<'_>,
    prompt: String,
    model_parts: Option<Vec<crate::protocol::content::Part>>,
) -> bool {
    let TurnParts {
        editor,
        link,
        events,
        sigint,
        palette: p,
        spinner,
    } = parts;
    let quiet = TurnMode::enter();
    while sigint.try_recv().is_ok() {}
    link.handle.submit(Op::UserTurn {
        text: prompt,
        parts: model_parts.unwrap_or_default(),
    });
    let mut turn = TurnView {
        renderer: EventRenderer::new(p),
        spinner: Spinner {
            enabled: spinner,
            shown: false,
            frame: 0,
            started: Instant::now(),
        },
        cancelled_at: None,
        failed: false,
        palette: p,
    };
    let context = ConfirmContext {
        palette: p,
        saved_to: link.user_config_label(),
        workspace: &link.workspace,
    };
    loop {
        let step = select! {
            recv(events) -> msg => match msg {
                Ok(FrontMsg::Event(event)) => turn.on_event(&event),
                Ok(FrontMsg::Approval { id, request }) => {
                    turn.spinner.clear();
                    let decision = if turn.cancelled_at.is_some() {
                        ApprovalDecision::Cancel { feedback: None }
                    } else {
                        let mut ask = |question: &str| editor.readline(question).ok();
                        confirm(&request, &context, &quiet, &mut ask)
                    };
                    link.handle.submit(Op::Decide { id, decision });
                    Step::Goes
                }
                Err(_) => turn.actors_gone(),
            },
            recv(sigint) -> _ => turn.on_sigint(link),
            default(Duration::from_millis(100)) => Step::Goes,
        };
        if step == Step::Ends || turn.given_up() {
            break;
        }
        let agents = turn.renderer.live_agents();
        turn.spinner.draw(turn.renderer.activity(), &agents, p);
    }
    turn.spinner.clear();
    let mut out = std::io::stdout();
    let _ = out.flush();
    drop(quiet);
    if let Some(Err(e)) = link.sync_saved() {
        let _ = writeln!(
            out,
            "{}",
            p.red(&format!("Could not save the allow rule: {e}"))
        );
    }
    turn.failed
}

/// Whether the turn's loop goes on.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    Goes,
    Ends,
}

/// What the REPL shows of a running turn.
struct TurnView {
    renderer: EventRenderer,
    spinner: Spinner,
    /// When Ctrl+C cancelled the turn.
    cancelled_at: Option<Instant>,
    /// The turn ended because the Chat actor stopped.
    failed: bool,
    palette: Palette,
}

impl TurnView {
    /// Prints what `event` adds to the transcript; ends at the end of the turn.
    fn on_event(&mut self, event: &UiEvent) -> Step {
        let finished = matches!(event, UiEvent::TurnFinished(_));
        self.failed |= matches!(event, UiEvent::TurnFinished(TurnOutcome::Failed { message })
            if message == CHAT_STOPPED);
        let lines = self.renderer.render(event);
        if !lines.is_empty() {
            self.spinner.clear();
            say(&lines.join("\n"));
        }
        if finished {
            Step::Ends
        } else {
            Step::Goes
        }
    }

    /// The event stream ended: the session's actors are gone.
    fn actors_gone(&mut self) -> Step {
        self.spinner.clear();
        say(&self.palette.red("The session's actors have stopped."));
        self.failed = true;
        Step::Ends
    }

    /// Ctrl+C: the first cancels the turn, a second stops waiting for it to wind down.
    fn on_sigint(&mut self, link: &SessionLink) -> Step {
        if self.cancelled_at.is_none() {
            link.handle.submit(Op::Cancel);
            self.cancelled_at = Some(Instant::now());
            self.renderer.cancelling();
            return Step::Goes;
        }
        self.spinner.clear();
        say(&self.palette.yellow(WINDING_DOWN));
        Step::Ends
    }

    /// Whether a cancelled turn took too long to wind down (said on screen).
    fn given_up(&mut self) -> bool {
        let late = self.cancelled_at.is_some_and(|t| t.elapsed() > CANCEL_WAIT);
        if late {
            self.spinner.clear();
            say(&self.palette.yellow(WINDING_DOWN));
        }
        late
    }
}

/// Prints one line of the transcript (a closed stdout is not an error here).
fn say(text: &str) {
    let _ = writeln!(std::io::stdout(), "{text}");
}
