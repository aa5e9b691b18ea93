//! Path arithmetic that never touches the file system.

use std::path::{Component, Path, PathBuf};

/// Normalises `.` and `..` without touching the file system. A path already in normal
/// form (the common case: every path a walk or a tool resolved) comes back as it is:
/// moved when it is owned, copied when it is borrowed, without std's component parsing.
pub fn normalize_lexically<P: AsRef<Path> + Into<PathBuf>>(path: P) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    if is_plain(path.as_ref().as_os_str().as_bytes()) {
        return path.into();
    }
    walk_components(path.as_ref())
}

/// `.` and `..` resolved by a walk over the components (a `..` pops the last one).
fn walk_components(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Are the `/`-separated segments free of empty, `.` and `..` ones?
fn plain_segments(path: &[u8]) -> bool {
    path.split(|&b| b == b'/')
        .all(|segment| !matches!(segment, b"" | b"." | b".."))
}

/// Is `path` (absolute or relative) in lexical normal form: no empty, `.` or `..`
/// component and no trailing separator? Such a path is its own normalisation.
fn is_plain(path: &[u8]) -> bool {
    match path {
        [] => true,
        [b'/', ..] => is_plain_absolute(path),
        _ => plain_segments(path),
    }
}

/// Is `path` absolute and in lexical normal form: no empty, `.` or `..` component and
/// no trailing separator (`/` itself is)? The workspace's roots and the real paths
/// built beneath them are. For two such paths, comparing bytes at a separator says
/// exactly what std's component-wise comparison says, at a fraction of its cost.
fn is_plain_absolute(path: &[u8]) -> bool {
    path == b"/" || (path.first() == Some(&b'/') && plain_segments(&path[1..]))
}

/// `path.starts_with(base)`, component-wise as std's, by bytes when both are plain
/// absolute paths.
pub fn starts_with_path(path: &Path, base: &Path) -> bool {
    match plain_rest(path, base) {
        Some(rest) => rest.is_some(),
        None => path.starts_with(base),
    }
}

/// `path.strip_prefix(base).ok()`, as std's, by bytes when both are plain absolute
/// paths.
pub fn strip_path_prefix<'a>(path: &'a Path, base: &Path) -> Option<&'a Path> {
    match plain_rest(path, base) {
        Some(rest) => rest,
        None => path.strip_prefix(base).ok(),
    }
}

/// For two plain absolute paths, `Some` of what `path` has beyond `base` (`None` when
/// `base` is not its prefix); `None` when either is not plain (std decides).
fn plain_rest<'a>(path: &'a Path, base: &Path) -> Option<Option<&'a Path>> {
    use std::os::unix::ffi::OsStrExt;
    let (p, b) = (path.as_os_str().as_bytes(), base.as_os_str().as_bytes());
    if !(is_plain_absolute(p) && is_plain_absolute(b)) {
        return None;
    }
    let Some(rest) = p.strip_prefix(b) else {
        return Some(None);
    };
    let rest = if b == b"/" || rest.is_empty() {
        Some(rest)
    } else {
        rest.strip_prefix(b"/")
    };
    Some(rest.map(|r| Path::new(std::ffi::OsStr::from_bytes(r))))
}

/// A relative path's components joined with `/`, lossily decoded: its own text when
/// it has no empty or `.` component (which the components leave out).
pub fn components_text(rel: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let bytes = rel.as_os_str().as_bytes();
    let plain = bytes.first() != Some(&b'/')
        && bytes
            .split(|&b| b == b'/')
            .all(|segment| !matches!(segment, b"" | b"."));
    if plain {
        return rel.to_string_lossy().into_owned();
    }
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn path_text() -> impl Strategy<Value = String> {
        let segment = prop::sample::select(vec!["", ".", "..", "a", "b", "ab", "a.b", "é"]);
        (
            any::<bool>(),
            prop::collection::vec(segment, 0..5),
            any::<bool>(),
        )
            .prop_map(|(absolute, segments, trailing)| {
                let mut text = if absolute {
                    "/".to_string()
                } else {
                    String::new()
                };
                text.push_str(&segments.join("/"));
                if trailing {
                    text.push('/');
                }
                text
            })
    }

    proptest! {
        /// Whatever the two paths, the answers are std's.
        #[test]
        fn prefix_answers_are_std_answers(path in path_text(), base in path_text()) {
            let (path, base) = (Path::new(&path), Path::new(&base));
            prop_assert_eq!(starts_with_path(path, base), path.starts_with(base));
            prop_assert_eq!(strip_path_prefix(path, base), path.strip_prefix(base).ok());
        }

        /// The fast way out of `normalize_lexically` gives what the component walk gives.
        #[test]
        fn normalizing_a_plain_path_is_the_component_walk(text in path_text()) {
            let path = Path::new(&text);
            prop_assert_eq!(normalize_lexically(path), walk_components(path));
            prop_assert_eq!(normalize_lexically(path.to_path_buf()), walk_components(path));
        }

        /// The text of a path's components is std's components joined, whatever the path.
        #[test]
        fn components_text_is_the_components_joined(rel in path_text()) {
            let rel = Path::new(&rel);
            let joined = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            prop_assert_eq!(components_text(rel), joined);
        }
    }

    #[test]
    fn plain_paths_take_the_byte_way() {
        assert!(is_plain_absolute(b"/"));
        assert!(is_plain_absolute(b"/ws/src/a.rs"));
        for not_plain in [
            &b"ws/a"[..],
            b"/ws/",
            b"/ws//a",
            b"/ws/./a",
            b"/ws/../a",
            b"",
        ] {
            assert!(!is_plain_absolute(not_plain), "{not_plain:?}");
        }
        let rest = plain_rest(Path::new("/ws/src/a.rs"), Path::new("/ws"));
        assert_eq!(rest, Some(Some(Path::new("src/a.rs"))));
        assert_eq!(
            plain_rest(Path::new("/wsx/a"), Path::new("/ws")),
            Some(None)
        );
        assert_eq!(
            plain_rest(Path::new("/ws"), Path::new("/ws")),
            Some(Some(Path::new("")))
        );
        assert_eq!(
            plain_rest(Path::new("/a"), Path::new("/")),
            Some(Some(Path::new("a")))
        );
    }
}
