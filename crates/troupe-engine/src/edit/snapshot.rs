//! A file's bytes as an edit sees them: UTF-8 text with `\r\n` normalised to `\n`,
//! what to restore on write (CRLF, a BOM), and the sha256 of the exact bytes so the
//! write can refuse to clobber a file that changed since.

/// The bytes an edit was computed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSnapshot {
    /// sha256 of the bytes read.
    pub hash: [u8; 32],
    /// The text with `\r\n` → `\n` (a lone `\r` is kept).
    pub text: String,
    /// The file used `\r\n` line endings.
    pub crlf: bool,
    /// The file started with a UTF-8 byte-order mark.
    pub bom: bool,
}

/// A file an edit cannot work on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the file is not valid UTF-8 text (invalid byte at offset {offset}); it cannot be edited as text")]
pub struct NotText {
    pub offset: usize,
}

const BOM: &[u8] = &[0xEF, 0xBB, 0xBF];

impl FileSnapshot {
    /// As [`FileSnapshot::from_bytes`], taking the bytes: a file with no BOM and no
    /// `\r\n` becomes its text without a copy (a 5 MB rewrite holds one old text, not two).
    pub fn from_vec(bytes: Vec<u8>) -> Result<Self, NotText> {
        if bytes.starts_with(BOM) || memchr_crlf(&bytes) {
            return Self::from_bytes(&bytes);
        }
        let hash = crate::hash::sha256(&bytes);
        let text = String::from_utf8(bytes).map_err(|e| NotText {
            offset: e.utf8_error().valid_up_to(),
        })?;
        Ok(Self {
            hash,
            text,
            crlf: false,
            bom: false,
        })
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, NotText> {
        let hash = crate::hash::sha256(bytes);
        let (bom, body) = match bytes.strip_prefix(BOM) {
            Some(rest) => (true, rest),
            None => (false, bytes),
        };
        let raw = std::str::from_utf8(body).map_err(|e| NotText {
            offset: e.valid_up_to() + if bom { BOM.len() } else { 0 },
        })?;
        let crlf = raw.contains("\r\n");
        Ok(Self {
            hash,
            text: raw.replace("\r\n", "\n"),
            crlf,
            bom,
        })
    }

    /// The bytes to write for `new_text` (LF): CRLF restored as gemini-cli does
    /// (`replace(/\r?\n/g, '\r\n')`) when the file used it, the BOM kept.
    pub fn encode(&self, new_text: &str) -> Vec<u8> {
        encode_text(new_text, self.crlf, self.bom)
    }
}

fn memchr_crlf(bytes: &[u8]) -> bool {
    bytes.windows(2).any(|w| w == b"\r\n")
}

/// `text` with every `\n` (or `\r\n`) written as `\r\n` when `crlf`, after a BOM when `bom`.
pub fn encode_text(text: &str, crlf: bool, bom: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + 8);
    if bom {
        out.extend_from_slice(BOM);
    }
    if crlf {
        out.extend_from_slice(text.replace("\r\n", "\n").replace('\n', "\r\n").as_bytes());
    } else {
        out.extend_from_slice(text.as_bytes());
    }
    out
}

/// sha256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    crate::hash::sha256(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_and_bom_round_trip() {
        let bytes = b"\xEF\xBB\xBFone\r\ntwo\r\n";
        let snap = FileSnapshot::from_bytes(bytes).unwrap();
        assert_eq!(snap.text, "one\ntwo\n");
        assert!(snap.crlf && snap.bom);
        assert_eq!(snap.encode(&snap.text), bytes.to_vec());
        assert_eq!(
            snap.encode("one\nTWO\n"),
            b"\xEF\xBB\xBFone\r\nTWO\r\n".to_vec()
        );
        assert_eq!(snap.hash, sha256(bytes));
    }

    #[test]
    fn lone_cr_is_kept_and_invalid_utf8_refused() {
        let snap = FileSnapshot::from_bytes(b"a\rb\n").unwrap();
        assert_eq!(snap.text, "a\rb\n");
        assert!(!snap.crlf);
        let err = FileSnapshot::from_bytes(b"ok\xFF").unwrap_err();
        assert_eq!(err.offset, 2);
    }

    #[test]
    fn from_vec_is_from_bytes_without_the_copy() {
        let cases: [&[u8]; 5] = [
            b"one\ntwo\n",
            b"\xEF\xBB\xBFone\r\ntwo\r\n",
            b"a\rb\n",
            b"a\r\nb",
            b"",
        ];
        for bytes in cases {
            assert_eq!(
                FileSnapshot::from_vec(bytes.to_vec()),
                FileSnapshot::from_bytes(bytes)
            );
        }
        assert_eq!(
            FileSnapshot::from_vec(b"ok\xFF".to_vec())
                .unwrap_err()
                .offset,
            2
        );
        assert_eq!(
            FileSnapshot::from_vec(b"\xEF\xBB\xBFok\xFF".to_vec())
                .unwrap_err()
                .offset,
            5
        );
    }
}
