//! Markdown of streamed answers, one line at a time: fenced code blocks set apart
//! behind a gutter, headings and `**strong**` bold, `` `code` `` and bullets marked.
//! Line by line because the answer arrives in pieces: a line is styled once it is
//! complete, and only a fence changes how the next lines look.

use crate::style::{Line, Style, printable};

/// The state between lines: whether a code block is open.
#[derive(Debug, Default)]
pub(crate) struct Markdown {
    /// The language of the open code block (`Some("")` for none given).
    fence: Option<String>,
}

impl Markdown {
    /// The styled form of one complete line.
    pub(crate) fn line(&mut self, raw: &str) -> Line {
        let text = printable(raw);
        let trimmed = text.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            return match self.fence.take() {
                Some(_) => Line::new(Style::Dim, "  ╰─"),
                None => {
                    let lang = info.trim().to_owned();
                    let line = Line::new(Style::Dim, "  ╭─ ").push(Style::Dim, lang.clone());
                    self.fence = Some(lang);
                    line
                }
            };
        }
        if self.fence.is_some() {
            return Line::new(Style::Dim, "  │ ").push(Style::Code, text);
        }
        if let Some(heading) = heading(trimmed) {
            return Line::new(Style::Bold, heading);
        }
        if let Some(quote) = trimmed.strip_prefix("> ") {
            return inline(Line::new(Style::Dim, "│ "), quote);
        }
        let indent = &text[..text.len() - trimmed.len()];
        if let Some(item) = trimmed.strip_prefix("- ").or_else(|| trimmed.strip_prefix("* ")) {
            return inline(Line::new(Style::Plain, format!("{indent}• ")), item);
        }
        inline(Line::default(), &text)
    }
}

/// A heading's text without its `#` marks.
fn heading(line: &str) -> Option<&str> {
    let hashes = line.bytes().take_while(|b| *b == b'#').count();
    if (1..=6).contains(&hashes) {
        line[hashes..].strip_prefix(' ').map(str::trim)
    } else {
        None
    }
}

/// `line` with its inline spans: `` `code` `` and `**strong**` (an unclosed mark is
/// text).
fn inline(mut out: Line, text: &str) -> Line {
    let mut rest = text;
    while !rest.is_empty() {
        let tick = rest.find('`');
        let star = rest.find("**");
        let (at, mark) = match (tick, star) {
            (Some(t), Some(s)) if s < t => (s, "**"),
            (Some(t), _) => (t, "`"),
            (None, Some(s)) => (s, "**"),
            (None, None) => break,
        };
        let after = &rest[at + mark.len()..];
        let Some(close) = after.find(mark).filter(|close| *close > 0) else {
            out = out.push(Style::Plain, &rest[..at + mark.len()]);
            rest = after;
            continue;
        };
        out = out.push(Style::Plain, &rest[..at]);
        let style = if mark == "`" { Style::Code } else { Style::Bold };
        out = out.push(style, &after[..close]);
        rest = &after[close + mark.len()..];
    }
    out.push(Style::Plain, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn styles(line: &Line) -> Vec<(Style, &str)> {
        line.spans.iter().map(|s| (s.style, s.text.as_str())).collect()
    }

    #[test]
    fn code_blocks_are_set_apart_behind_a_gutter() {
        let mut md = Markdown::default();
        assert_eq!(md.line("```rust").text(), "  ╭─ rust");
        assert!(md.fence.is_some());
        let code = md.line("let **x** = 1;");
        assert_eq!(
            styles(&code),
            [(Style::Dim, "  │ "), (Style::Code, "let **x** = 1;")]
        );
        assert_eq!(md.line("```").text(), "  ╰─");
        assert!(md.fence.is_none());
    }

    #[test]
    fn headings_bullets_and_inline_marks_are_styled() {
        let mut md = Markdown::default();
        assert_eq!(styles(&md.line("## Plan")), [(Style::Bold, "Plan")]);
        assert_eq!(
            styles(&md.line("- run `cargo test` **now**")),
            [
                (Style::Plain, "• "),
                (Style::Plain, "run "),
                (Style::Code, "cargo test"),
                (Style::Plain, " "),
                (Style::Bold, "now"),
            ]
        );
        assert_eq!(md.line("a ** b and `c").text(), "a ** b and `c");
        assert_eq!(md.line("#hashtag").text(), "#hashtag");
    }
}
