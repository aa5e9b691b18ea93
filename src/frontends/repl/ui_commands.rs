//! The commands that change how the session looks and reads its settings:
//! `/settings [PREFIX]` (the effective settings, each with where it came from),
//! `/settings KEY VALUE` (one setting changed for this session, checked by the
//! settings loader as a `-c` flag is), `/theme [NAME]` and `/vim`.
//!
//! A changed setting takes effect at once where the running session can take it
//! ([`LIVE_KEYS`]); any other key is refused, since the session read it when it
//! started (`troupe -c KEY=VALUE` sets it for a new session).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use rustyline::config::Configurer;
use rustyline::EditMode;
use toml::{Table, Value};

use crate::engine::sanitize::one_line;
use crate::protocol::{ApprovalMode, Op};
use crate::settings::{LoadedSettings, Origin};

use super::terminal::{Palette, Theme};
use super::Repl;

/// The settings the running session takes from `/settings KEY VALUE`.
pub const LIVE_KEYS: &[&str] = &[
    "model.name",
    "model.max_turns",
    "approval.mode",
    "ui.theme",
    "ui.vim_mode",
];

/// The effective settings as loaded (every layer, the run's flags included) with the
/// origin of each key; changed by `/settings KEY VALUE`.
#[derive(Debug, Clone)]
pub struct Effective {
    pub table: Table,
    pub origins: BTreeMap<String, Origin>,
}

static LOADED: OnceLock<Effective> = OnceLock::new();

/// Keeps the settings the interactive session was started with, for `/settings`.
pub fn remember_settings(loaded: &LoadedSettings) {
    let _ = LOADED.set(Effective {
        table: loaded.table.clone(),
        origins: loaded.origins.clone(),
    });
}

/// The settings remembered at start, else those of `workspace` without the run's flags.
pub fn effective_at_start(workspace: &std::path::Path) -> Option<Effective> {
    if let Some(e) = LOADED.get() {
        return Some(e.clone());
    }
    crate::settings::load(workspace, &[])
        .ok()
        .map(|l| Effective {
            table: l.table,
            origins: l.origins,
        })
}

/// The value at `key` (`a.b.c`) of `table`.
fn lookup<'t>(table: &'t Table, key: &str) -> Option<&'t Value> {
    let mut parts = key.split('.');
    let mut value = table.get(parts.next()?)?;
    for part in parts {
        value = value.as_table()?.get(part)?;
    }
    Some(value)
}

impl Repl {
    /// Runs `/settings`, `/theme` or `/vim`; `None` when `name` is none of them.
    pub(super) fn ui_command(&mut self, name: &str, args: &str) -> Option<Vec<String>> {
        Some(match name {
            "settings" => self.settings_command(args.trim()),
            "theme" => self.theme_command(args.trim()),
            "vim" => self.toggle_vim(),
            _ => return None,
        })
    }

    fn settings_command(&mut self, args: &str) -> Vec<String> {
        let p = self.palette;
        let Some(effective) = self.settings.clone() else {
            return vec![p.red("The settings could not be read.")];
        };
        let (key, value) = args
            .split_once(char::is_whitespace)
            .map_or((args, ""), |(k, v)| (k, v.trim()));
        if value.is_empty() {
            return settings_list(&effective, key, p);
        }
        let flag = format!("{key}={value}");
        let changed = crate::settings::with_override(
            &effective.table,
            &effective.origins,
            &flag,
            "/settings",
        );
        let (settings, table, origins) = match changed {
            Ok(changed) => changed,
            Err(e) => return vec![p.red(&one_line(&e.to_string()))],
        };
        if !LIVE_KEYS.contains(&key) {
            return vec![p.yellow(&format!(
                "`{key}` is read when the session starts, so it was not changed; start troupe with -c {key}=… to use it. This session takes: {}.",
                LIVE_KEYS.join(", ")
            ))];
        }
        match key {
            "model.name" => {
                self.link
                    .handle
                    .submit(Op::SetModel(settings.model.name.clone()));
                self.link.model = settings.model.name.clone();
            }
            "model.max_turns" => {
                if let Err(e) = self.link.request(Op::SetMaxTurns(settings.model.max_turns)) {
                    return vec![p.red(&e.to_string())];
                }
            }
            "approval.mode" => {
                let mode = ApprovalMode::parse(&settings.approval.mode).unwrap_or_default();
                self.link.set_mode(mode);
            }
            "ui.theme" => {
                let theme = Theme::parse(&settings.ui.theme).unwrap_or_default();
                self.set_theme(theme);
            }
            "ui.vim_mode" => self.set_vim(settings.ui.vim_mode),
            _ => {}
        }
        let shown = lookup(&table, key)
            .map(Value::to_string)
            .unwrap_or_default();
        self.settings = Some(Effective { table, origins });
        vec![format!(
            "{} = {} {}",
            self.palette.cyan(key),
            one_line(&shown),
            self.palette.dim("(for this session)")
        )]
    }

    fn theme_command(&mut self, args: &str) -> Vec<String> {
        let p = self.palette;
        if args.is_empty() {
            let mut out = vec![p.bold("Themes")];
            for theme in Theme::ALL {
                let mark = if theme == self.palette.theme {
                    "●"
                } else {
                    " "
                };
                out.push(format!(
                    "  {mark} {:<10} {}",
                    theme.name(),
                    p.dim(theme.about())
                ));
            }
            out.push(p.dim("/theme NAME switches for this session (ui.theme sets the default)."));
            return out;
        }
        let Some(theme) = Theme::parse(args) else {
            let names: Vec<&str> = Theme::ALL.iter().map(|t| t.name()).collect();
            return vec![p.yellow(&format!(
                "Unknown theme `{}`: use {}.",
                one_line(args),
                names.join(", ")
            ))];
        };
        self.set_theme(theme);
        vec![self
            .palette
            .green(&format!("Theme set to {} for this session.", theme.name()))]
    }

    /// Switches the colours of everything printed from now on.
    pub(super) fn set_theme(&mut self, theme: Theme) {
        self.palette = Palette::detect_with(theme);
        if let Some(helper) = self.editor.helper_mut() {
            helper.set_palette(self.palette);
        }
    }

    fn toggle_vim(&mut self) -> Vec<String> {
        let on = !self.link.vim();
        self.set_vim(on);
        // gemini-cli's words.
        vec![self.palette.dim(if on {
            "Entered Vim mode. Run /vim again to exit."
        } else {
            "Exited Vim mode."
        })]
    }

    /// Puts the line editor in vi mode (or back to emacs keys).
    pub(super) fn set_vim(&mut self, on: bool) {
        self.editor
            .set_edit_mode(if on { EditMode::Vi } else { EditMode::Emacs });
        self.link.set_vim(on);
    }
}

/// The effective settings whose key starts with `prefix`, `key = value  # origin`.
fn settings_list(effective: &Effective, prefix: &str, p: Palette) -> Vec<String> {
    let keys: Vec<&String> = effective
        .origins
        .keys()
        .filter(|k| {
            prefix.is_empty()
                || k.as_str() == prefix
                || k.starts_with(&format!("{}.", prefix.trim_end_matches('.')))
        })
        .collect();
    if keys.is_empty() {
        return vec![p.yellow(&format!(
            "No setting is named `{}`; /settings lists them all.",
            one_line(prefix)
        ))];
    }
    let mut out = Vec::new();
    for key in keys {
        let Some(value) = lookup(&effective.table, key) else {
            continue;
        };
        // A key holding a secret is never shown.
        let shown = if key.contains("api_key") || (key.contains("token") && value.is_str()) {
            "\"…\"".to_string()
        } else {
            value.to_string()
        };
        let origin = effective.origins.get(key).map_or("", String::as_str);
        out.push(format!(
            "{} = {}  {}",
            p.cyan(key),
            one_line(&shown),
            p.dim(&format!("# {}", one_line(origin)))
        ));
    }
    out.push(p.dim(
        "/settings KEY VALUE changes one for this session (model.name, model.max_turns, approval.mode, ui.theme, ui.vim_mode).",
    ));
    out
}
