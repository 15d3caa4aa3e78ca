//! [`MemoryDocument`]: one memory scope as a value — the versioned revisions of every
//! key and the rules the `MemoryStore` contract fixes (key grammar, caps,
//! compare-and-set, tombstones, kept revisions). Every store applies writes through
//! it (the in-memory store, the file adapter, the PostgreSQL adapter), so they all
//! refuse the same input the same way and store the same document.

use std::collections::BTreeMap;
use std::time::SystemTime;

use crate::memory::{MAX_MEMORY_DESCRIPTION_BYTES, MAX_MEMORY_VALUE_BYTES};
use crate::memory::{
    MAX_MEMORY_DOCUMENT_BYTES, MAX_MEMORY_KEYS, MEMORY_REVISIONS_KEPT, MemoryEntry, MemoryError,
    MemoryIndexEntry, MemoryPrefix, MemoryRevision, MemoryWrite, check_memory_key, check_memory_write,
};
use serde::{Deserialize, Serialize};

/// The largest `seq` or version a stored document may hold (2^53, the integers JSON
/// tools read exactly); far beyond any real count, it keeps `+ 1` from overflowing on
/// an edited file.
const MAX_COUNTER: u64 = 1 << 53;

/// One scope's keys with their kept revisions (oldest first, the last one current).
///
/// Serialized (`to_json`) it is the stored form of a scope; [`MemoryDocument::from_json`]
/// decodes and checks it, so a document that breaks a rule is refused, never used.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryDocument {
    /// Counts writes and forgets of the whole scope: orders the index and names this
    /// state of the document.
    seq: u64,
    keys: BTreeMap<String, Vec<StoredRevision>>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredRevision {
    version: u64,
    seq: u64,
    #[serde(with = "rfc3339")]
    updated_at: SystemTime,
    writer: String,
    #[serde(default, skip_serializing_if = "is_false")]
    forgotten: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    value: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    description: String,
}

fn is_false(value: &bool) -> bool {
    !*value
}

mod rfc3339 {
    use std::time::SystemTime;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(time: &SystemTime, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&crate::format_rfc3339_micros(*time))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<SystemTime, D::Error> {
        let text = String::deserialize(deserializer)?;
        crate::parse_rfc3339(&text).map_err(serde::de::Error::custom)
    }
}

impl StoredRevision {
    fn entry(&self, key: &str) -> MemoryEntry {
        MemoryEntry {
            key: key.to_owned(),
            value: self.value.clone(),
            description: self.description.clone(),
            version: self.version,
            updated_at: self.updated_at,
            writer: self.writer.clone(),
        }
    }
}

/// A key's current revision when it is live.
fn live(revisions: &[StoredRevision]) -> Option<&StoredRevision> {
    revisions.last().filter(|r| !r.forgotten)
}

/// What a successful change leaves: the new document text.
#[derive(Debug)]
pub struct Applied<T> {
    /// The outcome (new entries, a tombstone version).
    pub outcome: T,
    /// The document serialized after the change ([`MemoryDocument::to_json`]).
    pub json: Vec<u8>,
}

impl MemoryDocument {
    /// An empty scope.
    pub fn new() -> Self {
        Self::default()
    }

    /// The write counter: a different value means a different document.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// How many live keys there are.
    pub fn live_keys(&self) -> usize {
        self.keys.values().filter(|r| live(r).is_some()).count()
    }

    /// Decodes a stored document and checks every rule it must keep.
    ///
    /// # Errors
    /// A reason naming the first problem (bad JSON, a key breaking the grammar, a cap).
    pub fn from_json(bytes: &[u8]) -> Result<Self, String> {
        let document: Self =
            serde_json::from_slice(bytes).map_err(|e| format!("it is not valid JSON: {e}"))?;
        document.check()?;
        Ok(document)
    }

    /// The document's JSON text (what `from_json` reads back).
    pub fn to_json(&self) -> Vec<u8> {
        // A map of strings and numbers always serializes.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Checks every rule a stored document must keep (what `from_json` checks after
    /// decoding).
    ///
    /// # Errors
    /// A reason naming the first problem.
    pub fn check(&self) -> Result<(), String> {
        if self.seq > MAX_COUNTER {
            return Err(format!("its seq {} is over {MAX_COUNTER}", self.seq));
        }
        if self.live_keys() > MAX_MEMORY_KEYS {
            return Err(format!("it holds more than {MAX_MEMORY_KEYS} live keys"));
        }
        for (key, revisions) in &self.keys {
            check_memory_key(key).map_err(|e| e.to_string())?;
            if revisions.is_empty() || revisions.len() > MEMORY_REVISIONS_KEPT {
                return Err(format!(
                    "key {key:?} has {} revisions (1 to {MEMORY_REVISIONS_KEPT} are kept)",
                    revisions.len()
                ));
            }
            let mut previous = 0;
            for revision in revisions {
                if revision.version > MAX_COUNTER {
                    return Err(format!("key {key:?} has a version over {MAX_COUNTER}"));
                }
                if revision.version <= previous || revision.seq > self.seq {
                    return Err(format!("key {key:?} has revisions out of order"));
                }
                previous = revision.version;
                if revision.value.len() > MAX_MEMORY_VALUE_BYTES
                    || revision.description.len() > MAX_MEMORY_DESCRIPTION_BYTES
                {
                    return Err(format!("key {key:?} has a value or description over 64 KiB"));
                }
            }
        }
        Ok(())
    }

    /// The live entry of `key`.
    pub fn get(&self, key: &str) -> Option<MemoryEntry> {
        self.keys.get(key).and_then(|r| live(r)).map(|r| r.entry(key))
    }

    /// Every live entry, sorted by key.
    pub fn live_entries(&self) -> impl Iterator<Item = MemoryEntry> + '_ {
        self.keys
            .iter()
            .filter_map(|(key, revisions)| live(revisions).map(|r| r.entry(key)))
    }

    /// Live entries under a plain byte prefix, sorted by key, at most `limit`.
    pub fn prefix(&self, prefix: &str, limit: usize) -> MemoryPrefix {
        let mut out = MemoryPrefix::default();
        for (key, revisions) in self.keys.range(prefix.to_owned()..) {
            if !key.starts_with(prefix) {
                break;
            }
            if let Some(revision) = live(revisions) {
                out.total += 1;
                if out.entries.len() < limit {
                    out.entries.push(revision.entry(key));
                }
            }
        }
        out
    }

    /// Every live key, most recently written first.
    pub fn index(&self) -> Vec<MemoryIndexEntry> {
        let mut rows: Vec<(u64, MemoryIndexEntry)> = self
            .keys
            .iter()
            .filter_map(|(key, revisions)| {
                live(revisions).map(|r| {
                    (
                        r.seq,
                        MemoryIndexEntry {
                            key: key.clone(),
                            description: r.description.clone(),
                            version: r.version,
                            updated_at: r.updated_at,
                        },
                    )
                })
            })
            .collect();
        rows.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.key.cmp(&b.1.key)));
        rows.into_iter().map(|(_, entry)| entry).collect()
    }

    /// The kept revisions of `key`, newest first.
    pub fn history(&self, key: &str) -> Vec<MemoryRevision> {
        self.keys
            .get(key)
            .map(|revisions| {
                revisions
                    .iter()
                    .rev()
                    .map(|r| MemoryRevision {
                        entry: r.entry(key),
                        forgotten: r.forgotten,
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Applies every write or none (see the `MemoryStore` contract).
    ///
    /// # Errors
    /// The [`MemoryError`] of the first write that breaks a rule; the document is then
    /// unchanged.
    pub fn put_many(
        &mut self,
        writes: Vec<MemoryWrite>,
        now: SystemTime,
    ) -> Result<Applied<Vec<MemoryEntry>>, MemoryError> {
        for write in &writes {
            check_memory_write(write)?;
        }
        // Check versions and the key cap against the state the batch builds up.
        let mut state: BTreeMap<&str, (Option<u64>, u64)> = BTreeMap::new();
        let mut live_keys = self.live_keys();
        for write in &writes {
            let (current, last) = *state.entry(write.key.as_str()).or_insert_with(|| {
                let revisions = self.keys.get(&write.key);
                (
                    revisions.and_then(|r| live(r)).map(|r| r.version),
                    revisions.and_then(|r| r.last()).map_or(0, |r| r.version),
                )
            });
            match (write.expected_version, current) {
                (None, Some(version)) => {
                    return Err(MemoryError::AlreadyExists {
                        key: write.key.clone(),
                        version,
                    });
                }
                (None, None) => {
                    if live_keys >= MAX_MEMORY_KEYS {
                        return Err(MemoryError::TooManyKeys {
                            key: write.key.clone(),
                        });
                    }
                    live_keys += 1;
                }
                (Some(_), None) => {
                    return Err(MemoryError::NotFound {
                        key: write.key.clone(),
                    });
                }
                (Some(expected), Some(current)) if expected != current => {
                    return Err(MemoryError::VersionMismatch {
                        key: write.key.clone(),
                        expected,
                        current,
                    });
                }
                (Some(_), Some(_)) => {}
            }
            state.insert(write.key.as_str(), (Some(last + 1), last + 1));
        }
        let last_key = writes.last().map(|w| w.key.clone()).unwrap_or_default();
        let saved = self.save_keys(writes.iter().map(|w| w.key.as_str()));
        let mut entries = Vec::with_capacity(writes.len());
        for write in writes {
            let revision = self.push(
                &write.key,
                now,
                write.writer,
                false,
                write.value,
                write.description,
            );
            entries.push(revision.entry(&write.key));
        }
        let json = self.fit(saved, &last_key)?;
        Ok(Applied {
            outcome: entries,
            json,
        })
    }

    /// Forgets the live entry of `key` at `expected_version`, leaving a tombstone.
    ///
    /// # Errors
    /// [`MemoryError::InvalidKey`], [`MemoryError::NotFound`],
    /// [`MemoryError::VersionMismatch`]; the document is then unchanged.
    pub fn forget(
        &mut self,
        key: &str,
        expected_version: u64,
        writer: &str,
        now: SystemTime,
    ) -> Result<Applied<u64>, MemoryError> {
        check_memory_key(key)?;
        let current = self
            .keys
            .get(key)
            .and_then(|r| live(r))
            .map(|r| r.version)
            .ok_or_else(|| MemoryError::NotFound { key: key.to_owned() })?;
        if current != expected_version {
            return Err(MemoryError::VersionMismatch {
                key: key.to_owned(),
                expected: expected_version,
                current,
            });
        }
        let saved = self.save_keys([key]);
        let version = self
            .push(key, now, writer.to_owned(), true, String::new(), String::new())
            .version;
        let json = self.fit(saved, key)?;
        Ok(Applied {
            outcome: version,
            json,
        })
    }

    /// Appends a revision to `key` (dropping the oldest past the kept count).
    fn push(
        &mut self,
        key: &str,
        now: SystemTime,
        writer: String,
        forgotten: bool,
        value: String,
        description: String,
    ) -> &StoredRevision {
        self.seq += 1;
        let seq = self.seq;
        let revisions = self.keys.entry(key.to_owned()).or_default();
        let version = revisions.last().map_or(0, |r| r.version) + 1;
        revisions.push(StoredRevision {
            version,
            seq,
            updated_at: now,
            writer,
            forgotten,
            value,
            description,
        });
        if revisions.len() > MEMORY_REVISIONS_KEPT {
            let extra = revisions.len() - MEMORY_REVISIONS_KEPT;
            revisions.drain(..extra);
        }
        &revisions[revisions.len() - 1]
    }

    /// The revisions of `keys` and the counter before a change, to undo it.
    fn save_keys<'a>(&self, keys: impl IntoIterator<Item = &'a str>) -> Saved {
        let mut saved = Saved {
            seq: self.seq,
            keys: BTreeMap::new(),
        };
        for key in keys {
            saved
                .keys
                .entry(key.to_owned())
                .or_insert_with(|| self.keys.get(key).cloned());
        }
        saved
    }

    fn restore(&mut self, saved: Saved) {
        self.seq = saved.seq;
        for (key, revisions) in saved.keys {
            match revisions {
                Some(revisions) => self.keys.insert(key, revisions),
                None => self.keys.remove(&key),
            };
        }
    }

    /// Serializes the changed document under [`MAX_MEMORY_DOCUMENT_BYTES`]: over it,
    /// past revisions are dropped oldest first (never a key's current one); when even
    /// that cannot fit, the change is undone and refused.
    fn fit(&mut self, saved: Saved, key: &str) -> Result<Vec<u8>, MemoryError> {
        let json = self.to_json();
        if json.len() <= MAX_MEMORY_DOCUMENT_BYTES {
            return Ok(json);
        }
        let mut past: Vec<(u64, String, usize)> = Vec::new();
        for (name, revisions) in &self.keys {
            for revision in &revisions[..revisions.len() - 1] {
                let bytes = serde_json::to_vec(revision).map_or(0, |b| b.len()) + 1;
                past.push((revision.seq, name.clone(), bytes));
            }
        }
        let removable: usize = past.iter().map(|p| p.2).sum();
        if json.len().saturating_sub(removable) > MAX_MEMORY_DOCUMENT_BYTES {
            let bytes = json.len().saturating_sub(removable);
            self.restore(saved);
            return Err(MemoryError::DocumentFull {
                key: key.to_owned(),
                bytes,
            });
        }
        past.sort_by_key(|p| p.0);
        let mut size = json.len();
        for (seq, name, bytes) in past {
            if size <= MAX_MEMORY_DOCUMENT_BYTES {
                break;
            }
            if let Some(revisions) = self.keys.get_mut(&name) {
                revisions.retain(|r| r.seq != seq);
            }
            size = size.saturating_sub(bytes);
        }
        let json = self.to_json();
        tracing::info!(
            bytes = json.len(),
            "memory document over its cap: the oldest past revisions were dropped"
        );
        Ok(json)
    }
}

struct Saved {
    seq: u64,
    keys: BTreeMap<String, Option<Vec<StoredRevision>>>,
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    fn write(key: &str, value: String, expected: Option<u64>) -> MemoryWrite {
        MemoryWrite {
            key: key.to_owned(),
            value,
            description: String::new(),
            expected_version: expected,
            writer: "test".to_owned(),
        }
    }

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(seconds)
    }

    #[test]
    fn a_document_round_trips_through_json() {
        let mut document = MemoryDocument::new();
        document
            .put_many(vec![write("a/b", "x\ny".to_owned(), None)], at(1_700_000_000))
            .unwrap();
        document.forget("a/b", 1, "test", at(1_700_000_001)).unwrap();
        let json = document.to_json();
        assert_eq!(MemoryDocument::from_json(&json).unwrap(), document);
    }

    #[test]
    fn documents_breaking_a_rule_are_refused() {
        let bad_key = br#"{"seq":1,"keys":{"Bad":[{"version":1,"seq":1,"updated_at":"2024-01-01T00:00:00Z","writer":"w"}]}}"#;
        assert!(MemoryDocument::from_json(bad_key).unwrap_err().contains("Bad"));
        let unordered = br#"{"seq":2,"keys":{"a":[{"version":2,"seq":1,"updated_at":"2024-01-01T00:00:00Z","writer":"w"},{"version":1,"seq":2,"updated_at":"2024-01-01T00:00:00Z","writer":"w"}]}}"#;
        assert!(
            MemoryDocument::from_json(unordered)
                .unwrap_err()
                .contains("out of order")
        );
        let huge = br#"{"seq":18446744073709551615,"keys":{}}"#;
        assert!(MemoryDocument::from_json(huge).unwrap_err().contains("is over"));
        let huge_version = br#"{"seq":1,"keys":{"a":[{"version":18446744073709551615,"seq":1,"updated_at":"2024-01-01T00:00:00Z","writer":"w"}]}}"#;
        assert!(
            MemoryDocument::from_json(huge_version)
                .unwrap_err()
                .contains("a version over")
        );
        let unknown = br#"{"seq":0,"keys":{},"extra":1}"#;
        assert!(MemoryDocument::from_json(unknown).is_err());
        assert!(MemoryDocument::from_json(b"{\"seq\":0,\"keys\":{").is_err());
    }

    #[test]
    fn over_the_document_cap_old_revisions_go_first_and_current_values_stay() {
        let mut document = MemoryDocument::new();
        let big = |c: char| c.to_string().repeat(MAX_MEMORY_VALUE_BYTES);
        // 100 keys × 64 KiB ≈ 6.4 MiB of current values.
        let writes = (0..100)
            .map(|i| write(&format!("k{i}"), big('a'), None))
            .collect();
        document.put_many(writes, at(1)).unwrap();
        // Replacing some of them keeps their old revisions until the cap forces them out.
        let writes = (0..40)
            .map(|i| write(&format!("k{i}"), big('b'), Some(1)))
            .collect();
        document.put_many(writes, at(2)).unwrap();
        assert!(document.to_json().len() <= MAX_MEMORY_DOCUMENT_BYTES);
        for i in 0..40 {
            assert_eq!(document.get(&format!("k{i}")).unwrap().value, big('b'));
        }
        // The newest past revisions survive; the oldest went.
        assert_eq!(document.history("k39").len(), 2);
        assert_eq!(document.history("k0").len(), 1);
        // Current values alone over the cap: refused, nothing changed.
        let before = document.clone();
        let writes = (100..140)
            .map(|i| write(&format!("k{i}"), big('c'), None))
            .collect();
        let error = document.put_many(writes, at(3)).unwrap_err();
        assert!(matches!(error, MemoryError::DocumentFull { .. }), "{error:?}");
        assert!(
            error.to_string().contains("over its 8388608-byte (8 MiB) cap"),
            "{error}"
        );
        assert_eq!(document, before);
    }
}
