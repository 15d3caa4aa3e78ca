//! Cutting text for display with an ellipsis: by bytes ([`truncate_with_ellipsis`],
//! for wire and size limits) or by characters ([`clip_chars`], for previews and
//! titles). Every crate cuts text through these two.

use std::borrow::Cow;

/// Truncates `text` to at most `max` bytes "with ellipsis": text of at most `max`
/// bytes is unchanged; longer text keeps its longest prefix of at most `max - 3`
/// bytes that ends on a char boundary, followed by `…` (U+2026, 3 bytes). The
/// result is at most `max` bytes (for `max < 3`, a bare prefix of `max` bytes) and is
/// valid UTF-8.
///
/// ```
/// use engine_ports::truncate_with_ellipsis;
/// assert_eq!(truncate_with_ellipsis("short", 800), "short");
/// assert_eq!(truncate_with_ellipsis("abcdefgh", 6), "abc…");
/// ```
pub fn truncate_with_ellipsis(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let Some(keep) = max.checked_sub(ELLIPSIS.len()) else {
        return Cow::Borrowed(prefix_on_boundary(text, max));
    };
    let kept = prefix_on_boundary(text, keep);
    let mut out = String::with_capacity(kept.len() + ELLIPSIS.len());
    out.push_str(kept);
    out.push_str(ELLIPSIS);
    Cow::Owned(out)
}

const ELLIPSIS: &str = "\u{2026}";

fn prefix_on_boundary(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// `text` cut to at most `max` characters (Unicode scalar values) "with ellipsis":
/// text of at most `max` characters is unchanged; longer text keeps its first
/// `max - 1` characters followed by `…`. For `max == 0` the result is empty.
///
/// ```
/// use engine_ports::clip_chars;
/// assert_eq!(clip_chars("short", 10), "short");
/// assert_eq!(clip_chars("été à Paris", 5), "été …");
/// ```
pub fn clip_chars(text: &str, max: usize) -> Cow<'_, str> {
    let Some((cut, _)) = text.char_indices().nth(max) else {
        return Cow::Borrowed(text);
    };
    if max == 0 {
        return Cow::Borrowed("");
    }
    let keep = text[..cut].char_indices().nth(max - 1).map_or(cut, |(at, _)| at);
    let mut out = String::with_capacity(keep + ELLIPSIS.len());
    out.push_str(&text[..keep]);
    out.push_str(ELLIPSIS);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_chars_keeps_at_most_max_characters_including_the_ellipsis() {
        assert_eq!(clip_chars("abc", 3), "abc");
        assert_eq!(clip_chars("abcd", 3), "ab…");
        assert_eq!(clip_chars("ééééé", 4), "ééé…");
        assert_eq!(clip_chars("abcd", 1), "…");
        assert_eq!(clip_chars("abcd", 0), "");
        assert_eq!(clip_chars("", 0), "");
    }

    #[test]
    fn truncate_with_ellipsis_stays_within_max_bytes_on_a_char_boundary() {
        assert_eq!(truncate_with_ellipsis("abcdef", 6), "abcdef");
        assert_eq!(truncate_with_ellipsis("abcdefg", 6), "abc…");
        assert_eq!(truncate_with_ellipsis("éééé", 7), "éé…");
        assert_eq!(truncate_with_ellipsis("abcdef", 2), "ab");
        for max in 0..12 {
            assert!(truncate_with_ellipsis("aé€😀bc", max).len() <= max);
        }
    }
}
