//! The bounds of what a stdio MCP server may send in one message: [`MAX_MESSAGE_BYTES`]
//! and [`MAX_DEPTH`] levels of nesting. The server's stdout is read here, line by line,
//! before rmcp sees it: a line within the bounds is passed on as it is; an answer over
//! them is replaced by a JSON-RPC error answer to the same request (as soon as its id
//! is known), so that the call fails at once naming the bound, instead of rmcp dropping
//! the line and the call waiting for its timeout. Every byte is scanned once and at
//! most one message is held.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, DuplexStream};

/// The most bytes one message (one line) may hold.
pub const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// The deepest a message may nest objects and arrays (serde_json gives up at 128).
pub const MAX_DEPTH: usize = 100;

/// What a line broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Over {
    Size,
    Depth,
}

impl Over {
    fn message(self) -> String {
        match self {
            Self::Size => format!(
                "the MCP server's answer is over the size bound of {} MiB (one JSON-RPC message); it was refused",
                MAX_MESSAGE_BYTES >> 20
            ),
            Self::Depth => format!(
                "the MCP server's answer is nested deeper than the bound of {MAX_DEPTH} levels; it was refused"
            ),
        }
    }
}

/// Where the top-level `"id"` of a line stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Id {
    NotSeen,
    Reading,
    Read,
    Unusable,
}

/// The longest id kept.
const MAX_ID_BYTES: usize = 256;

/// One line as it goes by: its size, its depth, and the top-level keys that tell a
/// response (`id` with `result` or `error`) from a request (`method`).
#[derive(Debug)]
struct Scan {
    line: Vec<u8>,
    len: usize,
    depth: usize,
    over: Option<Over>,
    in_string: bool,
    escaped: bool,
    /// At the top level, the next string is a key.
    expect_key: bool,
    /// The string being read is a top-level key (its bytes, bounded).
    key: Option<Vec<u8>>,
    last_key: Vec<u8>,
    id: Id,
    id_raw: Vec<u8>,
    is_response: bool,
    is_request: bool,
    /// The error answer was already given.
    answered: bool,
}

impl Scan {
    fn new() -> Self {
        Self {
            line: Vec::new(),
            len: 0,
            depth: 0,
            over: None,
            in_string: false,
            escaped: false,
            expect_key: false,
            key: None,
            last_key: Vec::new(),
            id: Id::NotSeen,
            id_raw: Vec::new(),
            is_response: false,
            is_request: false,
            answered: false,
        }
    }

    /// The byte ending the top-level value that may be the id (`,` or `}`) was read.
    fn end_id(&mut self) {
        if self.id == Id::Reading {
            self.id_raw.pop();
            self.id = Id::Read;
        }
    }

    /// Takes one byte of the line (never the newline).
    fn push(&mut self, b: u8) {
        self.len += 1;
        if self.over.is_none() {
            if self.len > MAX_MESSAGE_BYTES {
                self.over = Some(Over::Size);
                self.line = Vec::new();
            } else {
                self.line.push(b);
            }
        }
        if self.id == Id::Reading {
            if self.id_raw.len() < MAX_ID_BYTES {
                self.id_raw.push(b);
            } else {
                self.id = Id::Unusable;
            }
        }
        if self.in_string {
            if let Some(key) = self.key.as_mut() {
                if key.len() < 8 && b != b'"' {
                    key.push(b);
                }
            }
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                if let Some(key) = self.key.take() {
                    self.last_key = key;
                }
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.expect_key = false;
                    self.key = Some(Vec::new());
                }
            }
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth > MAX_DEPTH && self.over.is_none() {
                    self.over = Some(Over::Depth);
                    self.line = Vec::new();
                }
                if self.depth == 1 && b == b'{' {
                    self.expect_key = true;
                }
            }
            b'}' | b']' => {
                if self.depth == 1 {
                    self.end_id();
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b':' if self.depth == 1 => match self.last_key.as_slice() {
                b"id" if self.id == Id::NotSeen => self.id = Id::Reading,
                b"result" | b"error" => self.is_response = true,
                b"method" => self.is_request = true,
                _ => {}
            },
            b',' if self.depth == 1 => {
                self.end_id();
                self.expect_key = true;
            }
            _ => {}
        }
    }

    /// The error answer to give now, if one is due and not given yet: over a bound,
    /// a response (not a request of the server's), with a usable id. `whole` says the
    /// line has ended (nothing more will tell a request from a response).
    fn answer(&mut self, whole: bool) -> Option<Vec<u8>> {
        let over = self.over?;
        let known = self.id == Id::Read && (self.is_response || whole);
        if self.answered || self.is_request || !known {
            return None;
        }
        // Decided: whatever the id is, this line gets no other answer.
        self.answered = true;
        let id: serde_json::Value = serde_json::from_slice(self.id_raw.trim_ascii()).ok()?;
        if !(id.is_number() || id.is_string()) {
            return None;
        }
        let answer = serde_json::json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": -32603, "message": over.message()}});
        let mut bytes = answer.to_string().into_bytes();
        bytes.push(b'\n');
        Some(bytes)
    }
}

/// Reads `server` (a server's stdout) and gives back what rmcp is to read: every line
/// within the bounds, and an error answer in place of a response over them.
pub fn filter(server: impl AsyncRead + Unpin + Send + 'static, name: String) -> DuplexStream {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    tokio::spawn(pump(server, ours, name));
    theirs
}

async fn pump(mut server: impl AsyncRead + Unpin, mut out: DuplexStream, name: String) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut scan = Scan::new();
    loop {
        let n = match server.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        for &b in &buf[..n] {
            if b != b'\n' {
                scan.push(b);
                if scan.over.is_some() && !scan.answered {
                    if let Some(answer) = scan.answer(false) {
                        if out.write_all(&answer).await.is_err() {
                            return;
                        }
                    }
                }
                continue;
            }
            let mut done = std::mem::replace(&mut scan, Scan::new());
            let sent = match done.over {
                None => {
                    done.line.push(b'\n');
                    out.write_all(&done.line).await
                }
                Some(over) => {
                    tracing::warn!(server = %name, bytes = done.len, "{}", over.message());
                    match done.answer(true) {
                        Some(answer) => out.write_all(&answer).await,
                        None => Ok(()),
                    }
                }
            };
            if sent.is_err() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(line: &[u8]) -> Scan {
        let mut s = Scan::new();
        for &b in line {
            s.push(b);
        }
        s
    }

    #[test]
    fn the_top_level_id_is_found_wherever_it_stands() {
        let mut s = scan(br#"{"jsonrpc":"2.0","result":{"id":9,"a":[1,{"id":8}]},"id":"x,}"}"#);
        assert_eq!(s.id, Id::Read);
        assert!(s.is_response && !s.is_request);
        s.over = Some(Over::Size);
        let answer: serde_json::Value = serde_json::from_slice(&s.answer(true).unwrap()).unwrap();
        assert_eq!(answer["id"], "x,}");
        assert!(answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("16 MiB"));
        let s = scan(br#"{"id" : 12 , "result":{}}"#);
        assert_eq!((s.id, s.id_raw.trim_ascii()), (Id::Read, &b"12"[..]));
    }

    #[test]
    fn depth_and_requests_are_told_apart() {
        let deep = [vec![b'['; 200], vec![b']'; 200]].concat();
        let mut s = scan(&[br#"{"id":1,"result":"#.as_slice(), &deep, b"}"].concat());
        assert_eq!(s.over, Some(Over::Depth));
        assert!(
            s.answer(true).is_some() && s.answer(true).is_none(),
            "answered once"
        );
        let mut request =
            scan(&[br#"{"id":1,"method":"x","params":"#.as_slice(), &deep, b"}"].concat());
        assert_eq!(request.over, Some(Over::Depth));
        assert!(request.answer(true).is_none());
        let fine = scan(br#"{"id":1,"result":[[[]]]}"#);
        assert_eq!((fine.over, fine.line.len()), (None, 24));
    }
}
