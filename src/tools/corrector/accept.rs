//! Whether corrected strings are accepted (their `old_string` must occur literally exactly
//! as required), and the fast path that needs no model: over-escaped strings unescaped.

use super::{count, CorrectEdit, Correction, CorrectionMethod};
use crate::engine::edit::snapshot::FileSnapshot;
use crate::engine::edit::unescape::unescape;

/// Accepts corrected strings only if `old` occurs literally exactly as required.
pub(super) fn accept(
    msg: &CorrectEdit,
    snapshot: &FileSnapshot,
    old: String,
    new: String,
    method: CorrectionMethod,
    cached: bool,
) -> Result<Correction, String> {
    let old = old.replace("\r\n", "\n");
    let new = new.replace("\r\n", "\n");
    let found = count(&snapshot.text, &old);
    if !msg.want.accepts(found) {
        return Err(format!(
            "the corrected old_string occurs {found} times in the file"
        ));
    }
    if old == new {
        return Err("the correction changes nothing".into());
    }
    Ok(Correction::Fixed {
        old_string: old,
        new_string: new,
        snapshot: snapshot.clone(),
        method,
        cached,
    })
}

/// The fast path: over-escaped strings whose unescaped form matches as required.
pub(super) fn unescape_fix(msg: &CorrectEdit, snapshot: &FileSnapshot) -> Option<Correction> {
    let old = unescape(&msg.old_string);
    if old == msg.old_string || !msg.want.accepts(count(&snapshot.text, &old)) {
        return None;
    }
    accept(
        msg,
        snapshot,
        old,
        unescape(&msg.new_string),
        CorrectionMethod::Unescape,
        false,
    )
    .ok()
}
