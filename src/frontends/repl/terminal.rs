//! Terminal plumbing: whether colours are on, ANSI styles, and the mode the terminal is
//! kept in while a turn runs (no echo, no line buffering, signals still on — so Ctrl+C
//! still raises SIGINT while typed keys wait for the next prompt instead of garbling
//! the output).

use std::io::IsTerminal;
use std::os::fd::AsFd;

use anstyle::{AnsiColor, Style};
use nix::sys::termios::{self, LocalFlags, SetArg, Termios};

/// Colours for the transcript; every method returns plain text when colours are off.
#[derive(Debug, Clone, Copy)]
pub struct Palette {
    pub color: bool,
}

impl Palette {
    /// Colours when stdout is a terminal and `NO_COLOR` is unset or empty.
    pub fn detect() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Self {
            color: std::io::stdout().is_terminal() && !no_color,
        }
    }

    pub fn paint(&self, style: Style, text: &str) -> String {
        if self.color {
            format!("{}{text}{}", style.render(), style.render_reset())
        } else {
            text.to_string()
        }
    }

    pub fn dim(&self, text: &str) -> String {
        self.paint(Style::new().dimmed(), text)
    }
    pub fn bold(&self, text: &str) -> String {
        self.paint(Style::new().bold(), text)
    }
    pub fn red(&self, text: &str) -> String {
        self.paint(AnsiColor::Red.on_default(), text)
    }
    pub fn green(&self, text: &str) -> String {
        self.paint(AnsiColor::Green.on_default(), text)
    }
    pub fn yellow(&self, text: &str) -> String {
        self.paint(AnsiColor::Yellow.on_default(), text)
    }
    pub fn cyan(&self, text: &str) -> String {
        self.paint(AnsiColor::Cyan.on_default(), text)
    }
}

/// The terminal's width in columns (80 when unknown).
pub fn width() -> usize {
    crossterm::terminal::size()
        .map(|(cols, _)| usize::from(cols).max(20))
        .unwrap_or(80)
}

/// `text` cut to `room` characters, with `…` when cut.
pub fn fit(text: &str, room: usize) -> String {
    if text.chars().count() <= room {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(room.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// Keeps the terminal quiet while a turn runs; restores it when dropped.
pub struct TurnMode {
    saved: Option<Termios>,
}

impl TurnMode {
    /// Turns echo and canonical input off (signals stay on). A no-op off a terminal.
    pub fn enter() -> Self {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            return Self { saved: None };
        }
        let Ok(saved) = termios::tcgetattr(stdin.as_fd()) else {
            return Self { saved: None };
        };
        let mut quiet = saved.clone();
        quiet
            .local_flags
            .remove(LocalFlags::ECHO | LocalFlags::ICANON);
        quiet.local_flags.insert(LocalFlags::ISIG);
        if termios::tcsetattr(stdin.as_fd(), SetArg::TCSANOW, &quiet).is_err() {
            return Self { saved: None };
        }
        Self { saved: Some(saved) }
    }

    /// Gives the terminal back as it was (for an external editor or a question).
    pub fn suspend(&self) {
        if let Some(saved) = &self.saved {
            let _ = termios::tcsetattr(std::io::stdin().as_fd(), SetArg::TCSANOW, saved);
        }
    }

    /// Quiets the terminal again after [`suspend`](Self::suspend).
    pub fn resume(&self) {
        if let Some(saved) = &self.saved {
            let mut quiet = saved.clone();
            quiet
                .local_flags
                .remove(LocalFlags::ECHO | LocalFlags::ICANON);
            let _ = termios::tcsetattr(std::io::stdin().as_fd(), SetArg::TCSANOW, &quiet);
        }
    }
}

impl Drop for TurnMode {
    fn drop(&mut self) {
        self.suspend();
    }
}
