//! The durable-memory port: [`MemoryStore`], its entries, caps and errors.
//!
//! A memory store keeps one scope (a project's notes, or facts about the operator) as
//! versioned key → value entries that outlive sessions. The caps and the key grammar
//! are part of the contract, so every store refuses the same input with the same text;
//! an error's `Display` is what the model (or the operator) reads.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;

use crate::text::truncate_with_ellipsis;

/// The longest key, in bytes.
pub const MAX_MEMORY_KEY_BYTES: usize = 128;
/// The largest value, in bytes (64 KiB).
pub const MAX_MEMORY_VALUE_BYTES: usize = 64 * 1024;
/// The largest description, in bytes (64 KiB).
pub const MAX_MEMORY_DESCRIPTION_BYTES: usize = 64 * 1024;
/// The most live (not forgotten) keys one scope holds.
pub const MAX_MEMORY_KEYS: usize = 4096;
/// The largest stored document of one scope, in bytes (8 MiB).
pub const MAX_MEMORY_DOCUMENT_BYTES: usize = 8 * 1024 * 1024;
/// How many revisions of one key are kept (the current one included).
pub const MEMORY_REVISIONS_KEPT: usize = 16;

/// How much of a rejected key an error quotes.
const KEY_QUOTE_BYTES: usize = 140;

/// Checks `key` against the grammar `segment(/segment)*`, each segment
/// `[a-z][a-z0-9_-]*`, at most [`MAX_MEMORY_KEY_BYTES`] bytes.
///
/// # Errors
/// [`MemoryError::InvalidKey`] saying which rule the key breaks.
pub fn check_memory_key(key: &str) -> Result<(), MemoryError> {
    let invalid = |reason: String| MemoryError::InvalidKey {
        key: key.to_owned(),
        reason,
    };
    if key.is_empty() {
        return Err(invalid("the key is empty".to_owned()));
    }
    if key.len() > MAX_MEMORY_KEY_BYTES {
        return Err(invalid(format!(
            "it is {} bytes; a key has at most {MAX_MEMORY_KEY_BYTES}",
            key.len()
        )));
    }
    for segment in key.split('/') {
        let mut chars = segment.chars();
        let good = match chars.next() {
            Some(first) => {
                first.is_ascii_lowercase()
                    && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
            }
            None => false,
        };
        if !good {
            return Err(invalid(
                "keys are segment(/segment)* where each segment starts with a-z and goes on with \
                 a-z, 0-9, _ or - (e.g. build/test-command)"
                    .to_owned(),
            ));
        }
    }
    Ok(())
}

/// The checks of one write that need no stored state: the key grammar
/// ([`check_memory_key`]) and the value and description caps.
///
/// # Errors
/// [`MemoryError::InvalidKey`], [`MemoryError::ValueTooLarge`] or
/// [`MemoryError::DescriptionTooLarge`].
pub fn check_memory_write(write: &MemoryWrite) -> Result<(), MemoryError> {
    check_memory_key(&write.key)?;
    if write.value.len() > MAX_MEMORY_VALUE_BYTES {
        return Err(MemoryError::ValueTooLarge {
            key: write.key.clone(),
            bytes: write.value.len(),
        });
    }
    if write.description.len() > MAX_MEMORY_DESCRIPTION_BYTES {
        return Err(MemoryError::DescriptionTooLarge {
            key: write.key.clone(),
            bytes: write.description.len(),
        });
    }
    Ok(())
}

/// The current value of one key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryEntry {
    /// The key.
    pub key: String,
    /// The value.
    pub value: String,
    /// A short description (what the value is for); may be empty.
    pub description: String,
    /// The version: 1 for a key's first write, one more for every later write or
    /// forget of that key.
    pub version: u64,
    /// When this version was written.
    pub updated_at: SystemTime,
    /// Who wrote it (a tool name, or the operator's command).
    pub writer: String,
}

/// One kept revision of a key ([`MemoryStore::history`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryRevision {
    /// The revision (a tombstone has an empty value and description).
    pub entry: MemoryEntry,
    /// Whether this revision forgot the key.
    pub forgotten: bool,
}

/// A write of one key ([`MemoryStore::put_many`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryWrite {
    /// The key.
    pub key: String,
    /// The new value.
    pub value: String,
    /// The new description.
    pub description: String,
    /// `None`: create only (an existing key is refused); `Some(v)`: replace the live
    /// entry whose version is `v` (compare-and-set).
    pub expected_version: Option<u64>,
    /// Who writes.
    pub writer: String,
}

/// One search hit: never the value.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryHit {
    /// The key.
    pub key: String,
    /// Its description.
    pub description: String,
    /// Its version.
    pub version: u64,
    /// The BM25 score (> 0).
    pub score: f32,
}

/// One line of the index: a key and what it is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryIndexEntry {
    /// The key.
    pub key: String,
    /// Its description.
    pub description: String,
    /// Its version.
    pub version: u64,
    /// When it was last written.
    pub updated_at: SystemTime,
}

/// The live entries under a prefix ([`MemoryStore::prefix`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryPrefix {
    /// At most `limit` entries, sorted by key.
    pub entries: Vec<MemoryEntry>,
    /// How many live keys start with the prefix (may exceed `entries.len()`).
    pub total: usize,
}

/// Durable, versioned notes of one scope.
///
/// # Contract
/// - Keys follow [`check_memory_key`]; values and descriptions are at most
///   [`MAX_MEMORY_VALUE_BYTES`] / [`MAX_MEMORY_DESCRIPTION_BYTES`]; a scope holds at
///   most [`MAX_MEMORY_KEYS`] live keys and its stored document at most
///   [`MAX_MEMORY_DOCUMENT_BYTES`]. Input over a cap is refused with the
///   [`MemoryError`] naming it, and nothing changes.
/// - `put_many` applies every write or none. A write without `expected_version`
///   only creates: a live key gives [`MemoryError::AlreadyExists`] with its version.
///   With `Some(v)` it replaces the live entry at version `v`; another version gives
///   [`MemoryError::VersionMismatch`] with the current one, a missing or forgotten key
///   [`MemoryError::NotFound`]. A key's versions only grow: a write or forget makes
///   version `last + 1`, a key forgotten and written again goes on from its tombstone.
/// - `forget` needs the live version (same errors) and leaves a tombstone: `get`
///   returns `None`, `history` shows it.
/// - The last [`MEMORY_REVISIONS_KEPT`] revisions of a key are kept (`history`,
///   newest first). Old revisions of other keys may be dropped, oldest first, to keep
///   the document under its cap; a live key's current value never is.
/// - `prefix` lists live keys starting with the prefix (plain byte prefix), sorted by
///   key; `index` lists every live key, most recently written first (ties by key);
///   `search` ranks live entries with BM25 over key words, description and value,
///   best first, ties by key, entries scoring zero left out, at most `limit`.
/// - Two writers over the same storage (threads, store values, processes) never lose
///   a write: every successful `put_many` / `forget` is seen by later reads.
/// - A store never silently replaces data it cannot read: such storage makes every
///   operation fail with [`MemoryError::Corrupt`], [`MemoryError::Foreign`] or
///   [`MemoryError::CorruptScope`].
#[async_trait]
pub trait MemoryStore: Send + Sync {
    /// The live entry of `key`, `None` when missing or forgotten.
    async fn get(&self, key: &str) -> Result<Option<MemoryEntry>, MemoryError>;
    /// Applies every write or none; returns the new entries in write order.
    async fn put_many(&self, writes: Vec<MemoryWrite>) -> Result<Vec<MemoryEntry>, MemoryError>;
    /// Forgets the live entry of `key` at `expected_version`; returns the tombstone's
    /// version.
    async fn forget(&self, key: &str, expected_version: u64, writer: &str) -> Result<u64, MemoryError>;
    /// Live entries whose key starts with `prefix`, sorted by key, at most `limit`.
    async fn prefix(&self, prefix: &str, limit: usize) -> Result<MemoryPrefix, MemoryError>;
    /// Live entries ranked for `query`, at most `limit`.
    async fn search(&self, query: &str, limit: usize) -> Result<Vec<MemoryHit>, MemoryError>;
    /// Every live key with its description, most recently written first.
    async fn index(&self) -> Result<Vec<MemoryIndexEntry>, MemoryError>;
    /// The kept revisions of `key`, newest first (empty for a key never written).
    async fn history(&self, key: &str) -> Result<Vec<MemoryRevision>, MemoryError>;

    /// One write (see [`MemoryStore::put_many`]).
    async fn put(&self, write: MemoryWrite) -> Result<MemoryEntry, MemoryError> {
        let key = write.key.clone();
        self.put_many(vec![write])
            .await?
            .pop()
            .ok_or(MemoryError::NotFound { key })
    }
}

fn quote(key: &str) -> String {
    format!("{:?}", truncate_with_ellipsis(key, KEY_QUOTE_BYTES))
}

/// A memory operation that failed. The text says what was wrong and what to do; it
/// never contains a value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// The key breaks the grammar or its cap.
    #[error("invalid memory key {}: {reason}", quote(key))]
    InvalidKey {
        /// The key as given.
        key: String,
        /// Which rule it breaks.
        reason: String,
    },
    /// The value is over [`MAX_MEMORY_VALUE_BYTES`].
    #[error(
        "the value for {} is {bytes} bytes; a value has at most {MAX_MEMORY_VALUE_BYTES} bytes (64 KiB)",
        quote(key)
    )]
    ValueTooLarge {
        /// The key.
        key: String,
        /// The value's size.
        bytes: usize,
    },
    /// The description is over [`MAX_MEMORY_DESCRIPTION_BYTES`].
    #[error(
        "the description for {} is {bytes} bytes; a description has at most {MAX_MEMORY_DESCRIPTION_BYTES} bytes (64 KiB)",
        quote(key)
    )]
    DescriptionTooLarge {
        /// The key.
        key: String,
        /// The description's size.
        bytes: usize,
    },
    /// Creating the key would pass [`MAX_MEMORY_KEYS`].
    #[error(
        "memory is full: it holds {MAX_MEMORY_KEYS} keys, the most it keeps; forget a key before adding {}",
        quote(key)
    )]
    TooManyKeys {
        /// The key that would be one too many.
        key: String,
    },
    /// The stored document would pass [`MAX_MEMORY_DOCUMENT_BYTES`].
    #[error(
        "writing {} would make the memory document {bytes} bytes, over its {MAX_MEMORY_DOCUMENT_BYTES}-byte (8 MiB) cap; forget keys that are no longer needed or shorten values",
        quote(key)
    )]
    DocumentFull {
        /// The key being written.
        key: String,
        /// The document size the write would give.
        bytes: usize,
    },
    /// A create of a live key.
    #[error(
        "memory {} already exists at version {version}; to replace it, write again with expected_version {version}",
        quote(key)
    )]
    AlreadyExists {
        /// The key.
        key: String,
        /// Its current version.
        version: u64,
    },
    /// `expected_version` is not the live version.
    #[error(
        "memory {} is at version {current}, not {expected}; recall it and retry with expected_version {current}",
        quote(key)
    )]
    VersionMismatch {
        /// The key.
        key: String,
        /// The version the caller expected.
        expected: u64,
        /// The live version.
        current: u64,
    },
    /// An update or forget of a key that has no live entry.
    #[error(
        "no memory {} to change (it is missing or was forgotten); nothing changed",
        quote(key)
    )]
    NotFound {
        /// The key.
        key: String,
    },
    /// Stored data does not decode or breaks the caps; it is left untouched.
    #[error("memory file {} cannot be used: {reason}; it was left as it is (fix it or move it away)", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The file is not a memory document of this program; it is left untouched.
    #[error("memory file {} is not a Mecatl memory document ({reason}); it was left as it is", path.display())]
    Foreign {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Another writer held the lock for too long.
    #[error("memory directory {}: the lock was not acquired within {waited:?}; another process is writing, try again", path.display())]
    LockTimeout {
        /// The directory.
        path: PathBuf,
        /// How long we waited.
        waited: Duration,
    },
    /// A scope kept in a database holds a document that does not decode or breaks a
    /// rule; it is left untouched.
    #[error(
        "memory scope {scope:?} in {store} cannot be used: {reason}; it was left as it is (fix or delete its row)"
    )]
    CorruptScope {
        /// The scope's name.
        scope: String,
        /// Where it is kept (a database, without credentials).
        store: String,
        /// What is wrong.
        reason: String,
    },
    /// The database keeping a scope failed (unreachable past the time limit, a
    /// statement refused); nothing is known to have changed unless the text says so.
    #[error("memory scope {scope:?}: {op} failed: {reason}")]
    Backend {
        /// The scope's name.
        scope: String,
        /// The operation (`read`, `write`).
        op: &'static str,
        /// What went wrong (it names the database, never its password).
        reason: String,
    },
    /// An I/O operation failed.
    #[error("memory {op} {} failed: {source}", path.display())]
    Io {
        /// The operation.
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_grammar() {
        for good in ["a", "build/test-cmd", "x1/y_2/z-3", &"a".repeat(128)] {
            assert!(check_memory_key(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "A",
            "1a",
            "a//b",
            "/a",
            "a/",
            "a b",
            "é",
            "a/B",
            "_a",
            &"a".repeat(129),
        ] {
            assert!(check_memory_key(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn error_texts_never_quote_a_long_key_whole() {
        let long = "x".repeat(10_000);
        let text = check_memory_key(&long).unwrap_err().to_string();
        assert!(text.len() < 400, "{text}");
        assert!(text.contains("10000 bytes"), "{text}");
    }
}
