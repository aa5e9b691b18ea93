//! Terminal plumbing: whether colours are on, ANSI styles, and the mode the terminal is
//! kept in while a turn runs (no echo, no line buffering, signals still on — so Ctrl+C
//! still raises SIGINT while typed keys wait for the next prompt instead of garbling
//! the output).

use std::io::IsTerminal;
use std::os::fd::AsFd;

use anstyle::{AnsiColor, Style};
use nix::sys::termios::{self, LocalFlags, SetArg, Termios};

/// The colour themes `/theme` switches between (`ui.theme`): `default` for a dark
/// background, `light` for a light one (darker colours, no dimming), `no-color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Theme {
    #[default]
    Default,
    Light,
    NoColor,
}

impl Theme {
    /// Every theme, as `/theme` lists them.
    pub const ALL: [Theme; 3] = [Theme::Default, Theme::Light, Theme::NoColor];

    /// The theme's name (`ui.theme`).
    pub fn name(self) -> &'static str {
        match self {
            Theme::Default => "default",
            Theme::Light => "light",
            Theme::NoColor => "no-color",
        }
    }

    /// The theme named `name` (gemini-cli's "Default Light" and "NoColor" spellings too).
    pub fn parse(name: &str) -> Option<Theme> {
        let name = name.trim().to_ascii_lowercase().replace([' ', '_'], "-");
        match name.as_str() {
            "default" | "dark" | "default-dark" => Some(Theme::Default),
            "light" | "default-light" => Some(Theme::Light),
            "no-color" | "nocolor" | "none" | "plain" => Some(Theme::NoColor),
            _ => None,
        }
    }

    /// What the theme is for, for `/theme`.
    pub fn about(self) -> &'static str {
        match self {
            Theme::Default => "colours for a dark background",
            Theme::Light => "darker colours for a light background",
            Theme::NoColor => "no colours or attributes at all",
        }
    }
}

/// Screen-reader output is on (`--screen-reader`, `ui.screen_reader`) for this process.
static SCREEN_READER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Turns screen-reader output on or off: lines are printed once, one after another
/// (no spinner, no status line under the prompt, no colours, numbered questions).
pub fn set_screen_reader(on: bool) {
    SCREEN_READER.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// Whether screen-reader output is on.
pub fn screen_reader() -> bool {
    SCREEN_READER.load(std::sync::atomic::Ordering::Relaxed)
}

/// Whether the REPL may redraw what it printed (a spinner, the status line under the
/// prompt): stdout is a terminal and screen-reader output is off.
pub fn redraws() -> bool {
    std::io::stdout().is_terminal() && !screen_reader()
}

/// Colours for the transcript; every method returns plain text when colours are off.
#[derive(Debug, Clone, Copy)]
pub struct Palette {
    pub color: bool,
    pub theme: Theme,
}

impl Palette {
    /// Colours when stdout is a terminal and `NO_COLOR` is unset or empty, in the
    /// default theme.
    pub fn detect() -> Self {
        Self::detect_with(Theme::Default)
    }

    /// [`Palette::detect`] in `theme` (`no-color` turns colours off everywhere).
    pub fn detect_with(theme: Theme) -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Self {
            color: std::io::stdout().is_terminal()
                && !no_color
                && theme != Theme::NoColor
                && !screen_reader(),
            theme,
        }
    }

    /// No colours (for tests).
    #[cfg(test)]
    pub fn plain() -> Self {
        Self {
            color: false,
            theme: Theme::NoColor,
        }
    }

    pub fn paint(&self, style: Style, text: &str) -> String {
        if self.color {
            format!("{}{text}{}", style.render(), style.render_reset())
        } else {
            text.to_string()
        }
    }

    /// The theme's colour for `base` (the light theme swaps the pale ones for darker).
    fn hue(&self, base: AnsiColor) -> Style {
        let color = match (self.theme, base) {
            (Theme::Light, AnsiColor::Yellow) => AnsiColor::Magenta,
            (Theme::Light, AnsiColor::Cyan) => AnsiColor::Blue,
            (_, c) => c,
        };
        color.on_default()
    }

    pub fn dim(&self, text: &str) -> String {
        if self.theme == Theme::Light {
            // Dimmed text is hard to read on a light background.
            return self.paint(AnsiColor::BrightBlack.on_default(), text);
        }
        self.paint(Style::new().dimmed(), text)
    }
    pub fn bold(&self, text: &str) -> String {
        self.paint(Style::new().bold(), text)
    }
    pub fn red(&self, text: &str) -> String {
        self.paint(self.hue(AnsiColor::Red), text)
    }
    pub fn green(&self, text: &str) -> String {
        self.paint(self.hue(AnsiColor::Green), text)
    }
    pub fn yellow(&self, text: &str) -> String {
        self.paint(self.hue(AnsiColor::Yellow), text)
    }
    pub fn cyan(&self, text: &str) -> String {
        self.paint(self.hue(AnsiColor::Cyan), text)
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
