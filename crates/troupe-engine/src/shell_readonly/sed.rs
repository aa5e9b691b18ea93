//! Whether a sed script only prints and edits the stream: read as GNU sed reads it
//! (addresses, `!`, blocks, `s` and `y` with any delimiter, bracket expressions in
//! regexes where the delimiter does not end the regex), with every command that
//! reads or writes a file or runs one refused: `e`, `r`, `R`, `w`, `W`, the `e` and
//! `w` flags of `s`, and the text commands `a`, `i`, `c` and `v` (not needed for a
//! listing, and their text is read by rules of its own). Anything not understood is
//! refused too.

/// Why `script` is not a plain stream edit, or `None` when it is.
pub(super) fn script_problem(script: &str) -> Option<String> {
    let mut p = Reader {
        chars: script.chars().collect(),
        at: 0,
    };
    match p.script() {
        Ok(()) => None,
        Err(why) => Some(format!("the sed script `{script}` {why}")),
    }
}

struct Reader {
    chars: Vec<char>,
    at: usize,
}

type Step = Result<(), &'static str>;

impl Reader {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek();
        self.at += usize::from(c.is_some());
        c
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.at += 1;
        }
    }

    fn script(&mut self) -> Step {
        loop {
            while matches!(self.peek(), Some(' ' | '\t' | '\n' | ';')) {
                self.at += 1;
            }
            if self.peek().is_none() {
                return Ok(());
            }
            self.command()?;
        }
    }

    fn command(&mut self) -> Step {
        if self.peek() == Some('#') {
            while !matches!(self.next(), None | Some('\n')) {}
            return Ok(());
        }
        if self.address()? {
            self.skip_blanks();
            if self.peek() == Some(',') {
                self.at += 1;
                self.skip_blanks();
                if matches!(self.peek(), Some('+' | '~')) {
                    self.at += 1;
                }
                if !self.address()? {
                    return Err("has an address range without its end");
                }
            }
        }
        self.skip_blanks();
        while self.peek() == Some('!') {
            self.at += 1;
            self.skip_blanks();
        }
        let Some(c) = self.next() else {
            return Err("ends after an address");
        };
        match c {
            // A block's first command may follow at once (`/x/{p;q}`).
            '{' => return Ok(()),
            'p' | 'P' | 'd' | 'D' | 'n' | 'N' | 'g' | 'G' | 'h' | 'H' | 'x' | 'z' | 'F' | '='
            | '}' => {}
            'q' | 'Q' | 'l' | 'L' => self.number(),
            ':' | 'b' | 't' | 'T' => self.label()?,
            's' => self.substitute()?,
            'y' => self.transliterate()?,
            'e' | 'r' | 'R' | 'w' | 'W' => return Err("reads, writes or runs a file"),
            _ => return Err("has a command not known to be read-only"),
        }
        self.end_of_command()
    }

    fn end_of_command(&mut self) -> Step {
        self.skip_blanks();
        match self.peek() {
            None | Some(';' | '\n' | '}' | '#') => Ok(()),
            _ => Err("has text after a command"),
        }
    }

    /// An address if one starts here: `N`, `first~step`, `$`, `/re/`, `\cREc` with
    /// the `I` and `M` flags.
    fn address(&mut self) -> Result<bool, &'static str> {
        match self.peek() {
            Some(c) if c.is_ascii_digit() => {
                self.number();
                if self.peek() == Some('~') {
                    self.at += 1;
                    self.number();
                }
                Ok(true)
            }
            Some('$') => {
                self.at += 1;
                Ok(true)
            }
            Some('/') => {
                self.at += 1;
                self.regex('/')?;
                self.regex_flags();
                Ok(true)
            }
            Some('\\') => {
                self.at += 1;
                let delim = self.next().ok_or("ends inside an address")?;
                if delim == '\n' || delim == '\\' {
                    return Err("has an address with a bad delimiter");
                }
                self.regex(delim)?;
                self.regex_flags();
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn regex_flags(&mut self) {
        while matches!(self.peek(), Some('I' | 'M')) {
            self.at += 1;
        }
    }

    fn number(&mut self) {
        self.skip_blanks();
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
    }

    fn label(&mut self) -> Step {
        self.skip_blanks();
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            self.at += 1;
        }
        Ok(())
    }

    /// A regex up to the unescaped `delim`, which a bracket expression hides.
    fn regex(&mut self, delim: char) -> Step {
        loop {
            match self.next() {
                None | Some('\n') => return Err("has an unterminated regex"),
                Some('\\') => {
                    self.next().ok_or("ends inside a regex")?;
                }
                Some('[') => self.bracket()?,
                Some(c) if c == delim => return Ok(()),
                Some(_) => {}
            }
        }
    }

    /// The rest of a bracket expression (`[^]…]`, `[[:alpha:]/]`).
    fn bracket(&mut self) -> Step {
        if self.peek() == Some('^') {
            self.at += 1;
        }
        if self.peek() == Some(']') {
            self.at += 1;
        }
        loop {
            match self.next() {
                None | Some('\n') => return Err("has an unterminated bracket expression"),
                Some(']') => return Ok(()),
                Some('[') if matches!(self.peek(), Some(':' | '.' | '=')) => {
                    let kind = self.next().ok_or("ends inside a bracket expression")?;
                    loop {
                        match self.next() {
                            None | Some('\n') => return Err("has an unterminated class"),
                            Some(c) if c == kind && self.peek() == Some(']') => {
                                self.at += 1;
                                break;
                            }
                            Some(_) => {}
                        }
                    }
                }
                Some(_) => {}
            }
        }
    }

    /// Replacement text or a `y` set up to the unescaped `delim`.
    fn plain_part(&mut self, delim: char) -> Step {
        loop {
            match self.next() {
                None => return Err("has an unterminated command"),
                Some('\\') => {
                    self.next().ok_or("ends inside a command")?;
                }
                Some(c) if c == delim => return Ok(()),
                Some(_) => {}
            }
        }
    }

    fn delimiter(&mut self) -> Result<char, &'static str> {
        match self.next() {
            Some('\n' | '\\') | None => Err("has a command with a bad delimiter"),
            Some(c) => Ok(c),
        }
    }

    /// `s/re/replacement/flags` with the flags `g`, `p`, `i`, `I`, `m`, `M` and a
    /// number only.
    fn substitute(&mut self) -> Step {
        let delim = self.delimiter()?;
        self.regex(delim)?;
        self.plain_part(delim)?;
        while let Some(c) = self.peek() {
            match c {
                'g' | 'p' | 'i' | 'I' | 'm' | 'M' => self.at += 1,
                c if c.is_ascii_digit() => self.at += 1,
                'e' | 'w' => return Err("writes or runs a file (`s///e`, `s///w`)"),
                _ => break,
            }
        }
        Ok(())
    }

    fn transliterate(&mut self) -> Step {
        let delim = self.delimiter()?;
        self.plain_part(delim)?;
        self.plain_part(delim)
    }
}
