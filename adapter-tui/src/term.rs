//! The terminal as the interactive mode paints it: raw mode without the alternate
//! screen (the conversation goes to the terminal's own scrollback), styled lines,
//! the answer streamed with each line re-drawn as Markdown once complete, and the
//! input area at the bottom, erased and drawn again as it changes.
//!
//! Only relative cursor moves are used, so output that scrolls the screen never
//! breaks a redraw. Every way out goes through [`restore`] (the chat's own exit, and
//! the host's panic hook), which undoes exactly what [`Term::enter`] did.

use std::io::{self, Stdout, Write as _};
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::cursor::{MoveToColumn, MoveUp, Show};
use crossterm::event::{DisableBracketedPaste, EnableBracketedPaste};
use crossterm::style::{Attribute, Color, Print, ResetColor, SetAttribute, SetForegroundColor};
use crossterm::terminal::{Clear, ClearType, disable_raw_mode, enable_raw_mode};
use crossterm::{execute, queue};
use unicode_width::UnicodeWidthStr as _;

use crate::markdown::Markdown;
use crate::style::{Line, Style, printable};

/// Whether [`Term::enter`] changed the terminal and [`restore`] has not undone it.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Undoes [`Term::enter`] once: bracketed paste off, colours reset, cursor shown,
/// raw mode off (crossterm restores the saved settings). Nothing when not entered.
pub(crate) fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let mut out = io::stdout();
        let _ = execute!(out, DisableBracketedPaste, ResetColor, Show);
        let _ = disable_raw_mode();
    }
}

/// What the input area shows.
#[derive(Debug, Default)]
pub(crate) struct Prompt<'a> {
    /// The marker of the first line (`› `, or a field's name).
    pub(crate) marker: &'a str,
    /// The lines typed and the cursor (line, characters before it).
    pub(crate) lines: (Vec<&'a str>, (usize, usize)),
    /// Lines under the input (status, completions), dim.
    pub(crate) below: Vec<Line>,
}

/// The interactive terminal.
pub(crate) struct Term {
    out: Stdout,
    /// Text of the answer's unfinished line, printed as it came.
    partial: String,
    markdown: Markdown,
    /// Rows between the first row of the drawn input area and the cursor; `None`
    /// when no input area is drawn.
    prompt_rows: Option<u16>,
}

impl Term {
    /// Raw mode and bracketed paste on (restored by [`Term::leave`] or [`restore`]).
    ///
    /// # Errors
    /// The terminal refused raw mode.
    pub(crate) fn enter() -> io::Result<Self> {
        enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        let mut out = io::stdout();
        execute!(out, EnableBracketedPaste)?;
        Ok(Self {
            out,
            partial: String::new(),
            markdown: Markdown::default(),
            prompt_rows: None,
        })
    }

    /// Leaves the terminal as it was found.
    pub(crate) fn leave(mut self) {
        self.erase_prompt();
        self.end_text();
        let _ = self.out.flush();
        restore();
    }

    /// The terminal's width in cells (80 when unknown).
    fn cols() -> usize {
        crossterm::terminal::size().map_or(80, |(cols, _)| usize::from(cols.max(1)))
    }

    /// Rows a run of `width` cells takes, from the first column.
    fn rows(width: usize, cols: usize) -> usize {
        width.saturating_sub(1) / cols + 1
    }

    /// Paints whole lines (ending an unfinished answer line first).
    pub(crate) fn lines(&mut self, lines: &[Line]) {
        self.erase_prompt();
        self.end_text();
        for line in lines {
            self.paint(line);
            let _ = queue!(self.out, Print("\r\n"));
        }
        let _ = self.out.flush();
    }

    /// Streams a piece of the answer: complete lines are drawn again as Markdown.
    pub(crate) fn text(&mut self, delta: &str) {
        self.erase_prompt();
        for piece in delta.split_inclusive('\n') {
            match piece.strip_suffix('\n') {
                Some(rest) => {
                    self.partial.push_str(rest);
                    self.finish_line();
                }
                None => {
                    let _ = queue!(self.out, Print(printable(piece)));
                    self.partial.push_str(piece);
                }
            }
        }
        let _ = self.out.flush();
    }

    /// Ends an unfinished answer line (at a note, an ask, the end of the run).
    pub(crate) fn end_text(&mut self) {
        if !self.partial.is_empty() {
            self.finish_line();
            let _ = self.out.flush();
        }
    }

    /// Erases the raw unfinished line and paints it as Markdown, then a new line.
    fn finish_line(&mut self) {
        let cols = Self::cols();
        let printed = printable(&self.partial).width();
        if printed > 0 {
            let up = Self::rows(printed, cols) - 1;
            if up > 0 {
                let _ = queue!(self.out, MoveUp(to_u16(up)));
            }
            let _ = queue!(self.out, MoveToColumn(0), Clear(ClearType::FromCursorDown));
        }
        let line = self.markdown.line(&std::mem::take(&mut self.partial));
        self.paint(&line);
        let _ = queue!(self.out, Print("\r\n"));
    }

    /// Draws the input area below the output (erasing the last one first) and puts
    /// the cursor where the person types.
    pub(crate) fn prompt(&mut self, prompt: &Prompt<'_>) {
        self.erase_prompt();
        self.end_text();
        let cols = Self::cols();
        let (lines, (cursor_line, cursor_chars)) = &prompt.lines;
        let indent = " ".repeat(prompt.marker.width());
        let mut row = 0usize;
        let mut cursor = (0usize, 0usize);
        for (n, text) in lines.iter().enumerate() {
            let marker = if n == 0 { prompt.marker } else { indent.as_str() };
            let text = printable(text);
            if n == *cursor_line {
                let before: String = text.chars().take(*cursor_chars).collect();
                let at = marker.width() + before.width();
                cursor = (row + at / cols, at % cols);
            }
            let _ = queue!(
                self.out,
                SetForegroundColor(Color::Cyan),
                Print(marker),
                ResetColor,
                Print(&text)
            );
            row += Self::rows(marker.width() + text.width(), cols);
            let _ = queue!(self.out, Print("\r\n"));
        }
        for line in &prompt.below {
            // Cut to the width so a status line never wraps (it is redrawn often).
            let cut = Line::new(Style::Dim, clip_width(&line.text(), cols.saturating_sub(1)));
            self.paint(&cut);
            let _ = queue!(self.out, Print("\r\n"));
            row += 1;
        }
        // The cursor is now on the row after the area: go back to the typing place.
        let up = row.saturating_sub(cursor.0);
        if up > 0 {
            let _ = queue!(self.out, MoveUp(to_u16(up)));
        }
        let _ = queue!(self.out, MoveToColumn(to_u16(cursor.1)));
        self.prompt_rows = Some(to_u16(cursor.0));
        let _ = self.out.flush();
    }

    /// Erases the drawn input area; the cursor ends where it started.
    pub(crate) fn erase_prompt(&mut self) {
        if let Some(rows) = self.prompt_rows.take() {
            if rows > 0 {
                let _ = queue!(self.out, MoveUp(rows));
            }
            let _ = queue!(self.out, MoveToColumn(0), Clear(ClearType::FromCursorDown));
            let _ = self.out.flush();
        }
    }

    /// Queues one line's spans in their styles (no newline).
    fn paint(&mut self, line: &Line) {
        for span in &line.spans {
            let (color, attribute) = look(span.style);
            if let Some(color) = color {
                let _ = queue!(self.out, SetForegroundColor(color));
            }
            if let Some(attribute) = attribute {
                let _ = queue!(self.out, SetAttribute(attribute));
            }
            let _ = queue!(self.out, Print(&span.text));
            if color.is_some() || attribute.is_some() {
                let _ = queue!(self.out, SetAttribute(Attribute::Reset), ResetColor);
            }
        }
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        restore();
    }
}

/// The colour and attribute of a style.
fn look(style: Style) -> (Option<Color>, Option<Attribute>) {
    match style {
        Style::Plain => (None, None),
        Style::Bold => (None, Some(Attribute::Bold)),
        Style::Dim => (Some(Color::DarkGrey), None),
        Style::Code => (Some(Color::Yellow), None),
        Style::Accent => (Some(Color::Cyan), Some(Attribute::Bold)),
        Style::Good => (Some(Color::Green), None),
        Style::Bad => (Some(Color::Red), None),
        Style::Ask => (Some(Color::Magenta), Some(Attribute::Bold)),
    }
}

/// `text` cut to at most `cols` cells.
fn clip_width(text: &str, cols: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w > cols {
            break;
        }
        used += w;
        out.push(c);
    }
    out
}

fn to_u16(n: usize) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_count_wrapped_cells() {
        assert_eq!(Term::rows(0, 80), 1);
        assert_eq!(Term::rows(80, 80), 1);
        assert_eq!(Term::rows(81, 80), 2);
        assert_eq!(clip_width("漢字abc", 5), "漢字a");
    }
}
