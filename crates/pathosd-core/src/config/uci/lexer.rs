//! The words of UCI text, as libuci's parser reads them (openwrt/uci
//! file.c): statements split at line ends and `;`, comments, quoting and
//! continuations, each word with the line libuci would report for it.

use super::UciError;
use std::borrow::Cow;

/// The line libuci reports for a problem found at byte `pos`: the lines it
/// has read so far. libuci reads whole lines (fgets) and counts one per line
/// that ends with a newline, so this is the number of newlines up to the end
/// of the line holding `pos` — one less on a last line without a newline (0
/// for a one-line file without one), and for an unterminated quote the
/// newlines of the whole file (libuci reads to the end looking for the
/// closing quote). `newlines_before` is the count before `pos`; `last_nl`
/// the offset of the text's last newline.
fn uci_line(newlines_before: usize, last_nl: Option<usize>, pos: usize) -> usize {
    newlines_before + usize::from(last_nl.is_some_and(|l| l >= pos))
}

fn inline_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c')
}

/// One word of a statement: its text (borrowed from the file when it is one
/// piece without escapes, as nearly every value is) and the line libuci
/// would report for a problem found at its end.
pub(crate) struct Word<'a> {
    pub text: Cow<'a, str>,
    pub line: usize,
}

/// A word being read: the file's text while it is one piece, a copy once
/// pieces are joined.
struct WordBuf<'a> {
    one: Option<&'a str>,
    joined: Option<String>,
}

impl<'a> WordBuf<'a> {
    fn push(&mut self, piece: &'a str) {
        match (&mut self.joined, self.one) {
            (Some(j), _) => j.push_str(piece),
            (None, None) => self.one = Some(piece),
            (None, Some(first)) => {
                let mut j = String::with_capacity(first.len() + piece.len());
                j.push_str(first);
                j.push_str(piece);
                self.joined = Some(j);
            }
        }
    }

    fn finish(self) -> Cow<'a, str> {
        match (self.joined, self.one) {
            (Some(j), _) => Cow::Owned(j),
            (None, Some(one)) => Cow::Borrowed(one),
            (None, None) => Cow::Borrowed(""),
        }
    }
}

/// A statement's words, the line it starts on (for the places errors
/// name) and the line libuci would report for a problem found at its end.
pub(crate) struct Statement<'a> {
    pub start_line: usize,
    pub words: Vec<Word<'a>>,
    pub end_line: usize,
}

/// Reads statements from UCI text, from any statement boundary on.
#[derive(Clone)]
pub(crate) struct Lexer<'a> {
    text: &'a str,
    pos: usize,
    /// 1-based line of `pos`.
    line: usize,
    last_nl: Option<usize>,
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(text: &'a str) -> Lexer<'a> {
        Lexer::at(text, 0, 1)
    }

    /// A lexer that starts at byte `pos`, on line `line` (a place an
    /// earlier lexer of the same text reported with [`Lexer::place`]).
    pub(crate) fn at(text: &'a str, pos: usize, line: usize) -> Lexer<'a> {
        Lexer {
            text,
            pos: pos.min(text.len()),
            line,
            last_nl: text.rfind('\n'),
        }
    }

    /// Where the lexer is: byte offset and line.
    pub(crate) fn place(&self) -> (usize, usize) {
        (self.pos, self.line)
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<u8> {
        self.text.as_bytes().get(self.pos + ahead).copied()
    }

    /// The line libuci would report for a problem found here.
    fn uci_line(&self) -> usize {
        uci_line(self.line - 1, self.last_nl, self.pos)
    }

    /// Moves past `n` bytes (not splitting a character), counting lines.
    fn advance(&mut self, n: usize) -> &'a str {
        let end = (self.pos + n).min(self.text.len());
        let s = &self.text[self.pos..end];
        self.line += s.bytes().filter(|b| *b == b'\n').count();
        self.pos = end;
        s
    }

    /// The length of a line break at `pos + ahead` (`\n` or `\r\n`), if any.
    fn line_break_at(&self, ahead: usize) -> Option<usize> {
        match (self.peek_at(ahead), self.peek_at(ahead + 1)) {
            (Some(b'\n'), _) => Some(1),
            (Some(b'\r'), Some(b'\n')) => Some(2),
            _ => None,
        }
    }

    /// The byte length of the character at `pos`.
    fn char_len(&self) -> usize {
        self.text[self.pos..]
            .chars()
            .next()
            .map_or(0, char::len_utf8)
    }

    /// The next statement; None at the end of the text.
    pub(crate) fn statement(&mut self) -> Result<Option<Statement<'a>>, UciError> {
        let mut words: Vec<Word<'a>> = Vec::new();
        let mut start_line = self.line;
        loop {
            match self.peek() {
                None => {
                    let end_line = self.uci_line();
                    return Ok((!words.is_empty()).then_some(Statement {
                        start_line,
                        words,
                        end_line,
                    }));
                }
                Some(b'\n') | Some(b';') => {
                    let end_line = self.uci_line();
                    self.advance(1);
                    if !words.is_empty() {
                        return Ok(Some(Statement {
                            start_line,
                            words,
                            end_line,
                        }));
                    }
                }
                Some(b'#') => {
                    let n = self.text[self.pos..]
                        .find('\n')
                        .unwrap_or(self.text.len() - self.pos);
                    self.advance(n);
                }
                Some(c) if inline_space(c) => {
                    self.advance(1);
                }
                Some(b'\\') if words.is_empty() && self.line_break_at(1).is_some() => {
                    // libuci reads the command up to a space or tab, so a
                    // line that starts with a continuation is a command
                    // named "\" and a newline.
                    return Err(UciError {
                        line: self.uci_line(),
                        message:
                            "invalid command \"\\\" (expected package, config, option or list)"
                                .into(),
                    });
                }
                Some(_) => {
                    if words.is_empty() {
                        start_line = self.line;
                    }
                    let text = self.word()?;
                    words.push(Word {
                        text,
                        line: self.uci_line(),
                    });
                }
            }
        }
    }

    /// Reads adjacent pieces until space, `;`, `#` or the line ends. A
    /// backslash and a line break are dropped, and the word goes on only if
    /// no space follows (libuci's parse_str): so a continuation before a
    /// word gives an empty word, as in libuci.
    fn word(&mut self) -> Result<Cow<'a, str>, UciError> {
        let mut w = WordBuf {
            one: None,
            joined: None,
        };
        loop {
            match self.peek() {
                None | Some(b'\n') | Some(b';') | Some(b'#') => break,
                Some(c) if inline_space(c) => break,
                Some(b'\'') => self.single_quoted(&mut w)?,
                Some(b'"') => self.double_quoted(&mut w)?,
                Some(b'\\') => {
                    self.advance(1);
                    if let Some(n) = self.line_break_at(0) {
                        self.advance(n);
                        continue;
                    }
                    let n = self.char_len();
                    w.push(self.advance(n));
                }
                Some(_) => {
                    let rest = &self.text.as_bytes()[self.pos..];
                    let n = rest
                        .iter()
                        .position(|&c| {
                            matches!(c, b'\n' | b';' | b'#' | b'\'' | b'"' | b'\\')
                                || inline_space(c)
                        })
                        .unwrap_or(rest.len());
                    w.push(self.advance(n));
                }
            }
        }
        Ok(w.finish())
    }

    /// libuci reads to the end of the file looking for the closing quote.
    fn unterminated(&mut self, q: char) -> UciError {
        self.advance(self.text.len() - self.pos);
        UciError {
            line: self.uci_line(),
            message: format!("unterminated {q} quote"),
        }
    }

    /// A single-quoted piece: everything up to the next `'`, literally.
    fn single_quoted(&mut self, w: &mut WordBuf<'a>) -> Result<(), UciError> {
        self.advance(1);
        match self.text[self.pos..].find('\'') {
            Some(n) => {
                w.push(self.advance(n));
                self.advance(1);
                Ok(())
            }
            None => Err(self.unterminated('\'')),
        }
    }

    /// A double-quoted piece: a backslash takes the next character
    /// literally or, before a line break, joins the lines.
    fn double_quoted(&mut self, w: &mut WordBuf<'a>) -> Result<(), UciError> {
        self.advance(1);
        loop {
            let rest = &self.text.as_bytes()[self.pos..];
            let Some(n) = rest.iter().position(|&c| c == b'"' || c == b'\\') else {
                return Err(self.unterminated('"'));
            };
            if n > 0 {
                w.push(self.advance(n));
            }
            if self.peek() == Some(b'"') {
                self.advance(1);
                return Ok(());
            }
            self.advance(1);
            if let Some(n) = self.line_break_at(0) {
                self.advance(n);
                continue;
            }
            let n = self.char_len();
            if n == 0 {
                return Err(self.unterminated('"'));
            }
            w.push(self.advance(n));
        }
    }
}
