//! Opaque identifiers: [`SessionId`] and [`ToolCallId`]. Both share their text: a
//! clone (and ids are cloned into every event, record and result) counts a reference
//! and copies nothing.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

macro_rules! opaque_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(Arc<str>);

        impl $name {
            /// Wraps any string; no format is imposed.
            pub fn new(id: impl Into<String>) -> Self {
                Self(Arc::from(id.into()))
            }

            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// Whether the id is the empty string.
            pub fn is_empty(&self) -> bool {
                self.0.is_empty()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(id: &str) -> Self {
                Self(Arc::from(id))
            }
        }

        impl From<String> for $name {
            fn from(id: String) -> Self {
                Self(Arc::from(id))
            }
        }

        impl From<&String> for $name {
            fn from(id: &String) -> Self {
                Self(Arc::from(id.as_str()))
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                &*self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                &*self.0 == *other
            }
        }
    };
}

opaque_id!(
    /// Identifies a conversation with its history, mode and hydrated tools.
    ///
    /// Opaque UTF-8 chosen by hosts or the engine (`team-abc/lead`, ids with `..`,
    /// spaces or non-ASCII are all valid); adapters must never use it as a path.
    SessionId
);

opaque_id!(
    /// Identifies one tool call within a turn; the dispatcher makes ids unique per turn.
    ToolCallId
);
