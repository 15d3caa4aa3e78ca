//! [`Keyword`]: an enum written as one fixed word per value (a flag value, a wire
//! name), whose parse and "expected one of …" list both come from that word list.

/// An enum whose every value is written as one fixed word (`plan`, `read-only`,
/// `openai-chat`, …).
///
/// The type says its values once ([`Keyword::ALL`], in the order lists show them) and
/// the word of each ([`Keyword::word`]); reading a word back ([`Keyword::from_word`])
/// and the list an error names ([`Keyword::expected`]) are derived from those two, so
/// a new value is parsed and listed as soon as it is in `ALL`.
pub trait Keyword: Copy + 'static {
    /// Every value, in the order lists of the words show them.
    const ALL: &'static [Self];

    /// The word of this value.
    fn word(self) -> &'static str;

    /// The value written exactly `text` (case-sensitive), if any.
    fn from_word(text: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|value| value.word() == text)
    }

    /// Every word, in the order of [`Keyword::ALL`].
    fn words() -> impl Iterator<Item = &'static str> {
        Self::ALL.iter().map(|value| value.word())
    }

    /// The words joined by `, ` (`default, plan, acceptEdits`): what an error lists
    /// after "expected one of".
    fn expected() -> String {
        Self::words().collect::<Vec<_>>().join(", ")
    }
}
