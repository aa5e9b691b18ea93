//! `/hooks`: lists the session's hooks; `enable`/`disable NAME`, `enable-all` and
//! `disable-all` turn them on and off for the rest of the session.

use super::terminal::Palette;
use super::SessionLink;
use crate::engine::sanitize::one_line;
use crate::protocol::{Op, OpReply};

/// Runs `/hooks` with `args`.
pub fn hooks(link: &SessionLink, args: &[&str], p: Palette) -> Vec<String> {
    let list = match link.request(Op::ListHooks) {
        Ok(OpReply::Hooks(list)) => list,
        Ok(_) => Vec::new(),
        Err(e) => return vec![p.red(&format!("The hooks are unavailable: {e}"))],
    };
    if list.is_empty() {
        return vec![p.dim(
            "No hooks are configured ([[hooks.<Event>]] in config.toml, or hooks in .gemini/settings.json).",
        )];
    }
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
        return match link.request(Op::SetHookEnabled { name, enabled }) {
            Ok(OpReply::Count(0)) => vec![p.yellow(&format!("No hook changed ({what})."))],
            Ok(OpReply::Count(n)) => vec![p.dim(&format!(
                "{} {n} hook(s) ({what}).",
                if enabled { "Enabled" } else { "Disabled" }
            ))],
            Ok(_) => Vec::new(),
            Err(e) => vec![p.red(&format!("The hooks are unavailable: {e}"))],
        };
    }
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
