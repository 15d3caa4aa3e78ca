//! Remembered text as a reader sees it: the form the user-model guard checks and the
//! fence escaping searches, so invisible characters and look-alike letters cannot
//! hide an instruction or a closing tag.
//!
//! Each character is folded on its own: ASCII stays; a Unicode format character
//! (category Cf: zero-width space and joiners, bidi controls, soft hyphen) becomes
//! the caller's `format` text; a nonspacing mark disappears; anything else is taken
//! through NFKC (fullwidth `ｉ` → `i`, `ﬁ` → `fi`, no-break space → space) and each
//! resulting non-ASCII character through the UTS #39 confusable skeleton
//! (`unicode-security`: Cyrillic `і` and Greek `ο` → `i`, `o`), kept only when the
//! skeleton is ASCII once marks are dropped. ASCII is never skeletonised (the
//! skeleton maps `m` to `rn`, which would break the patterns).

use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::UnicodeNormalization as _;

/// One character of the original text and what it folds to.
pub(crate) struct Folded {
    /// The folded text.
    pub(crate) text: String,
    /// For each byte of `text`, the byte offset in the original text of the
    /// character it came from.
    pub(crate) origin: Vec<usize>,
}

/// `text` folded for reading, with a Unicode format character replaced by `format`
/// (`""` to join the letters around it, `" "` to read it as a word break).
pub(crate) fn fold(text: &str, format: &str) -> Folded {
    let mut folded = Folded {
        text: String::with_capacity(text.len()),
        origin: Vec::with_capacity(text.len()),
    };
    let push = |piece: &str, at: usize, folded: &mut Folded| {
        folded.text.push_str(piece);
        folded.origin.extend(std::iter::repeat_n(at, piece.len()));
    };
    let mut buffer = [0u8; 4];
    for (at, c) in text.char_indices() {
        if c.is_ascii() {
            push(c.encode_utf8(&mut buffer), at, &mut folded);
            continue;
        }
        match get_general_category(c) {
            GeneralCategory::Format => push(format, at, &mut folded),
            GeneralCategory::NonspacingMark => {}
            _ => {
                for d in std::iter::once(c).nfkc() {
                    if d.is_ascii() {
                        push(d.encode_utf8(&mut buffer), at, &mut folded);
                    } else if let Some(latin) = ascii_skeleton(d) {
                        push(&latin, at, &mut folded);
                    } else if get_general_category(d) != GeneralCategory::NonspacingMark {
                        push(d.encode_utf8(&mut buffer), at, &mut folded);
                    }
                }
            }
        }
    }
    folded
}

/// The confusable skeleton of `c` without marks, when it is non-empty ASCII.
fn ascii_skeleton(c: char) -> Option<String> {
    let mut buffer = [0u8; 4];
    let skeleton: String = unicode_security::confusable_detection::skeleton(c.encode_utf8(&mut buffer))
        .filter(|d| get_general_category(*d) != GeneralCategory::NonspacingMark)
        .collect();
    (!skeleton.is_empty() && skeleton.is_ascii()).then_some(skeleton)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn look_alikes_and_invisible_characters_fold_to_latin() {
        for (text, expected) in [
            ("ig\u{200b}nore", "ignore"),
            ("\u{0456}gn\u{043e}r\u{0435}", "ignore"),
            ("\u{ff49}\u{ff47}\u{ff4e}\u{ff4f}\u{ff52}\u{ff45}", "ignore"),
            ("ig\u{00ad}nore", "ignore"),
            ("\u{03bf}k", "ok"),
            ("i\u{0308}gnore", "ignore"),
            ("\u{00ef}gnore", "ignore"),
            ("a\u{00a0}b", "a b"),
            ("\u{202e}abc\u{202c}", "abc"),
            ("ASCII stays: m, 0, 1, |", "ASCII stays: m, 0, 1, |"),
            ("日本語 stays", "日本語 stays"),
        ] {
            assert_eq!(fold(text, "").text, expected, "{text:?}");
        }
        assert_eq!(fold("a\u{200b}b", " ").text, "a b");
    }

    #[test]
    fn every_folded_byte_points_back_to_its_character() {
        let text = "x\u{200b}\u{ff1c}/y";
        let folded = fold(text, "");
        assert_eq!(folded.text, "x</y");
        assert_eq!(folded.origin.len(), folded.text.len());
        assert_eq!(folded.origin, [0, 4, 7, 8]);
    }
}
