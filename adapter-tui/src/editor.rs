//! The input being typed: a multi-line text with a cursor, walking the history with
//! Up and Down (from the first or last line), and the edits the keys make. Pure
//! state: the terminal mode maps keys to these calls and draws [`Editor::lines`].

/// The text being typed and where the cursor is.
#[derive(Debug, Default)]
pub(crate) struct Editor {
    text: String,
    /// Byte offset of the cursor in `text` (always on a character boundary).
    cursor: usize,
    /// Position in the history while walking it (`None`: the person's own text).
    walking: Option<usize>,
    /// The person's own text, kept while walking the history.
    draft: String,
}

impl Editor {
    /// The text.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// Whether nothing is typed.
    pub(crate) fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Replaces the text, the cursor at its end.
    pub(crate) fn set(&mut self, text: &str) {
        self.text = text.to_owned();
        self.cursor = self.text.len();
    }

    /// Empties the editor and returns what was typed.
    pub(crate) fn take(&mut self) -> String {
        self.walking = None;
        self.draft.clear();
        self.cursor = 0;
        std::mem::take(&mut self.text)
    }

    /// Types `text` at the cursor.
    pub(crate) fn insert(&mut self, text: &str) {
        self.text.insert_str(self.cursor, text);
        self.cursor += text.len();
    }

    /// Enter: `true` when the input is complete; a trailing `\` instead becomes a
    /// new line.
    pub(crate) fn enter(&mut self) -> bool {
        if self.cursor == self.text.len() && self.text.ends_with('\\') {
            self.text.pop();
            self.cursor = self.text.len();
            self.insert("\n");
            return false;
        }
        true
    }

    /// Deletes the character before the cursor.
    pub(crate) fn backspace(&mut self) {
        if let Some(prev) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= prev.len_utf8();
            self.text.remove(self.cursor);
        }
    }

    /// Deletes the character under the cursor.
    pub(crate) fn delete(&mut self) {
        if self.cursor < self.text.len() {
            self.text.remove(self.cursor);
        }
    }

    /// Deletes the word before the cursor (Ctrl-W).
    pub(crate) fn delete_word(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end();
        let start = trimmed.rfind(char::is_whitespace).map_or(0, |at| {
            at + trimmed[at..].chars().next().map_or(1, char::len_utf8)
        });
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Moves the cursor one character left.
    pub(crate) fn left(&mut self) {
        if let Some(prev) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= prev.len_utf8();
        }
    }

    /// Moves the cursor one character right.
    pub(crate) fn right(&mut self) {
        if let Some(next) = self.text[self.cursor..].chars().next() {
            self.cursor += next.len_utf8();
        }
    }

    /// Moves the cursor to the start of its line.
    pub(crate) fn home(&mut self) {
        self.cursor = self.text[..self.cursor].rfind('\n').map_or(0, |at| at + 1);
    }

    /// Moves the cursor to the end of its line.
    pub(crate) fn end(&mut self) {
        self.cursor = self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |at| self.cursor + at);
    }

    /// Up: the line above, or from the first line the previous history entry.
    pub(crate) fn up(&mut self, history: &[String]) {
        if let Some(line_start) = self.text[..self.cursor].rfind('\n') {
            let column = self.text[line_start + 1..self.cursor].chars().count();
            let prev_start = self.text[..line_start].rfind('\n').map_or(0, |at| at + 1);
            self.cursor = offset_at(&self.text, prev_start, line_start, column);
            return;
        }
        let next = match self.walking {
            None if history.is_empty() => return,
            None => {
                self.draft = self.text.clone();
                history.len() - 1
            }
            Some(0) => return,
            Some(at) => at - 1,
        };
        self.walking = Some(next);
        self.set(&history[next]);
    }

    /// Down: the line below, or from the last line the next history entry (after
    /// the newest, the person's own text again).
    pub(crate) fn down(&mut self, history: &[String]) {
        if let Some(newline) = self.text[self.cursor..].find('\n') {
            let line_start = self.text[..self.cursor].rfind('\n').map_or(0, |at| at + 1);
            let column = self.text[line_start..self.cursor].chars().count();
            let next_start = self.cursor + newline + 1;
            let next_end = self.text[next_start..]
                .find('\n')
                .map_or(self.text.len(), |at| next_start + at);
            self.cursor = offset_at(&self.text, next_start, next_end, column);
            return;
        }
        match self.walking {
            None => {}
            Some(at) if at + 1 < history.len() => {
                self.walking = Some(at + 1);
                self.set(&history[at + 1]);
            }
            Some(_) => {
                self.walking = None;
                let draft = std::mem::take(&mut self.draft);
                self.set(&draft);
            }
        }
    }

    /// The lines of the text and the cursor as (line, characters before it).
    pub(crate) fn lines(&self) -> (Vec<&str>, (usize, usize)) {
        let lines: Vec<&str> = self.text.split('\n').collect();
        let before = &self.text[..self.cursor];
        let row = before.matches('\n').count();
        let line_start = before.rfind('\n').map_or(0, |at| at + 1);
        (lines, (row, self.text[line_start..self.cursor].chars().count()))
    }

    /// The text before the cursor (what a completion looks at).
    pub(crate) fn before_cursor(&self) -> &str {
        &self.text[..self.cursor]
    }
}

/// The byte offset of character `column` of the line `text[start..end]` (its end
/// when shorter).
fn offset_at(text: &str, start: usize, end: usize, column: usize) -> usize {
    text[start..end]
        .char_indices()
        .nth(column)
        .map_or(end, |(at, _)| start + at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trailing_backslash_continues_on_a_new_line() {
        let mut editor = Editor::default();
        editor.insert("first \\");
        assert!(!editor.enter());
        editor.insert("second");
        assert!(editor.enter());
        assert_eq!(editor.take(), "first \nsecond");
        assert!(editor.is_empty());
    }

    #[test]
    fn editing_keys_move_and_delete_by_character_and_word() {
        let mut editor = Editor::default();
        editor.insert("héllo wörld");
        editor.left();
        editor.backspace();
        assert_eq!(editor.text(), "héllo wörd");
        editor.delete_word();
        assert_eq!(editor.text(), "héllo d");
        editor.home();
        editor.delete();
        editor.end();
        editor.insert("!");
        assert_eq!(editor.text(), "éllo d!");
        let (lines, cursor) = editor.lines();
        assert_eq!((lines, cursor), (vec!["éllo d!"], (0, 7)));
    }

    #[test]
    fn up_and_down_walk_lines_then_the_history_and_keep_the_draft() {
        let history = vec!["old one".to_owned(), "old two".to_owned()];
        let mut editor = Editor::default();
        editor.insert("draft");
        editor.up(&history);
        assert_eq!(editor.text(), "old two");
        editor.up(&history);
        editor.up(&history);
        assert_eq!(editor.text(), "old one");
        editor.down(&history);
        assert_eq!(editor.text(), "old two");
        editor.down(&history);
        assert_eq!(editor.text(), "draft");

        let mut lines = Editor::default();
        lines.insert("abc\nde");
        lines.up(&history);
        assert_eq!(lines.lines().1, (0, 2));
        lines.down(&history);
        assert_eq!(lines.lines().1, (1, 2));
        assert_eq!(lines.text(), "abc\nde");
    }
}
