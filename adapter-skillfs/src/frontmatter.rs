//! Exact `SKILL.md` frontmatter splitting, done by hand because the rules
//! are stricter than `gray_matter`'s (which trims delimiter lines).

use std::borrow::Cow;

/// A `SKILL.md` text split into its frontmatter and body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Split<'a> {
    /// The text between the opener and the closing line.
    pub(crate) frontmatter: &'a str,
    /// Everything after the closing line and its `\n`.
    pub(crate) body: &'a str,
}

/// The text with one leading BOM stripped and every `\r\n` turned into `\n` (a lone
/// `\r` stays).
pub(crate) fn normalize(text: &str) -> Cow<'_, str> {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    if text.contains("\r\n") {
        Cow::Owned(text.replace("\r\n", "\n"))
    } else {
        Cow::Borrowed(text)
    }
}

/// Splits a normalized text: it must start with exactly `---\n`; the first later line
/// that is exactly `---` closes the block. `None` means there is no frontmatter.
pub(crate) fn split(text: &str) -> Option<Split<'_>> {
    let rest = text.strip_prefix("---\n")?;
    let mut start = 0;
    loop {
        let end = rest[start..].find('\n').map(|i| start + i);
        let line = &rest[start..end.unwrap_or(rest.len())];
        if line == "---" {
            return Some(Split {
                frontmatter: &rest[..start],
                body: end.map_or("", |e| &rest[e + 1..]),
            });
        }
        start = end? + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(text: &str) -> Option<(String, String)> {
        let normalized = normalize(text);
        split(&normalized).map(|s| (s.frontmatter.to_owned(), s.body.to_owned()))
    }

    #[test]
    fn the_block_and_body_are_split_at_the_first_exact_closing_line() {
        assert_eq!(
            parts("---\na: 1\n---\nbody\n---\nmore"),
            Some(("a: 1\n".into(), "body\n---\nmore".into()))
        );
        assert_eq!(parts("---\n---\n"), Some((String::new(), String::new())));
        assert_eq!(parts("---\na: 1\n---"), Some(("a: 1\n".into(), String::new())));
        assert_eq!(
            parts("---\na\n---\n\nbody"),
            Some(("a\n".into(), "\nbody".into()))
        );
    }

    #[test]
    fn bom_and_crlf_are_normalized_but_a_lone_cr_stays() {
        assert_eq!(
            parts("\u{FEFF}---\r\na: 1\r\n---\r\nx\r\n"),
            Some(("a: 1\n".into(), "x\n".into()))
        );
        assert_eq!(parts("---\na\r\n---\rb"), None, "`---\\rb` is not a closing line");
    }

    #[test]
    fn near_misses_are_not_frontmatter() {
        for text in [
            "\n---\na: 1\n---\n",
            " ---\na: 1\n---\n",
            "--- \na: 1\n---\n",
            "---\na: 1\n--- \n",
            "---\na: 1\n...\n",
            "---\na: 1\n",
            "no frontmatter",
            "---",
        ] {
            assert_eq!(parts(text), None, "{text:?}");
        }
    }
}
