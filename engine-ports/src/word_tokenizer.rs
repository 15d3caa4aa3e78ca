//! [`WordTokenizer`]: the words every BM25 ranking of the workspace indexes (tool
//! search in the engine, memory search in every memory store), so a query finds the
//! same words whichever index it asks; [`WordIndex`]: that ranking, over numbered
//! documents.

use bm25::{Embedder, EmbedderBuilder, Scorer, Tokenizer};

/// BM25's English tokenizer (lower case, stop words, Snowball stems) after splitting
/// identifiers into words: on `__`, `_`, `-`, `.` and other punctuation, and at
/// camelCase boundaries (`getTinyImage` → get tiny image, `HTTPServer` → http server).
#[derive(Debug)]
pub struct WordTokenizer(bm25::DefaultTokenizer);

impl WordTokenizer {
    /// The tokenizer (English stop words and stems).
    pub fn new() -> Self {
        Self(bm25::DefaultTokenizer::new(bm25::Language::English))
    }
}

impl Default for WordTokenizer {
    fn default() -> Self {
        Self::new()
    }
}

impl Tokenizer for WordTokenizer {
    fn tokenize(&self, input_text: &str) -> Vec<String> {
        self.0.tokenize(&split_words(input_text))
    }
}

/// A BM25 index over documents numbered in the order they were given, tokenized by
/// [`WordTokenizer`]: built once, ranked for every query.
pub struct WordIndex {
    embedder: Embedder<u32, WordTokenizer>,
    scorer: Scorer<u32>,
}

impl std::fmt::Debug for WordIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WordIndex").finish_non_exhaustive()
    }
}

impl WordIndex {
    /// Fits the index to `documents` (IDF over them) and indexes each under its position.
    pub fn build<D: AsRef<str>>(documents: &[D]) -> Self {
        let corpus: Vec<&str> = documents.iter().map(AsRef::as_ref).collect();
        let embedder = EmbedderBuilder::<u32, WordTokenizer>::with_tokenizer_and_fit_to_corpus(
            WordTokenizer::new(),
            &corpus,
        )
        .build();
        let mut scorer = Scorer::<u32>::new();
        for (id, text) in (0u32..).zip(&corpus) {
            scorer.upsert(&id, embedder.embed(text));
        }
        Self { embedder, scorer }
    }

    /// The documents sharing a word with `query`, as (position, score): best first,
    /// ties by position.
    pub fn rank(&self, query: &str) -> Vec<(usize, f32)> {
        let mut hits = self.scorer.matches(&self.embedder.embed(query));
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
        hits.into_iter().map(|hit| (hit.id as usize, hit.score)).collect()
    }
}

/// `text` with a space at every identifier boundary (see [`WordTokenizer`]).
fn split_words(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_punctuation() {
            out.push(' ');
            continue;
        }
        if c.is_uppercase() && i > 0 {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase() || prev.is_ascii_digit() || (prev.is_uppercase() && next_lower) {
                out.push(' ');
            }
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::split_words;

    #[test]
    fn identifiers_split_into_words() {
        assert_eq!(split_words("mcp__fs__read_text_file"), "mcp  fs  read text file");
        assert_eq!(split_words("get-tiny-image.v2"), "get tiny image v2");
        assert_eq!(split_words("getTinyImage"), "get Tiny Image");
        assert_eq!(
            split_words("HTTPServer listFiles2Go"),
            "HTTP Server list Files2 Go"
        );
    }
}
