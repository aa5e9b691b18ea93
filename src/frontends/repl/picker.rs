//! A list to pick one entry from on the terminal (`/resume` without an argument):
//! ↑/↓ (or k/j) move, Enter takes the marked entry, a digit takes that entry, Esc or
//! Ctrl+C gives up. Off a terminal (or when raw mode is refused) nothing is asked.

use std::io::Write;
use std::time::Duration;

use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::{cursor, queue, terminal};

use super::terminal::Palette;

/// Shows `labels` (already sanitised), `initial` marked, and returns the index picked;
/// `None` when the user gave up or nothing can be asked here.
pub fn pick(labels: &[String], initial: usize, p: Palette) -> Option<usize> {
    use std::io::IsTerminal;
    if labels.is_empty() || !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return None;
    }
    if super::terminal::screen_reader() {
        return pick_by_line(labels);
    }
    if terminal::enable_raw_mode().is_err() {
        return None;
    }
    // Keys typed before the list appeared must not answer it.
    while event::poll(Duration::ZERO).unwrap_or(false) {
        let _ = event::read();
    }
    let mut selected = initial.min(labels.len() - 1);
    let mut typed = String::new();
    draw(labels, selected, p, false);
    let n = labels.len();
    let picked = loop {
        let Ok(Event::Key(KeyEvent {
            code,
            modifiers,
            kind: KeyEventKind::Press,
            ..
        })) = event::read()
        else {
            continue;
        };
        match code {
            KeyCode::Up | KeyCode::Char('k') => selected = (selected + n - 1) % n,
            KeyCode::Down | KeyCode::Char('j') => selected = (selected + 1) % n,
            KeyCode::Enter => break Some(selected),
            KeyCode::Esc => break None,
            KeyCode::Char('c') if modifiers.contains(KeyModifiers::CONTROL) => break None,
            KeyCode::Char(c) if c.is_ascii_digit() => {
                // Several digits pick past 9; one that can start no longer number
                // picks at once.
                typed.push(c);
                match typed.parse::<usize>() {
                    Ok(k) if (1..=n).contains(&k) => {
                        selected = k - 1;
                        if k * 10 > n {
                            draw(labels, selected, p, true);
                            break Some(selected);
                        }
                    }
                    _ => typed.clear(),
                }
            }
            _ => {}
        }
        draw(labels, selected, p, true);
    };
    let _ = terminal::disable_raw_mode();
    picked
}

fn draw(labels: &[String], selected: usize, p: Palette, redraw: bool) {
    let mut out = std::io::stdout();
    if redraw {
        let _ = queue!(out, cursor::MoveUp(labels.len() as u16));
    }
    for (i, label) in labels.iter().enumerate() {
        let line = if i == selected {
            p.cyan(&format!(" ❯ {}. {label}", i + 1))
        } else {
            format!("   {}. {label}", i + 1)
        };
        let _ = queue!(out, terminal::Clear(terminal::ClearType::CurrentLine));
        let _ = write!(out, "\r{line}\r\n");
    }
    let _ = out.flush();
}

/// The list as numbered lines and a typed answer (screen-reader output: nothing is
/// redrawn); an empty or unknown answer gives up.
fn pick_by_line(labels: &[String]) -> Option<usize> {
    use std::io::BufRead;
    let mut out = std::io::stdout();
    for (i, label) in labels.iter().enumerate() {
        let _ = writeln!(out, "   {}. {label}", i + 1);
    }
    let _ = write!(out, "Choose 1-{}: ", labels.len());
    let _ = out.flush();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).ok()?;
    let n: usize = line.trim().parse().ok()?;
    (1..=labels.len()).contains(&n).then(|| n - 1)
}
