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
