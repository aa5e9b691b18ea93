//! One turn in the REPL: the prompt goes to the Chat actor, and until the turn ends the
//! REPL thread prints events above a spinner, answers confirmations, and turns Ctrl+C
//! (SIGINT, delivered by the signal handler) into `CancelTurn`.

use std::io::Write;
use std::time::{Duration, Instant};

use crossbeam_channel::{select, Receiver};

use crate::protocol::{ApprovalDecision, CancelTurn, TurnOutcome, UiEvent, UserInput, UserParts};

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
    fn draw(&mut self, activity: &Activity, p: Palette) {
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
            "\r\x1b[K{} {}",
            p.cyan(FRAMES[self.frame]),
            p.dim(&status)
        );
        let _ = out.flush();
        self.shown = true;
    }

    fn clear(&mut self) {
        if self.shown {
            let mut out = std::io::stdout();
            let _ = write!(out, "\r\x1b[K");
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
    match model_parts {
        Some(parts) => link.chat.do_send(UserParts {
            text: prompt,
            parts,
        }),
        None => link.chat.do_send(UserInput { text: prompt }),
    }
    let mut renderer = EventRenderer::new(p);
    let mut spinner = Spinner {
        enabled: spinner,
        shown: false,
        frame: 0,
        started: Instant::now(),
    };
    let mut cancelled_at: Option<Instant> = None;
    // The turn ended because the Chat actor stopped.
    let mut failed = false;
    let context = ConfirmContext {
        palette: p,
        saved_to: link.user_config_label(),
        workspace: &link.workspace,
    };
    let mut out = std::io::stdout();
    loop {
        select! {
            recv(events) -> msg => match msg {
                Ok(FrontMsg::Event(event)) => {
                    let finished = matches!(event, UiEvent::TurnFinished(_));
                    failed |= matches!(&event, UiEvent::TurnFinished(TurnOutcome::Failed { message })
                        if message == crate::actors::chat::CHAT_STOPPED);
                    let lines = renderer.render(&event);
                    if !lines.is_empty() {
                        spinner.clear();
                        let _ = writeln!(out, "{}", lines.join("\n"));
                    }
                    if finished {
                        break;
                    }
                }
                Ok(FrontMsg::Approval { request, reply }) => {
                    spinner.clear();
                    let decision = if cancelled_at.is_some() {
                        ApprovalDecision::Cancel { feedback: None }
                    } else {
                        let mut ask = |question: &str| editor.readline(question).ok();
                        confirm(&request, &context, &quiet, &mut ask)
                    };
                    let _ = reply.send(decision);
                }
                Err(_) => {
                    spinner.clear();
                    let _ = writeln!(out, "{}", p.red("The session's actors have stopped."));
                    failed = true;
                    break;
                }
            },
            recv(sigint) -> _ => {
                if cancelled_at.is_none() {
                    link.chat.do_send(CancelTurn);
                    cancelled_at = Some(Instant::now());
                    renderer.cancelling();
                } else {
                    // A second Ctrl+C: stop waiting for the turn to wind down.
                    spinner.clear();
                    let _ = writeln!(out, "{}", p.yellow(WINDING_DOWN));
                    break;
                }
            },
            default(Duration::from_millis(100)) => {}
        }
        if cancelled_at.is_some_and(|t| t.elapsed() > CANCEL_WAIT) {
            spinner.clear();
            let _ = writeln!(out, "{}", p.yellow(WINDING_DOWN));
            break;
        }
        spinner.draw(renderer.activity(), p);
    }
    spinner.clear();
    let _ = out.flush();
    drop(quiet);
    if let Some(Err(e)) = link.sync_saved() {
        let _ = writeln!(
            out,
            "{}",
            p.red(&format!("Could not save the allow rule: {e}"))
        );
    }
    failed
}
