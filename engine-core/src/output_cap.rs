//! The one output cap (D10): [`OutputCap`] and its truncation marker.

use std::borrow::Cow;

/// The default cap on a tool result's text, in bytes.
pub const DEFAULT_OUTPUT_CAP: usize = 25_000;

/// The marker appended to truncated output: `\n[output truncated: exceeded N bytes]`,
/// N being the cap.
pub fn truncation_marker(cap: usize) -> String {
    format!("\n[output truncated: exceeded {cap} bytes]")
}

/// The largest prefix of `text` of at most `max` bytes that ends on a char boundary.
pub fn floor_char_boundary(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A cap on the bytes of tool output the model sees.
///
/// Text within the cap passes unchanged. Longer text is cut on a UTF-8 boundary and
/// ends with [`truncation_marker`]; the marker counts inside the cap, so the result
/// is at most the cap (for ASCII, exactly the cap). A cap smaller than its own marker
/// cuts without a marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OutputCap {
    max_bytes: usize,
}

impl OutputCap {
    /// A cap of `max_bytes`.
    pub const fn new(max_bytes: usize) -> Self {
        Self { max_bytes }
    }

    /// The cap in bytes.
    pub const fn max_bytes(self) -> usize {
        self.max_bytes
    }

    /// The marker for this cap.
    pub fn marker(self) -> String {
        truncation_marker(self.max_bytes)
    }

    /// Whether `text` fits unchanged.
    pub fn fits(self, text: &str) -> bool {
        text.len() <= self.max_bytes
    }

    /// `text` within the cap, with the marker when it was cut.
    pub fn truncate(self, text: &str) -> Cow<'_, str> {
        if self.fits(text) {
            return Cow::Borrowed(text);
        }
        let marker = self.marker();
        if marker.len() > self.max_bytes {
            return Cow::Borrowed(floor_char_boundary(text, self.max_bytes));
        }
        let kept = floor_char_boundary(text, self.max_bytes - marker.len());
        let mut out = String::with_capacity(kept.len() + marker.len());
        out.push_str(kept);
        out.push_str(&marker);
        Cow::Owned(out)
    }

    /// Like [`OutputCap::truncate`] on an owned string, reusing it when it fits.
    pub fn truncate_owned(self, text: String) -> String {
        if self.fits(&text) {
            text
        } else {
            self.truncate(&text).into_owned()
        }
    }
}

impl Default for OutputCap {
    fn default() -> Self {
        Self::new(DEFAULT_OUTPUT_CAP)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_within_the_cap_is_unchanged() {
        let cap = OutputCap::new(10);
        assert!(matches!(cap.truncate("0123456789"), Cow::Borrowed("0123456789")));
    }

    #[test]
    fn ascii_over_the_cap_is_exactly_the_cap_and_ends_with_the_marker() {
        let cap = OutputCap::default();
        let out = cap.truncate(&"x".repeat(30_000)).into_owned();
        assert_eq!(out.len(), DEFAULT_OUTPUT_CAP);
        assert!(out.ends_with("\n[output truncated: exceeded 25000 bytes]"));
    }

    #[test]
    fn multibyte_text_is_cut_on_a_char_boundary() {
        let cap = OutputCap::new(100);
        let out = cap.truncate(&"é".repeat(100)).into_owned();
        assert!(out.len() <= 100);
        assert!(out.ends_with(&cap.marker()));
        let kept = out.strip_suffix(&cap.marker()).unwrap();
        assert!(kept.chars().all(|c| c == 'é'));
        assert!(100 - out.len() < 2, "at most one byte lost to the boundary");
    }

    #[test]
    fn a_cap_smaller_than_its_marker_cuts_without_marker() {
        let out = OutputCap::new(5).truncate("abcdefgh").into_owned();
        assert_eq!(out, "abcde");
    }
}
