//! Keys and the mouse: what each key press, click and paste does to the app's state.

use super::*;

impl App {
    /// Opens a prompt holding `text`, the cursor after it.
    pub(super) fn open(&mut self, ask: Ask, text: &str) {
        self.mode = Mode::Prompt(Prompt::new(ask, text));
    }

    /// Opens a prompt offering `text` selected (the current filter, a file name): Enter
    /// takes it, typing replaces it, a cursor key keeps it to be edited.
    pub(super) fn offer(&mut self, ask: Ask, text: &str) {
        self.mode = Mode::Prompt(Prompt::offering(ask, text));
    }

    /// Opens a prompt holding the text that was just refused, the cursor after it, with
    /// the refusal said under it until the prompt is submitted again or closed.
    fn reopen_refused(&mut self, ask: Ask, text: &str, error: String) {
        let mut p = Prompt::new(ask, text);
        p.note = Some((error, true));
        self.mode = Mode::Prompt(p);
    }

    /// Handles one key press.
    pub fn key(&mut self, k: KeyEvent) {
        self.message = None;
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        if let Mode::Prompt(p) = &mut self.mode {
            let history = self.history.get(&p.ask).map(Vec::as_slice).unwrap_or(&[]);
            match p.key(k, history) {
                Edit::Editing => {}
                Edit::Cancel => self.mode = Mode::Normal,
                Edit::Submit(text) => {
                    let ask = p.ask;
                    self.mode = Mode::Normal;
                    let h = self.history.entry(ask).or_default();
                    if !text.trim().is_empty() && h.last() != Some(&text) {
                        h.push(text.clone());
                        if h.len() > 100 {
                            h.remove(0);
                        }
                    }
                    self.submit(ask, &text);
                }
            }
            return;
        }
        if ctrl && k.code == KeyCode::Char('c') {
            self.quit = true;
            return;
        }
        if self.mode == Mode::Columns {
            return self.column_key(k);
        }
        if self.help {
            match k.code {
                KeyCode::Down | KeyCode::Char('j') => self.help_scroll += 1,
                KeyCode::Up | KeyCode::Char('k') => self.help_scroll = self.help_scroll.saturating_sub(1),
                KeyCode::PageDown | KeyCode::Char(' ') => self.help_scroll += 10,
                KeyCode::PageUp => self.help_scroll = self.help_scroll.saturating_sub(10),
                KeyCode::Home => self.help_scroll = 0,
                KeyCode::Esc | KeyCode::Char('?') | KeyCode::Char('q') | KeyCode::Enter => self.help = false,
                // Any other key is not a reason to lose the help.
                _ => {}
            }
            return;
        }
        if let Some(b) = super::bindings::binding(self, &k) {
            (b.act)(self, &k);
        }
    }

    /// A page of the list.
    pub(super) fn page(&self) -> isize {
        self.list_height.max(1) as isize
    }

    /// `w`: asks where to write the marked packets, else the shown ones.
    pub(super) fn ask_file(&mut self) {
        let name = if self.marks.is_empty() {
            "gpcap-shown.pcapng"
        } else {
            "gpcap-marked.pcapng"
        };
        let dir = std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        let mut p = Prompt::offering(Ask::Write, name);
        p.note = Some((format!("a name without a directory is written in {dir}"), false));
        self.mode = Mode::Prompt(p);
    }

    pub(super) fn tab_index(&self) -> usize {
        Tab::ALL.iter().position(|t| *t == self.tab).unwrap_or(0)
    }

    pub(super) fn submit(&mut self, ask: Ask, text: &str) {
        match ask {
            // A filter that does not parse stays in its prompt, to be mended rather than
            // typed again (and the keys that follow are not taken as commands).
            Ask::Filter => match self.parse_filter(text) {
                Err(e) => self.reopen_refused(Ask::Filter, text, format!("filter: {e}")),
                Ok(_) => self.apply_filter(text),
            },
            Ask::Goto => match text.trim().parse::<u64>() {
                Ok(n) => {
                    self.tab = Tab::Packets;
                    self.goto_frame(n, true);
                    self.load_detail();
                }
                Err(_) => self.message = Some((format!("`{text}` is not a frame number"), true)),
            },
            Ask::Find => match Filter::parse(text, self.program.as_deref()) {
                Ok(f) if f.needs_engine() => {
                    self.message = Some((
                        "find reads the list's columns (type, seq, size, flags, flow); filter with / on dissected fields".into(),
                        true,
                    ))
                }
                Ok(f) if f.is_all() => self.find = None,
                Ok(mut f) => {
                    if let Some(first) = self.index.rows.first() {
                        f.start(first.ts_ns);
                    }
                    self.find = Some(f);
                    self.find_next(1);
                }
                Err(e) => self.reopen_refused(Ask::Find, text, format!("find: {e}")),
            },
            Ask::Write => self.ask_write(text.trim()),
            Ask::Replace => match (text.trim(), self.pending_write.take()) {
                ("y" | "Y" | "yes", Some(to)) => self.write(&to),
                _ => self.message = Some(("not written: the file was kept".into(), false)),
            },
        }
    }

    pub(super) fn column_key(&mut self, k: KeyEvent) {
        match k.code {
            KeyCode::Up | KeyCode::Char('k') => self.column_cursor = self.column_cursor.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => {
                self.column_cursor = (self.column_cursor + 1).min(Column::ALL.len() - 1)
            }
            KeyCode::Char(' ') | KeyCode::Enter => {
                let c = Column::ALL[self.column_cursor];
                if !self.hidden.remove(&c) {
                    self.hidden.insert(c);
                }
            }
            KeyCode::Esc | KeyCode::Char('c') | KeyCode::Char('q') => self.mode = Mode::Normal,
            _ => {}
        }
    }

    /// Pasted text, into the prompt being edited (whole, or refused when it would not fit).
    pub fn paste(&mut self, text: &str) {
        if let Mode::Prompt(p) = &mut self.mode {
            p.paste(text);
        }
    }

    /// Handles a mouse event: clicks select tabs, rows and fields; the wheel scrolls.
    pub fn mouse(&mut self, m: MouseEvent) {
        let at = Position::new(m.column, m.row);
        match m.kind {
            MouseEventKind::ScrollDown => self.move_selection(3),
            MouseEventKind::ScrollUp => self.move_selection(-3),
            MouseEventKind::Down(MouseButton::Left) => {
                self.message = None;
                if self.areas.tabs.contains(at) {
                    // "1 Packets│2 Flows│…": each title and its divider.
                    let mut x = self.areas.tabs.x;
                    for (i, t) in Tab::ALL.iter().enumerate() {
                        let pad = crate::ui::tabs::pad(self.areas.tabs.width);
                        let w = format!("{pad}{} {}{pad}", i + 1, t.title()).chars().count() as u16 + 1;
                        if m.column < x + w {
                            self.tab = *t;
                            return;
                        }
                        x += w;
                    }
                } else if self.tab == Tab::Packets && self.areas.list.contains(at) {
                    self.focus = Focus::List;
                    let pos = self.scroll + (m.row - self.areas.list.y) as usize;
                    self.select(pos.min(self.view.len().saturating_sub(1)));
                } else if self.tab == Tab::Packets && self.areas.tree.contains(at) {
                    let vis = self.visible_fields();
                    let k = self.tree_scroll + (m.row - self.areas.tree.y) as usize;
                    if let Some(&i) = vis.get(k) {
                        self.focus = Focus::Tree;
                        self.field = i;
                    }
                } else if self.tab == Tab::Flows && self.areas.flows.contains(at) {
                    self.flows.selected = self.flows.scroll + (m.row - self.areas.flows.y) as usize;
                } else if self.tab == Tab::Reassembly && self.areas.frags.contains(at) {
                    self.frags.selected = self.frags.scroll + (m.row - self.areas.frags.y) as usize;
                }
            }
            _ => {}
        }
    }
}
