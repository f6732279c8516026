//! A one-line prompt with the editing keys of a shell (readline's emacs keys) and a
//! history per kind of prompt.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What a prompt asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ask {
    Filter,
    Find,
    Goto,
    Write,
    /// Confirms replacing the file `w` was asked to write.
    Replace,
}

impl Ask {
    pub fn label(self) -> &'static str {
        match self {
            Ask::Filter => "filter",
            Ask::Find => "find",
            Ask::Goto => "go to frame",
            Ask::Write => "write pcapng to",
            Ask::Replace => "the file exists; replace it? (y/n)",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    pub ask: Ask,
    text: Vec<char>,
    /// Cursor position, in characters.
    pub cursor: usize,
    /// Position in the history while browsing it (Up/Down); None when editing new text.
    browsing: Option<usize>,
    /// Text was refused because the prompt is full (said on the prompt's line).
    pub refused: bool,
    /// The text offered (the current filter, a file name) is selected: the first
    /// character typed or pasted replaces it, a deleting key clears it, and a key that
    /// moves the cursor keeps it to be edited — as a dialog's selected default.
    pub selected: bool,
    /// What the prompt says under its line while open: the last submit's error (`true`)
    /// or a note (`false`).
    pub note: Option<(String, bool)>,
}

/// What a key did to the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    Editing,
    Cancel,
    Submit(String),
}

/// The most a prompt holds: typing more is refused, and the prompt says so, rather than
/// cutting what was pasted.
pub const MAX_CHARS: usize = 4096;

impl Prompt {
    /// A prompt holding `text`, the cursor after it (typing appends).
    pub fn new(ask: Ask, text: &str) -> Self {
        let text: Vec<char> = text.chars().take(MAX_CHARS).collect();
        Prompt {
            ask,
            cursor: text.len(),
            text,
            browsing: None,
            refused: false,
            selected: false,
            note: None,
        }
    }

    /// A prompt offering `text` selected: Enter takes it, typing replaces it.
    pub fn offering(ask: Ask, text: &str) -> Self {
        let mut p = Prompt::new(ask, text);
        p.selected = !p.text.is_empty();
        p
    }

    /// Characters held.
    pub fn len(&self) -> usize {
        self.text.len()
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Inserts pasted text whole at the cursor, or nothing when it does not fit (newlines
    /// read as spaces).
    pub fn paste(&mut self, s: &str) {
        if std::mem::take(&mut self.selected) {
            self.set("");
        }
        let add: Vec<char> = s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
        if self.text.len() + add.len() > MAX_CHARS {
            self.refused = true;
            return;
        }
        self.cursor = self.cursor.min(self.text.len());
        self.text.splice(self.cursor..self.cursor, add.iter().copied());
        self.cursor += add.len();
    }

    pub fn text(&self) -> String {
        self.text.iter().collect()
    }

    /// The text before and after the cursor, for drawing it.
    pub fn split(&self) -> (String, String) {
        let at = self.cursor.min(self.text.len());
        (self.text[..at].iter().collect(), self.text[at..].iter().collect())
    }

    fn set(&mut self, s: &str) {
        self.text = s.chars().take(MAX_CHARS).collect();
        self.cursor = self.text.len();
    }

    /// Start of the word before the cursor (Ctrl-W, Alt-B).
    fn word_start(&self) -> usize {
        let mut i = self.cursor;
        while i > 0 && self.text[i - 1].is_whitespace() {
            i -= 1;
        }
        while i > 0 && !self.text[i - 1].is_whitespace() {
            i -= 1;
        }
        i
    }

    fn word_end(&self) -> usize {
        let mut i = self.cursor;
        while i < self.text.len() && self.text[i].is_whitespace() {
            i += 1;
        }
        while i < self.text.len() && !self.text[i].is_whitespace() {
            i += 1;
        }
        i
    }

    /// Applies a key; `history` is this prompt's, oldest first.
    pub fn key(&mut self, k: KeyEvent, history: &[String]) -> Edit {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        let alt = k.modifiers.contains(KeyModifiers::ALT);
        self.refused = false;
        self.cursor = self.cursor.min(self.text.len());
        if std::mem::take(&mut self.selected) {
            match k.code {
                // Replaced by what is typed, or cleared by a key that deletes.
                KeyCode::Char(_) if !ctrl && !alt => self.set(""),
                KeyCode::Backspace | KeyCode::Delete => {
                    self.set("");
                    return Edit::Editing;
                }
                KeyCode::Char('u' | 'k' | 'w' | 'd') if ctrl => {
                    self.set("");
                    return Edit::Editing;
                }
                // Anything else (moving, history, Enter, Esc) keeps the text.
                _ => {}
            }
        }
        match k.code {
            KeyCode::Esc => return Edit::Cancel,
            KeyCode::Char('c' | 'g') if ctrl => return Edit::Cancel,
            KeyCode::Enter => return Edit::Submit(self.text()),
            KeyCode::Char('a') if ctrl => self.cursor = 0,
            KeyCode::Char('e') if ctrl => self.cursor = self.text.len(),
            KeyCode::Char('b') if ctrl => self.cursor = self.cursor.saturating_sub(1),
            KeyCode::Char('f') if ctrl => self.cursor = (self.cursor + 1).min(self.text.len()),
            KeyCode::Char('b') if alt => self.cursor = self.word_start(),
            KeyCode::Char('f') if alt => self.cursor = self.word_end(),
            KeyCode::Char('u') if ctrl => {
                self.text.drain(..self.cursor);
                self.cursor = 0;
            }
            KeyCode::Char('k') if ctrl => self.text.truncate(self.cursor),
            KeyCode::Char('w') if ctrl => {
                let from = self.word_start();
                self.text.drain(from..self.cursor);
                self.cursor = from;
            }
            KeyCode::Char('d') if alt => {
                let to = self.word_end();
                self.text.drain(self.cursor..to);
            }
            KeyCode::Char('d') if ctrl && self.cursor < self.text.len() => {
                self.text.remove(self.cursor);
            }
            KeyCode::Char('p') if ctrl => self.history_step(history, -1),
            KeyCode::Char('n') if ctrl => self.history_step(history, 1),
            KeyCode::Char(c) if !ctrl && !alt && self.text.len() < MAX_CHARS => {
                self.text.insert(self.cursor, c);
                self.cursor += 1;
            }
            KeyCode::Char(_) if !ctrl && !alt => self.refused = true,
            KeyCode::Backspace if alt => {
                let from = self.word_start();
                self.text.drain(from..self.cursor);
                self.cursor = from;
            }
            KeyCode::Backspace if self.cursor > 0 => {
                self.cursor -= 1;
                self.text.remove(self.cursor);
            }
            KeyCode::Delete if self.cursor < self.text.len() => {
                self.text.remove(self.cursor);
            }
            KeyCode::Left if ctrl => self.cursor = self.word_start(),
            KeyCode::Right if ctrl => self.cursor = self.word_end(),
            KeyCode::Left => self.cursor = self.cursor.saturating_sub(1),
            KeyCode::Right => self.cursor = (self.cursor + 1).min(self.text.len()),
            KeyCode::Home => self.cursor = 0,
            KeyCode::End => self.cursor = self.text.len(),
            KeyCode::Up => self.history_step(history, -1),
            KeyCode::Down => self.history_step(history, 1),
            _ => {}
        }
        Edit::Editing
    }

    fn history_step(&mut self, history: &[String], delta: isize) {
        if history.is_empty() {
            return;
        }
        let next = match (self.browsing, delta < 0) {
            (None, true) => Some(history.len() - 1),
            (None, false) => None,
            (Some(i), true) => Some(i.saturating_sub(1)),
            (Some(i), false) if i + 1 < history.len() => Some(i + 1),
            (Some(_), false) => {
                self.browsing = None;
                self.set("");
                return;
            }
        };
        if let Some(i) = next {
            self.browsing = Some(i);
            let s = history[i].clone();
            self.set(&s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(p: &mut Prompt, code: KeyCode, m: KeyModifiers, h: &[String]) -> Edit {
        p.key(KeyEvent::new(code, m), h)
    }

    fn typed(p: &mut Prompt, s: &str) {
        for c in s.chars() {
            press(p, KeyCode::Char(c), KeyModifiers::NONE, &[]);
        }
    }

    #[test]
    fn editing_keys() {
        let none = KeyModifiers::NONE;
        let ctrl = KeyModifiers::CONTROL;
        let mut p = Prompt::new(Ask::Filter, "");
        typed(&mut p, "type == scene && seq > 3");
        press(&mut p, KeyCode::Char('w'), ctrl, &[]);
        assert_eq!(p.text(), "type == scene && seq > ");
        press(&mut p, KeyCode::Char('a'), ctrl, &[]);
        press(&mut p, KeyCode::Char('!'), none, &[]);
        assert_eq!(p.text(), "!type == scene && seq > ");
        press(&mut p, KeyCode::Right, ctrl, &[]);
        assert_eq!(p.split().0, "!type");
        press(&mut p, KeyCode::Char('k'), ctrl, &[]);
        assert_eq!(p.text(), "!type");
        press(&mut p, KeyCode::Left, none, &[]);
        press(&mut p, KeyCode::Char('u'), ctrl, &[]);
        assert_eq!((p.text().as_str(), p.cursor), ("e", 0));
        press(&mut p, KeyCode::Delete, none, &[]);
        assert_eq!(p.text(), "");
        assert_eq!(press(&mut p, KeyCode::Esc, none, &[]), Edit::Cancel);
    }

    /// An offered text is selected: typing replaces it (not `gpcap-marked.pcapngmarked…`),
    /// Enter takes it as it is, and moving the cursor keeps it to be edited.
    #[test]
    fn offered_text_is_replaced_by_typing_and_kept_by_moving() {
        let none = KeyModifiers::NONE;
        let mut p = Prompt::offering(Ask::Write, "gpcap-marked.pcapng");
        typed(&mut p, "x.pcapng");
        assert_eq!(p.text(), "x.pcapng");
        let mut p = Prompt::offering(Ask::Write, "gpcap-marked.pcapng");
        assert_eq!(
            press(&mut p, KeyCode::Enter, none, &[]),
            Edit::Submit("gpcap-marked.pcapng".into())
        );
        let mut p = Prompt::offering(Ask::Filter, "late");
        press(&mut p, KeyCode::End, none, &[]);
        typed(&mut p, " && dup");
        assert_eq!(p.text(), "late && dup");
        let mut p = Prompt::offering(Ask::Filter, "late");
        press(&mut p, KeyCode::Backspace, none, &[]);
        assert_eq!(p.text(), "");
        let mut p = Prompt::offering(Ask::Filter, "late");
        p.paste("gap");
        assert_eq!(p.text(), "gap");
        // Mended after an error: not selected, typing appends.
        let mut p = Prompt::new(Ask::Filter, "sizee > 100");
        press(&mut p, KeyCode::Home, none, &[]);
        press(&mut p, KeyCode::Right, none, &[]);
        press(&mut p, KeyCode::Right, none, &[]);
        press(&mut p, KeyCode::Right, none, &[]);
        press(&mut p, KeyCode::Right, none, &[]);
        press(&mut p, KeyCode::Delete, none, &[]);
        assert_eq!(p.text(), "size > 100");
    }

    #[test]
    fn history_walks_back_and_forth() {
        let h = vec!["frag".to_string(), "crc.fail".to_string()];
        let mut p = Prompt::new(Ask::Filter, "");
        press(&mut p, KeyCode::Up, KeyModifiers::NONE, &h);
        assert_eq!(p.text(), "crc.fail");
        press(&mut p, KeyCode::Up, KeyModifiers::NONE, &h);
        press(&mut p, KeyCode::Up, KeyModifiers::NONE, &h);
        assert_eq!(p.text(), "frag");
        press(&mut p, KeyCode::Down, KeyModifiers::NONE, &h);
        assert_eq!(p.text(), "crc.fail");
        press(&mut p, KeyCode::Down, KeyModifiers::NONE, &h);
        assert_eq!(p.text(), "");
        assert_eq!(
            press(&mut p, KeyCode::Enter, KeyModifiers::NONE, &h),
            Edit::Submit(String::new())
        );
    }
}
