//! Styled lines: what the chat shows, independent of where it goes. The terminal
//! mode paints [`Style`]s with colours; the plain mode prints the text alone.

/// How a piece of text looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Style {
    /// Ordinary text.
    Plain,
    /// Strong text and headings.
    Bold,
    /// Secondary text: hints, durations, fences.
    Dim,
    /// Inline code and code blocks.
    Code,
    /// A tool's name and the prompt marker.
    Accent,
    /// A success status, an added diff line.
    Good,
    /// A failure status, a removed diff line.
    Bad,
    /// A question the person answers.
    Ask,
}

/// A run of text in one style.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) style: Style,
    pub(crate) text: String,
}

/// One output line (no newline inside).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Line {
    pub(crate) spans: Vec<Span>,
}

impl Line {
    /// A line of one span.
    pub(crate) fn new(style: Style, text: impl Into<String>) -> Self {
        Self::default().push(style, text)
    }

    /// The line with one more span.
    pub(crate) fn push(mut self, style: Style, text: impl Into<String>) -> Self {
        let text = text.into();
        if !text.is_empty() {
            self.spans.push(Span { style, text });
        }
        self
    }

    /// The text without styles.
    pub(crate) fn text(&self) -> String {
        self.spans.iter().map(|span| span.text.as_str()).collect()
    }
}

/// `text` with control characters (escape sequences included) replaced by `�`, so
/// model or tool text can never move the cursor or change the terminal's state.
pub(crate) fn printable(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\t' => ' ',
            c if c.is_control() => '\u{fffd}',
            c => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_never_reach_the_terminal() {
        assert_eq!(printable("a\u{1b}[2Jb\tc"), "a\u{fffd}[2Jb c");
        let line = Line::new(Style::Bold, "ab").push(Style::Plain, "漢");
        assert_eq!(line.text(), "ab漢");
    }
}
