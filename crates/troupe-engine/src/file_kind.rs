//! What kind of file a path holds (text, SVG, image, PDF, audio, video, other binary),
//! the mime type sent with inline data, and BOM-aware decoding of text files — the
//! rules gemini-cli's `detectFileType` and `readFileWithEncoding` apply.

use std::path::Path;

/// The kinds `read_file` and `read_many_files` treat differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Text,
    Svg,
    Image,
    Pdf,
    Audio,
    Video,
    Binary,
}

impl FileKind {
    /// The word used in `Read ${type} file: …`.
    pub fn label(self) -> &'static str {
        match self {
            FileKind::Text => "text",
            FileKind::Svg => "svg",
            FileKind::Image => "image",
            FileKind::Pdf => "pdf",
            FileKind::Audio => "audio",
            FileKind::Video => "video",
            FileKind::Binary => "binary",
        }
    }

    /// Images, PDFs, audio and video go to the model as inline data.
    pub fn is_media(self) -> bool {
        matches!(
            self,
            FileKind::Image | FileKind::Pdf | FileKind::Audio | FileKind::Video
        )
    }
}

/// Extensions always treated as binary (gemini-cli's `BINARY_EXTENSIONS`).
pub const BINARY_EXTENSIONS: &[&str] = &[
    "7z", "a", "bin", "bmp", "bz2", "class", "dat", "dll", "doc", "docx", "dylib", "exe", "gif",
    "gz", "jar", "jpeg", "jpg", "lib", "o", "obj", "odp", "ods", "odt", "pak", "pdf", "png", "ppt",
    "pptx", "pyc", "pyo", "rar", "rpa", "so", "svg", "tar", "wasm", "war", "webp", "xls", "xlsx",
    "zip",
];

/// Audio formats the model accepts, by extension.
const AUDIO_TYPES: &[(&str, &str)] = &[
    ("mp3", "audio/mpeg"),
    ("wav", "audio/wav"),
    ("aiff", "audio/aiff"),
    ("aif", "audio/aiff"),
    ("aac", "audio/aac"),
    ("ogg", "audio/ogg"),
    ("flac", "audio/flac"),
];

/// The sentence listing the supported audio formats.
pub const SUPPORTED_AUDIO_FORMATS: &str = "MP3, WAV, AIFF, AAC, OGG, and FLAC";

fn extension(path: &Path) -> String {
    path.extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default()
}

/// The mime type guessed from the file name.
pub fn mime_of(path: &Path) -> Option<String> {
    mime_essence(path).map(|m| m.into_owned())
}

/// The essence (`type/subtype`, lower case) of the first mime type guessed from the
/// name, straight from `mime_guess`'s table: no `Mime` is parsed (a read asks twice).
fn mime_essence(path: &Path) -> Option<std::borrow::Cow<'static, str>> {
    let raw = mime_guess::from_path(path).first_raw()?;
    let essence = raw.split(';').next().unwrap_or(raw).trim();
    Some(if essence.bytes().any(|b| b.is_ascii_uppercase()) {
        std::borrow::Cow::Owned(essence.to_ascii_lowercase())
    } else {
        std::borrow::Cow::Borrowed(essence)
    })
}

/// The mime type of a supported audio file, or `None` for unsupported formats.
pub fn audio_mime_of(path: &Path) -> Option<String> {
    audio_mime_from(mime_essence(path).as_deref(), &extension(path)).map(str::to_string)
}

/// [`audio_mime_of`] from the guessed mime type and the lower-case extension.
fn audio_mime_from(mime: Option<&str>, ext: &str) -> Option<&'static str> {
    let normalized = mime.map(|m| match m {
        "audio/mp3" | "audio/x-mp3" => "audio/mpeg",
        "audio/wave" | "audio/x-wav" | "audio/vnd.wave" | "audio/x-pn-wav" => "audio/wav",
        "audio/x-aiff" | "audio/aif" => "audio/aiff",
        "audio/x-aac" => "audio/aac",
        "audio/x-flac" => "audio/flac",
        other => other,
    });
    if let Some(m) = normalized {
        if let Some((_, t)) = AUDIO_TYPES.iter().find(|(_, t)| *t == m) {
            return Some(t);
        }
    }
    AUDIO_TYPES.iter().find(|(e, _)| *e == ext).map(|(_, t)| *t)
}

/// Extensions that name neither media (image, audio, video, PDF) nor a binary format:
/// a file of one is text or binary by its content alone (a test holds them to that).
const PLAIN_TEXT_EXTENSIONS: &[&str] = &[
    "c", "cc", "cpp", "cs", "css", "go", "h", "hpp", "html", "java", "js", "json", "jsx", "kt",
    "lock", "md", "py", "rb", "rs", "sh", "sql", "swift", "toml", "tsx", "txt", "xml", "yaml",
    "yml",
];

/// The kind of a file from its name and its first bytes (`head`, 4 KiB is plenty).
pub fn detect(path: &Path, head: &[u8]) -> FileKind {
    let ext = extension(path);
    if matches!(ext.as_str(), "ts" | "mts" | "cts") {
        return FileKind::Text;
    }
    if ext == "svg" {
        return FileKind::Svg;
    }
    // Source and text files, most of what is read: no media type, no binary extension,
    // so their kind is the content's (the table lookup below would say so too).
    if PLAIN_TEXT_EXTENSIONS.contains(&ext.as_str()) {
        return if looks_binary(head) {
            FileKind::Binary
        } else {
            FileKind::Text
        };
    }
    let mime = mime_essence(path);
    if let Some(mime) = mime.as_deref() {
        if mime.starts_with("image/") {
            return FileKind::Image;
        }
        if mime.starts_with("audio/") || mime.starts_with("video/") {
            if !looks_binary(head) {
                return FileKind::Text;
            }
            return if mime.starts_with("audio/") {
                FileKind::Audio
            } else {
                FileKind::Video
            };
        }
        if mime == "application/pdf" {
            return FileKind::Pdf;
        }
    }
    if audio_mime_from(mime.as_deref(), &ext).is_some() {
        return if looks_binary(head) {
            FileKind::Audio
        } else {
            FileKind::Text
        };
    }
    if BINARY_EXTENSIONS.contains(&ext.as_str()) {
        return FileKind::Binary;
    }
    if looks_binary(head) {
        FileKind::Binary
    } else {
        FileKind::Text
    }
}

/// A Unicode byte-order mark and the encoding it announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bom {
    Utf8,
    Utf16Le,
    Utf16Be,
    Utf32Le,
    Utf32Be,
}

fn bom_of(bytes: &[u8]) -> Option<(Bom, usize)> {
    // UTF-32 LE must be tested before UTF-16 LE: its BOM starts the same way.
    if bytes.starts_with(&[0xFF, 0xFE, 0x00, 0x00]) {
        Some((Bom::Utf32Le, 4))
    } else if bytes.starts_with(&[0x00, 0x00, 0xFE, 0xFF]) {
        Some((Bom::Utf32Be, 4))
    } else if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        Some((Bom::Utf8, 3))
    } else if bytes.starts_with(&[0xFF, 0xFE]) {
        Some((Bom::Utf16Le, 2))
    } else if bytes.starts_with(&[0xFE, 0xFF]) {
        Some((Bom::Utf16Be, 2))
    } else {
        None
    }
}

/// A content sniff in the spirit of `isbinaryfile`: text with a BOM is text; a NUL byte
/// or more than 10% control bytes / broken UTF-8 in the first KiB means binary.
pub fn looks_binary(bytes: &[u8]) -> bool {
    if bytes.is_empty() || bom_of(bytes).is_some() {
        return false;
    }
    if bytes.starts_with(b"%PDF-") {
        return true;
    }
    let sample = &bytes[..bytes.len().min(1024)];
    if sample.contains(&0) {
        return true;
    }
    let mut suspicious = 0usize;
    let mut rest = sample;
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(text) => {
                suspicious += text.bytes().filter(|&b| is_control(b)).count();
                break;
            }
            Err(e) => {
                let (valid, after) = rest.split_at(e.valid_up_to());
                suspicious += valid.iter().filter(|&&b| is_control(b)).count();
                match e.error_len() {
                    Some(n) => {
                        suspicious += n;
                        rest = &after[n..];
                    }
                    // A sequence cut by the end of the sample is not evidence.
                    None => break,
                }
            }
        }
    }
    suspicious * 10 > sample.len()
}

fn is_control(b: u8) -> bool {
    b < 7 || (b > 14 && b < 32 && b != 27)
}

/// Decodes text by its BOM (UTF-8/16LE/16BE/32LE/32BE, BOM stripped), UTF-8 otherwise;
/// invalid sequences become U+FFFD.
pub fn decode_text(bytes: &[u8]) -> String {
    match bom_of(bytes) {
        None => String::from_utf8_lossy(bytes).into_owned(),
        Some((Bom::Utf8, n)) => String::from_utf8_lossy(&bytes[n..]).into_owned(),
        Some((Bom::Utf16Le, n)) => encoding_rs::UTF_16LE
            .decode_without_bom_handling(&bytes[n..])
            .0
            .into_owned(),
        Some((Bom::Utf16Be, n)) => encoding_rs::UTF_16BE
            .decode_without_bom_handling(&bytes[n..])
            .0
            .into_owned(),
        Some((bom, n)) => decode_utf32(&bytes[n..], bom == Bom::Utf32Le),
    }
}

/// UTF-32 (which encoding_rs does not cover): four bytes per scalar value.
fn decode_utf32(bytes: &[u8], little_endian: bool) -> String {
    bytes
        .chunks(4)
        .map(|c| {
            if c.len() < 4 {
                return char::REPLACEMENT_CHARACTER;
            }
            let quad = [c[0], c[1], c[2], c[3]];
            let value = if little_endian {
                u32::from_le_bytes(quad)
            } else {
                u32::from_be_bytes(quad)
            };
            char::from_u32(value).unwrap_or(char::REPLACEMENT_CHARACTER)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The extensions that skip the media table are in it as no media type, and are
    /// neither binary nor audio extensions: skipping it changes no answer.
    #[test]
    fn plain_text_extensions_name_no_media_and_no_binary_format() {
        for ext in PLAIN_TEXT_EXTENSIONS {
            let path = std::path::PathBuf::from(format!("f.{ext}"));
            let mime = mime_essence(&path);
            let media = mime.as_deref().is_some_and(|m| {
                m.starts_with("image/")
                    || m.starts_with("audio/")
                    || m.starts_with("video/")
                    || m == "application/pdf"
            });
            assert!(!media, "{ext}: {mime:?}");
            assert!(audio_mime_from(mime.as_deref(), ext).is_none(), "{ext}");
            assert!(!BINARY_EXTENSIONS.contains(ext), "{ext}");
            assert_eq!(detect(&path, b"fn main() {}"), FileKind::Text, "{ext}");
            assert_eq!(detect(&path, b"\0\x01\x02"), FileKind::Binary, "{ext}");
        }
    }

    /// The essence read from `mime_guess`'s table is the parsed `Mime`'s essence.
    #[test]
    fn the_table_essence_is_the_parsed_essence() {
        for ext in [
            "txt", "TXT", "png", "JPG", "jpeg", "gif", "webp", "svg", "pdf", "ts", "js", "json",
            "html", "css", "md", "mp3", "wav", "aif", "aiff", "aac", "ogg", "flac", "mp4", "webm",
            "mov", "xlsm", "XLSB", "docm", "pptm", "docx", "zip", "gz", "wasm", "ico", "rs",
        ] {
            let path = std::path::PathBuf::from(format!("x.{ext}"));
            let parsed = mime_guess::from_path(&path)
                .first()
                .map(|m| m.essence_str().to_string());
            assert_eq!(mime_of(&path), parsed, "{ext}");
        }
    }

    fn utf16(text: &str, le: bool) -> Vec<u8> {
        let mut out = if le {
            vec![0xFF, 0xFE]
        } else {
            vec![0xFE, 0xFF]
        };
        for unit in text.encode_utf16() {
            out.extend(if le {
                unit.to_le_bytes()
            } else {
                unit.to_be_bytes()
            });
        }
        out
    }

    fn utf32(text: &str, le: bool) -> Vec<u8> {
        let mut out = if le {
            vec![0xFF, 0xFE, 0, 0]
        } else {
            vec![0, 0, 0xFE, 0xFF]
        };
        for c in text.chars() {
            let v = c as u32;
            out.extend(if le { v.to_le_bytes() } else { v.to_be_bytes() });
        }
        out
    }

    #[test]
    fn decodes_every_bom() {
        let text = "héllo\r\nwörld 😀";
        let mut utf8 = vec![0xEF, 0xBB, 0xBF];
        utf8.extend(text.as_bytes());
        assert_eq!(decode_text(&utf8), text);
        assert_eq!(decode_text(&utf16(text, true)), text);
        assert_eq!(decode_text(&utf16(text, false)), text);
        assert_eq!(decode_text(&utf32(text, true)), text);
        assert_eq!(decode_text(&utf32(text, false)), text);
        assert_eq!(decode_text(text.as_bytes()), text);
    }

    #[test]
    fn bom_files_are_text_and_nul_files_binary() {
        assert!(!looks_binary(&utf16("abc", true)));
        assert!(!looks_binary(&utf32("abc", false)));
        assert!(looks_binary(b"abc\0def"));
        assert!(looks_binary(&[0x01, 0x02, 0x03, 0x04, b'a']));
        assert!(!looks_binary("plain ü text\n".as_bytes()));
        assert!(looks_binary(b"%PDF-1.4 ..."));
    }

    #[test]
    fn kinds_by_name_and_content() {
        let png = [0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0];
        assert_eq!(detect(Path::new("a.png"), &png), FileKind::Image);
        assert_eq!(detect(Path::new("a.svg"), b"<svg/>"), FileKind::Svg);
        assert_eq!(detect(Path::new("a.ts"), b"let x = 1;"), FileKind::Text);
        assert_eq!(detect(Path::new("a.pdf"), b"%PDF-1.4"), FileKind::Pdf);
        assert_eq!(
            detect(Path::new("a.mp3"), &[0xFF, 0xFB, 0, 0]),
            FileKind::Audio
        );
        assert_eq!(detect(Path::new("a.mp3"), b"not audio"), FileKind::Text);
        assert_eq!(
            detect(Path::new("a.mp4"), &[0, 0, 0, 0x18]),
            FileKind::Video
        );
        assert_eq!(detect(Path::new("a.zip"), b"PK"), FileKind::Binary);
        assert_eq!(detect(Path::new("data"), &[1, 2, 0, 3]), FileKind::Binary);
        assert_eq!(detect(Path::new("notes"), b"hello"), FileKind::Text);
        assert_eq!(
            audio_mime_of(Path::new("x.wav")).as_deref(),
            Some("audio/wav")
        );
        assert_eq!(audio_mime_of(Path::new("x.mid")), None);
    }
}
