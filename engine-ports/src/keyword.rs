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

/// Writes a [`Keyword`] enum's word table once and derives the rest from it: the
/// `Keyword` impl, inherent `ALL` (the values in the order given) and `as_str`,
/// `Display` (the word), and, with `parse_error: Error { field }`, a `FromStr` whose error holds the
/// rejected text in `field`.
///
/// A trait cannot give these impls to every `Keyword` type (the orphan rule forbids a
/// blanket `Display`), so each enum names its words here instead of writing the glue.
///
/// ```
/// use engine_ports::Keyword;
///
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// enum Speed { Slow, Fast }
///
/// #[derive(Debug, PartialEq)]
/// struct UnknownSpeed { given: String }
///
/// engine_ports::keyword_words! {
///     Speed { Slow => "slow", Fast => "fast" }
///     parse_error: UnknownSpeed { given }
/// }
///
/// assert_eq!("fast".parse(), Ok(Speed::Fast));
/// assert_eq!("quick".parse::<Speed>(), Err(UnknownSpeed { given: "quick".into() }));
/// assert_eq!(Speed::Slow.to_string(), "slow");
/// assert_eq!(Speed::expected(), "slow, fast");
/// ```
#[macro_export]
macro_rules! keyword_words {
    (
        $ty:ident { $($variant:ident => $word:literal),+ $(,)? }
        $(parse_error: $error:ident { $field:ident })?
    ) => {
        impl $crate::Keyword for $ty {
            const ALL: &'static [Self] = &Self::ALL;

            fn word(self) -> &'static str {
                match self {
                    $(Self::$variant => $word),+
                }
            }
        }

        impl $ty {
            /// Every value, in the order lists of the words show them.
            pub const ALL: [Self; [$(stringify!($variant)),+].len()] = [$(Self::$variant),+];

            /// The word of this value (its `Keyword::word`).
            pub fn as_str(self) -> &'static str {
                <Self as $crate::Keyword>::word(self)
            }
        }

        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(<Self as $crate::Keyword>::word(*self))
            }
        }

        $(
            impl ::std::str::FromStr for $ty {
                type Err = $error;

                fn from_str(text: &str) -> ::std::result::Result<Self, $error> {
                    <Self as $crate::Keyword>::from_word(text).ok_or_else(|| $error {
                        $field: text.to_owned(),
                    })
                }
            }
        )?
    };
}
