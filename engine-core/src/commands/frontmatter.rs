//! Frontmatter stripping for command templates: frontmatter never reaches the model.

/// The template without its frontmatter. A leading BOM is removed. Stripping happens
/// only when the text starts with `---\n` or `---\r\n` (or is exactly `---`) and a
/// later line equals `---` (one trailing `\r` ignored); the result is what follows
/// that closing line, minus one leading `\n`. Without a closing line the text is kept
/// (the `---` stays). Line endings are otherwise kept.
pub fn strip_frontmatter(template: &str) -> &str {
    let text = template.strip_prefix('\u{FEFF}').unwrap_or(template);
    let rest = if let Some(rest) = text.strip_prefix("---\n") {
        rest
    } else if let Some(rest) = text.strip_prefix("---\r\n") {
        rest
    } else {
        return text;
    };
    let mut start = 0;
    loop {
        let end = rest[start..].find('\n').map(|i| start + i);
        let line = &rest[start..end.unwrap_or(rest.len())];
        if line.strip_suffix('\r').unwrap_or(line) == "---" {
            return end.map_or("", |e| &rest[e + 1..]);
        }
        match end {
            Some(e) => start = e + 1,
            None => return text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_closed_leading_block_is_stripped() {
        assert_eq!(
            strip_frontmatter("---\ndescription: d\n---\nReview $1 now."),
            "Review $1 now."
        );
        assert_eq!(
            strip_frontmatter("\u{FEFF}---\r\na: b\r\n---\r\nx\r\ny"),
            "x\r\ny"
        );
        assert_eq!(strip_frontmatter("---\n---\n\nbody"), "\nbody");
        assert_eq!(strip_frontmatter("---\na\n---"), "");
        assert_eq!(
            strip_frontmatter("---\nnot closed\nBody"),
            "---\nnot closed\nBody"
        );
        assert_eq!(strip_frontmatter("---"), "---");
        assert_eq!(strip_frontmatter("--- \na\n---\nx"), "--- \na\n---\nx");
        assert_eq!(strip_frontmatter("\u{FEFF}plain"), "plain");
        assert_eq!(strip_frontmatter("---\na\n --- \nb"), "---\na\n --- \nb");
    }
}
