//! Where `--trajectory FILE` writes when one process runs several sessions (ACP).

use std::path::{Path, PathBuf};

/// `FILE` with `session_id` before its extension: `run.json` → `run.<id>.json`.
pub fn per_session(path: &Path, session_id: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trajectory".into());
    let name = match path.extension() {
        Some(ext) => format!("{stem}.{session_id}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{session_id}"),
    };
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_id_goes_before_the_extension() {
        assert_eq!(
            per_session(Path::new("/t/run.json"), "abc"),
            PathBuf::from("/t/run.abc.json")
        );
        assert_eq!(
            per_session(Path::new("run"), "abc"),
            PathBuf::from("run.abc")
        );
    }
}
