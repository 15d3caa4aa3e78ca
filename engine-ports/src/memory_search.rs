//! [`MemorySearch`]: BM25 ranking over a memory scope's live entries (key words,
//! description, value), built once per document state and reused by every search.

use crate::memory::{MemoryEntry, MemoryHit};
use crate::word_tokenizer::WordIndex;

/// The keyword index of one document state.
pub struct MemorySearch {
    /// Document id → (key, description, version), ids in key order.
    rows: Vec<(String, String, u64)>,
    index: WordIndex,
}

impl std::fmt::Debug for MemorySearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemorySearch")
            .field("entries", &self.rows.len())
            .finish()
    }
}

impl MemorySearch {
    /// Indexes `entries` (sorted by key, as a document lists them). A key's words count
    /// twice: a word in the key says more about a note than one in its value.
    pub fn build(entries: impl IntoIterator<Item = MemoryEntry>) -> Self {
        let mut rows = Vec::new();
        let mut documents = Vec::new();
        for entry in entries {
            documents.push(format!(
                "{key} {key} {} {}",
                entry.description,
                entry.value,
                key = entry.key
            ));
            rows.push((entry.key, entry.description, entry.version));
        }
        Self {
            index: WordIndex::build(&documents),
            rows,
        }
    }

    /// The entries matching `query`'s words, best first, ties by key, zero scores left
    /// out, at most `limit`.
    pub fn search(&self, query: &str, limit: usize) -> Vec<MemoryHit> {
        // Ids follow key order, so ties by id are ties by key.
        self.index
            .rank(query)
            .into_iter()
            .filter(|&(_, score)| score > 0.0)
            .take(limit)
            .filter_map(|(id, score)| {
                self.rows.get(id).map(|(key, description, version)| MemoryHit {
                    key: key.clone(),
                    description: description.clone(),
                    version: *version,
                    score,
                })
            })
            .collect()
    }
}

/// One parsed version of a stored scope: the document, what identifies that version
/// in its store (a file's identity, a row's version), and its [`MemorySearch`] index,
/// built by the first search and shared by the ones after it. Stores cache the last
/// one they read or wrote and reuse it while the stored version is unchanged.
#[derive(Debug)]
pub struct LoadedDocument<V> {
    /// What identifies this version in the store.
    pub version: V,
    /// The document.
    pub document: crate::MemoryDocument,
    search: std::sync::OnceLock<std::sync::Arc<MemorySearch>>,
}

impl<V> LoadedDocument<V> {
    /// The document at `version`; its index is built on first use.
    pub fn new(version: V, document: crate::MemoryDocument) -> Self {
        Self {
            version,
            document,
            search: std::sync::OnceLock::new(),
        }
    }

    /// The index if a search already built it (building one is CPU work a caller may
    /// want off its async threads).
    pub fn built_search(&self) -> Option<std::sync::Arc<MemorySearch>> {
        self.search.get().cloned()
    }

    /// The keyword index of the document's live entries.
    pub fn search(&self) -> std::sync::Arc<MemorySearch> {
        std::sync::Arc::clone(
            self.search
                .get_or_init(|| std::sync::Arc::new(MemorySearch::build(self.document.live_entries()))),
        )
    }
}

/// The last [`LoadedDocument`] a store read or wrote, shared by its calls (a poisoned
/// lock is used as it is: the slot holds a whole value or none).
#[derive(Debug)]
pub struct CachedDocument<V> {
    slot: std::sync::Mutex<Option<std::sync::Arc<LoadedDocument<V>>>>,
}

impl<V> Default for CachedDocument<V> {
    fn default() -> Self {
        Self {
            slot: std::sync::Mutex::new(None),
        }
    }
}

impl<V> CachedDocument<V> {
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<std::sync::Arc<LoadedDocument<V>>>> {
        self.slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The cached document, if any.
    pub fn get(&self) -> Option<std::sync::Arc<LoadedDocument<V>>> {
        self.slot().clone()
    }

    /// Caches `loaded`.
    pub fn set(&self, loaded: &std::sync::Arc<LoadedDocument<V>>) {
        *self.slot() = Some(std::sync::Arc::clone(loaded));
    }

    /// Caches `loaded` unless `keep(held)` says the document already cached should
    /// stay (two calls racing: the newer version stays).
    pub fn set_unless(
        &self,
        loaded: &std::sync::Arc<LoadedDocument<V>>,
        keep: impl FnOnce(&LoadedDocument<V>) -> bool,
    ) {
        let mut slot = self.slot();
        if !slot.as_deref().is_some_and(keep) {
            *slot = Some(std::sync::Arc::clone(loaded));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{CachedDocument, LoadedDocument};
    use crate::MemoryDocument;

    fn loaded(version: u64) -> Arc<LoadedDocument<u64>> {
        Arc::new(LoadedDocument::new(version, MemoryDocument::new()))
    }

    #[test]
    fn a_cached_document_stays_only_while_the_caller_says_it_is_newer() {
        let cache = CachedDocument::default();
        assert!(cache.get().is_none());
        cache.set_unless(&loaded(2), |_| true);
        assert_eq!(
            cache.get().map(|held| held.version),
            Some(2),
            "an empty slot is filled"
        );
        cache.set_unless(&loaded(1), |held| held.version > 1);
        assert_eq!(
            cache.get().map(|held| held.version),
            Some(2),
            "the newer one stays"
        );
        cache.set_unless(&loaded(3), |held| held.version > 3);
        assert_eq!(cache.get().map(|held| held.version), Some(3));
        cache.set(&loaded(1));
        assert_eq!(
            cache.get().map(|held| held.version),
            Some(1),
            "set always replaces"
        );
    }
}
