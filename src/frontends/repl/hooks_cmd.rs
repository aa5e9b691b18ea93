//! `/hooks`: lists the session's hooks; `enable`/`disable NAME`, `enable-all` and
//! `disable-all` turn them on and off for the rest of the session.

use futures::executor::block_on;

use super::terminal::Palette;
use super::SessionLink;
use crate::engine::sanitize::one_line;
use crate::protocol::{ListHooks, SetHookEnabled};

/// Runs `/hooks` with `args`.
pub fn hooks(link: &SessionLink, args: &[&str], p: Palette) -> Vec<String> {
    let Some(addr) = link.hooks.addr() else {
        return vec![p.dim(
            "No hooks are configured ([[hooks.<Event>]] in config.toml, or hooks in .gemini/settings.json).",
        )];
    };
    let change = match args {
        [] | ["list" | "panel"] => None,
        ["enable", name @ ..] if !name.is_empty() => Some((Some(name.join(" ")), true)),
        ["disable", name @ ..] if !name.is_empty() => Some((Some(name.join(" ")), false)),
        ["enable-all"] => Some((None, true)),
        ["disable-all"] => Some((None, false)),
        _ => {
            return vec![p.yellow(
                "Usage: /hooks [list | enable NAME | disable NAME | enable-all | disable-all]",
            )]
        }
    };
    if let Some((name, enabled)) = change {
        let what = name.clone().unwrap_or_else(|| "all hooks".into());
        return match block_on(addr.set_enabled.send(SetHookEnabled { name, enabled })) {
            Ok(0) => vec![p.yellow(&format!("No hook changed ({what})."))],
            Ok(n) => vec![p.dim(&format!(
                "{} {n} hook(s) ({what}).",
                if enabled { "Enabled" } else { "Disabled" }
            ))],
            Err(e) => vec![p.red(&format!("The hooks are unavailable: {e}"))],
        };
    }
    match block_on(addr.list.send(ListHooks)) {
        Ok(list) => {
            let mut out = vec![p.bold(&format!("{} hook(s)", list.len()))];
            for h in list {
                let state = if h.enabled {
                    p.green("on ")
                } else {
                    p.dim("off")
                };
                let matcher = if h.matcher.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", one_line(&h.matcher))
                };
                let origin = if h.project { "project" } else { "user" };
                out.push(format!(
                    "  {state} {:<20} {}{matcher}  {}",
                    h.event.as_str(),
                    one_line(&h.name),
                    p.dim(&format!("({origin}: {})", one_line(&h.source)))
                ));
            }
            out
        }
        Err(e) => vec![p.red(&format!("The hooks are unavailable: {e}"))],
    }
}
