//! Conformance suite for [`MemoryStore`] implementations.

use std::sync::Arc;

use futures::future::join_all;

use crate::memory::{
    MAX_MEMORY_DESCRIPTION_BYTES, MAX_MEMORY_KEY_BYTES, MAX_MEMORY_KEYS, MAX_MEMORY_VALUE_BYTES,
    MEMORY_REVISIONS_KEPT, MemoryEntry, MemoryError, MemoryStore, MemoryWrite,
};

/// Runs every memory-store case, each against a fresh, empty store from `make`.
///
/// The suite tests the port contract only (never file names or modes). Run it from a
/// multi-threaded tokio runtime.
///
/// # Panics
/// When a case fails; the message names the case (`memory_store::<case>`).
pub async fn run(make: impl Fn() -> Arc<dyn MemoryStore>) {
    an_empty_store_has_nothing(make()).await;
    create_then_get_round_trips(make()).await;
    create_only_refuses_an_existing_key_with_its_version(make()).await;
    compare_and_set_replaces_the_current_version(make()).await;
    a_stale_version_is_refused_with_the_current_one(make()).await;
    a_version_for_a_missing_key_is_refused(make()).await;
    forget_leaves_a_tombstone_and_versions_go_on(make()).await;
    forget_needs_the_current_version(make()).await;
    keys_breaking_the_grammar_are_refused(make()).await;
    value_and_description_caps_are_exact(make()).await;
    the_live_key_cap_is_exact_and_forgetting_frees_a_slot(make()).await;
    a_batch_is_all_or_nothing(make()).await;
    only_the_last_revisions_are_kept(make()).await;
    prefix_lists_live_keys_sorted_and_counts_them(make()).await;
    index_is_most_recently_written_first(make()).await;
    search_ranks_by_words_ties_by_key_and_drops_zero_scores(make()).await;
    racing_writers_of_distinct_keys_lose_nothing(make()).await;
    racing_creates_of_one_key_have_one_winner(make()).await;
}

/// A create-only write by `writer` "conformance".
pub fn create(key: &str, value: &str, description: &str) -> MemoryWrite {
    MemoryWrite {
        key: key.to_owned(),
        value: value.to_owned(),
        description: description.to_owned(),
        expected_version: None,
        writer: "conformance".to_owned(),
    }
}

fn update(key: &str, value: &str, expected: u64) -> MemoryWrite {
    MemoryWrite {
        expected_version: Some(expected),
        ..create(key, value, "")
    }
}

async fn put_ok(store: &dyn MemoryStore, write: MemoryWrite, case: &str) -> MemoryEntry {
    let key = write.key.clone();
    match store.put(write).await {
        Ok(entry) => entry,
        Err(error) => panic!("memory_store::{case}: put of {key:?} failed: {error}"),
    }
}

async fn get_ok(store: &dyn MemoryStore, key: &str, case: &str) -> Option<MemoryEntry> {
    match store.get(key).await {
        Ok(entry) => entry,
        Err(error) => panic!("memory_store::{case}: get of {key:?} failed: {error}"),
    }
}

async fn put_err(store: &dyn MemoryStore, write: MemoryWrite, case: &str) -> MemoryError {
    let key = write.key.clone();
    match store.put(write).await {
        Ok(entry) => panic!(
            "memory_store::{case}: put of {key:?} succeeded at version {}",
            entry.version
        ),
        Err(error) => error,
    }
}

async fn index_keys(store: &dyn MemoryStore, case: &str) -> Vec<String> {
    match store.index().await {
        Ok(index) => index.into_iter().map(|e| e.key).collect(),
        Err(error) => panic!("memory_store::{case}: index failed: {error}"),
    }
}

async fn an_empty_store_has_nothing(store: Arc<dyn MemoryStore>) {
    let case = "an_empty_store_has_nothing";
    assert_eq!(
        get_ok(store.as_ref(), "a", case).await,
        None,
        "memory_store::{case}"
    );
    assert!(
        index_keys(store.as_ref(), case).await.is_empty(),
        "memory_store::{case}"
    );
    let prefix = store
        .prefix("", 10)
        .await
        .unwrap_or_else(|e| panic!("memory_store::{case}: {e}"));
    assert_eq!(prefix.total, 0, "memory_store::{case}");
    let hits = store
        .search("anything", 10)
        .await
        .unwrap_or_else(|e| panic!("memory_store::{case}: {e}"));
    assert!(hits.is_empty(), "memory_store::{case}");
    let history = store
        .history("a")
        .await
        .unwrap_or_else(|e| panic!("memory_store::{case}: {e}"));
    assert!(history.is_empty(), "memory_store::{case}");
}

async fn create_then_get_round_trips(store: Arc<dyn MemoryStore>) {
    let case = "create_then_get_round_trips";
    let value = "cargo test -p app\nünïcode \"quoted\" \u{0}";
    let entry = put_ok(
        store.as_ref(),
        create("build/test-cmd", value, "how tests run"),
        case,
    )
    .await;
    assert_eq!(entry.version, 1, "memory_store::{case}");
    let got = get_ok(store.as_ref(), "build/test-cmd", case)
        .await
        .unwrap_or_else(|| panic!("memory_store::{case}: the entry is missing"));
    assert_eq!(got.value, value, "memory_store::{case}");
    assert_eq!(got.description, "how tests run", "memory_store::{case}");
    assert_eq!(got.version, 1, "memory_store::{case}");
    assert_eq!(got.writer, "conformance", "memory_store::{case}");
    assert_eq!(got, entry, "memory_store::{case}: put returns what get reads");
}

async fn create_only_refuses_an_existing_key_with_its_version(store: Arc<dyn MemoryStore>) {
    let case = "create_only_refuses_an_existing_key_with_its_version";
    put_ok(store.as_ref(), create("k", "one", ""), case).await;
    put_ok(store.as_ref(), update("k", "two", 1), case).await;
    let error = put_err(store.as_ref(), create("k", "three", ""), case).await;
    assert!(
        matches!(error, MemoryError::AlreadyExists { ref key, version: 2 } if key == "k"),
        "memory_store::{case}: {error:?}"
    );
    assert_eq!(
        error.to_string(),
        "memory \"k\" already exists at version 2; to replace it, write again with expected_version 2",
        "memory_store::{case}"
    );
    let got = get_ok(store.as_ref(), "k", case).await.map(|e| e.value);
    assert_eq!(
        got.as_deref(),
        Some("two"),
        "memory_store::{case}: nothing changed"
    );
}

async fn compare_and_set_replaces_the_current_version(store: Arc<dyn MemoryStore>) {
    let case = "compare_and_set_replaces_the_current_version";
    put_ok(store.as_ref(), create("k", "one", "first"), case).await;
    let entry = put_ok(store.as_ref(), update("k", "two", 1), case).await;
    assert_eq!(entry.version, 2, "memory_store::{case}");
    let got = get_ok(store.as_ref(), "k", case).await;
    assert_eq!(
        got.as_ref().map(|e| e.value.as_str()),
        Some("two"),
        "memory_store::{case}"
    );
    assert_eq!(
        got.map(|e| e.description),
        Some(String::new()),
        "memory_store::{case}: the write replaces the description too"
    );
}

async fn a_stale_version_is_refused_with_the_current_one(store: Arc<dyn MemoryStore>) {
    let case = "a_stale_version_is_refused_with_the_current_one";
    put_ok(store.as_ref(), create("k", "one", ""), case).await;
    put_ok(store.as_ref(), update("k", "two", 1), case).await;
    let error = put_err(store.as_ref(), update("k", "three", 1), case).await;
    assert_eq!(
        error.to_string(),
        "memory \"k\" is at version 2, not 1; recall it and retry with expected_version 2",
        "memory_store::{case}"
    );
    let error = store
        .forget("k", 1, "conformance")
        .await
        .err()
        .unwrap_or_else(|| panic!("memory_store::{case}: a stale forget succeeded"));
    assert!(
        matches!(error, MemoryError::VersionMismatch { current: 2, .. }),
        "memory_store::{case}"
    );
    let got = get_ok(store.as_ref(), "k", case).await.map(|e| e.value);
    assert_eq!(got.as_deref(), Some("two"), "memory_store::{case}");
}

async fn a_version_for_a_missing_key_is_refused(store: Arc<dyn MemoryStore>) {
    let case = "a_version_for_a_missing_key_is_refused";
    let error = put_err(store.as_ref(), update("nope", "x", 1), case).await;
    assert_eq!(
        error.to_string(),
        "no memory \"nope\" to change (it is missing or was forgotten); nothing changed",
        "memory_store::{case}"
    );
    assert_eq!(
        get_ok(store.as_ref(), "nope", case).await,
        None,
        "memory_store::{case}"
    );
}

async fn forget_leaves_a_tombstone_and_versions_go_on(store: Arc<dyn MemoryStore>) {
    let case = "forget_leaves_a_tombstone_and_versions_go_on";
    put_ok(store.as_ref(), create("k", "one", ""), case).await;
    let tombstone = store
        .forget("k", 1, "conformance")
        .await
        .unwrap_or_else(|e| panic!("memory_store::{case}: forget failed: {e}"));
    assert_eq!(tombstone, 2, "memory_store::{case}");
    assert_eq!(
        get_ok(store.as_ref(), "k", case).await,
        None,
        "memory_store::{case}"
    );
    assert!(
        index_keys(store.as_ref(), case).await.is_empty(),
        "memory_store::{case}"
    );
    let error = store.forget("k", 2, "conformance").await.err();
    assert!(
        matches!(error, Some(MemoryError::NotFound { .. })),
        "memory_store::{case}: {error:?}"
    );
    let error = put_err(store.as_ref(), update("k", "x", 2), case).await;
    assert!(
        matches!(error, MemoryError::NotFound { .. }),
        "memory_store::{case}: {error:?}"
    );
    let again = put_ok(store.as_ref(), create("k", "two", ""), case).await;
    assert_eq!(
        again.version, 3,
        "memory_store::{case}: versions go on after a tombstone"
    );
    let history = store
        .history("k")
        .await
        .unwrap_or_else(|e| panic!("memory_store::{case}: {e}"));
    let shape: Vec<(u64, bool, &str)> = history
        .iter()
        .map(|r| (r.entry.version, r.forgotten, r.entry.value.as_str()))
        .collect();
    assert_eq!(
        shape,
        [(3, false, "two"), (2, true, ""), (1, false, "one")],
        "memory_store::{case}"
    );
}

async fn forget_needs_the_current_version(store: Arc<dyn MemoryStore>) {
    let case = "forget_needs_the_current_version";
    let error = store.forget("missing", 1, "conformance").await.err();
    assert!(
        matches!(error, Some(MemoryError::NotFound { .. })),
        "memory_store::{case}: {error:?}"
    );
    let error = store.forget("Bad Key", 1, "conformance").await.err();
    assert!(
        matches!(error, Some(MemoryError::InvalidKey { .. })),
        "memory_store::{case}: {error:?}"
    );
}

async fn keys_breaking_the_grammar_are_refused(store: Arc<dyn MemoryStore>) {
    let case = "keys_breaking_the_grammar_are_refused";
    let long = "k".repeat(MAX_MEMORY_KEY_BYTES + 1);
    for key in [
        "",
        "Build",
        "build//cmd",
        "/build",
        "build/",
        "build cmd",
        "9lives",
        "naïve",
        long.as_str(),
    ] {
        let error = put_err(store.as_ref(), create(key, "v", ""), case).await;
        assert!(
            matches!(error, MemoryError::InvalidKey { .. }),
            "memory_store::{case}: {key:?}: {error:?}"
        );
    }
    let error = put_err(store.as_ref(), create("Build", "v", ""), case).await;
    assert_eq!(
        error.to_string(),
        "invalid memory key \"Build\": keys are segment(/segment)* where each segment starts with a-z \
         and goes on with a-z, 0-9, _ or - (e.g. build/test-command)",
        "memory_store::{case}"
    );
    let error = put_err(store.as_ref(), create(&long, "v", ""), case).await;
    assert_eq!(
        error.to_string(),
        format!("invalid memory key {long:?}: it is 129 bytes; a key has at most 128"),
        "memory_store::{case}"
    );
    put_ok(
        store.as_ref(),
        create(&"k".repeat(MAX_MEMORY_KEY_BYTES), "v", ""),
        case,
    )
    .await;
    assert_eq!(
        index_keys(store.as_ref(), case).await.len(),
        1,
        "memory_store::{case}"
    );
}

async fn value_and_description_caps_are_exact(store: Arc<dyn MemoryStore>) {
    let case = "value_and_description_caps_are_exact";
    let at_cap = "v".repeat(MAX_MEMORY_VALUE_BYTES);
    put_ok(
        store.as_ref(),
        create("at-cap", &at_cap, &"d".repeat(MAX_MEMORY_DESCRIPTION_BYTES)),
        case,
    )
    .await;
    let error = put_err(
        store.as_ref(),
        create("over", &"v".repeat(MAX_MEMORY_VALUE_BYTES + 1), ""),
        case,
    )
    .await;
    assert_eq!(
        error.to_string(),
        "the value for \"over\" is 65537 bytes; a value has at most 65536 bytes (64 KiB)",
        "memory_store::{case}"
    );
    let error = put_err(
        store.as_ref(),
        create("over", "v", &"d".repeat(MAX_MEMORY_DESCRIPTION_BYTES + 1)),
        case,
    )
    .await;
    assert_eq!(
        error.to_string(),
        "the description for \"over\" is 65537 bytes; a description has at most 65536 bytes (64 KiB)",
        "memory_store::{case}"
    );
    assert_eq!(
        get_ok(store.as_ref(), "over", case).await,
        None,
        "memory_store::{case}"
    );
}

async fn the_live_key_cap_is_exact_and_forgetting_frees_a_slot(store: Arc<dyn MemoryStore>) {
    let case = "the_live_key_cap_is_exact_and_forgetting_frees_a_slot";
    let writes: Vec<MemoryWrite> = (0..MAX_MEMORY_KEYS)
        .map(|i| create(&format!("k/n{i:04}"), "v", ""))
        .collect();
    if let Err(error) = store.put_many(writes).await {
        panic!("memory_store::{case}: {MAX_MEMORY_KEYS} keys refused: {error}");
    }
    let error = put_err(store.as_ref(), create("one-more", "v", ""), case).await;
    assert_eq!(
        error.to_string(),
        "memory is full: it holds 4096 keys, the most it keeps; forget a key before adding \"one-more\"",
        "memory_store::{case}"
    );
    // Replacing a key is not adding one.
    put_ok(store.as_ref(), update("k/n0000", "w", 1), case).await;
    if let Err(error) = store.forget("k/n0001", 1, "conformance").await {
        panic!("memory_store::{case}: forget failed: {error}");
    }
    put_ok(store.as_ref(), create("one-more", "v", ""), case).await;
    assert_eq!(
        index_keys(store.as_ref(), case).await.len(),
        MAX_MEMORY_KEYS,
        "memory_store::{case}"
    );
}

async fn a_batch_is_all_or_nothing(store: Arc<dyn MemoryStore>) {
    let case = "a_batch_is_all_or_nothing";
    put_ok(store.as_ref(), create("taken", "v", ""), case).await;
    let result = store
        .put_many(vec![create("fresh", "v", ""), create("taken", "w", "")])
        .await;
    assert!(
        matches!(result, Err(MemoryError::AlreadyExists { .. })),
        "memory_store::{case}: {result:?}"
    );
    assert_eq!(
        get_ok(store.as_ref(), "fresh", case).await,
        None,
        "memory_store::{case}"
    );
    // Two writes of one key in a batch chain their versions.
    let entries = store
        .put_many(vec![create("pair", "one", ""), update("pair", "two", 1)])
        .await
        .unwrap_or_else(|e| panic!("memory_store::{case}: {e}"));
    let versions: Vec<u64> = entries.iter().map(|e| e.version).collect();
    assert_eq!(versions, [1, 2], "memory_store::{case}");
}

async fn only_the_last_revisions_are_kept(store: Arc<dyn MemoryStore>) {
    let case = "only_the_last_revisions_are_kept";
    put_ok(store.as_ref(), create("k", "v1", ""), case).await;
    for version in 1..20u64 {
        put_ok(
            store.as_ref(),
            update("k", &format!("v{}", version + 1), version),
            case,
        )
        .await;
    }
    let history = store
        .history("k")
        .await
        .unwrap_or_else(|e| panic!("memory_store::{case}: {e}"));
    let versions: Vec<u64> = history.iter().map(|r| r.entry.version).collect();
    let expected: Vec<u64> = (5..=20).rev().collect();
    assert_eq!(versions.len(), MEMORY_REVISIONS_KEPT, "memory_store::{case}");
    assert_eq!(versions, expected, "memory_store::{case}");
    assert_eq!(history[0].entry.value, "v20", "memory_store::{case}");
}

async fn prefix_lists_live_keys_sorted_and_counts_them(store: Arc<dyn MemoryStore>) {
    let case = "prefix_lists_live_keys_sorted_and_counts_them";
    for key in ["build/z", "build/a", "build/m", "builder", "deploy/x"] {
        put_ok(store.as_ref(), create(key, key, ""), case).await;
    }
    if let Err(error) = store.forget("build/m", 1, "conformance").await {
        panic!("memory_store::{case}: {error}");
    }
    let found = store
        .prefix("build/", 1)
        .await
        .unwrap_or_else(|e| panic!("memory_store::{case}: {e}"));
    assert_eq!(found.total, 2, "memory_store::{case}");
    let keys: Vec<&str> = found.entries.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(keys, ["build/a"], "memory_store::{case}");
    let found = store
        .prefix("build", 10)
        .await
        .unwrap_or_else(|e| panic!("memory_store::{case}: {e}"));
    let keys: Vec<&str> = found.entries.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(keys, ["build/a", "build/z", "builder"], "memory_store::{case}");
    assert_eq!(
        found.entries[0].value, "build/a",
        "memory_store::{case}: values are listed"
    );
}

async fn index_is_most_recently_written_first(store: Arc<dyn MemoryStore>) {
    let case = "index_is_most_recently_written_first";
    for key in ["a", "b", "c"] {
        put_ok(store.as_ref(), create(key, "v", &format!("about {key}")), case).await;
    }
    put_ok(store.as_ref(), update("a", "w", 1), case).await;
    let index = store
        .index()
        .await
        .unwrap_or_else(|e| panic!("memory_store::{case}: {e}"));
    let shape: Vec<(&str, &str, u64)> = index
        .iter()
        .map(|e| (e.key.as_str(), e.description.as_str(), e.version))
        .collect();
    assert_eq!(
        shape,
        [("a", "", 2), ("c", "about c", 1), ("b", "about b", 1)],
        "memory_store::{case}"
    );
}

async fn search_ranks_by_words_ties_by_key_and_drops_zero_scores(store: Arc<dyn MemoryStore>) {
    let case = "search_ranks_by_words_ties_by_key_and_drops_zero_scores";
    put_ok(
        store.as_ref(),
        create(
            "build/test-command",
            "cargo test --workspace",
            "how the tests are run",
        ),
        case,
    )
    .await;
    put_ok(
        store.as_ref(),
        create("deploy/host", "staging.example", "where deploys go"),
        case,
    )
    .await;
    put_ok(
        store.as_ref(),
        create("style/b", "tabs", "indentation style"),
        case,
    )
    .await;
    put_ok(
        store.as_ref(),
        create("style/a", "tabs", "indentation style"),
        case,
    )
    .await;
    let hits = store
        .search("tests", 10)
        .await
        .unwrap_or_else(|e| panic!("memory_store::{case}: {e}"));
    let keys: Vec<&str> = hits.iter().map(|h| h.key.as_str()).collect();
    assert_eq!(
        keys,
        ["build/test-command"],
        "memory_store::{case}: stems match, others drop"
    );
    assert_eq!(
        hits[0].description, "how the tests are run",
        "memory_store::{case}"
    );
    assert_eq!(hits[0].version, 1, "memory_store::{case}");
    assert!(hits[0].score > 0.0, "memory_store::{case}");
    let hits = store
        .search("indentation", 10)
        .await
        .unwrap_or_else(|e| panic!("memory_store::{case}: {e}"));
    let keys: Vec<&str> = hits.iter().map(|h| h.key.as_str()).collect();
    assert_eq!(keys, ["style/a", "style/b"], "memory_store::{case}: ties by key");
    let hits = store
        .search("indentation", 1)
        .await
        .unwrap_or_else(|e| panic!("memory_store::{case}: {e}"));
    assert_eq!(hits.len(), 1, "memory_store::{case}: limit");
    let hits = store
        .search("staging", 10)
        .await
        .unwrap_or_else(|e| panic!("memory_store::{case}: {e}"));
    assert_eq!(hits.len(), 1, "memory_store::{case}: values are searched");
    let hits = store
        .search("zebra", 10)
        .await
        .unwrap_or_else(|e| panic!("memory_store::{case}: {e}"));
    assert!(hits.is_empty(), "memory_store::{case}");
    if let Err(error) = store.forget("deploy/host", 1, "conformance").await {
        panic!("memory_store::{case}: {error}");
    }
    let hits = store
        .search("staging", 10)
        .await
        .unwrap_or_else(|e| panic!("memory_store::{case}: {e}"));
    assert!(
        hits.is_empty(),
        "memory_store::{case}: forgotten entries are not found"
    );
}

async fn racing_writers_of_distinct_keys_lose_nothing(store: Arc<dyn MemoryStore>) {
    let case = "racing_writers_of_distinct_keys_lose_nothing";
    let tasks = (0..8).map(|writer| {
        let store = Arc::clone(&store);
        tokio::spawn(async move {
            for i in 0..25 {
                let key = format!("w{writer}/k{i}");
                if let Err(error) = store.put(create(&key, "v", "")).await {
                    return Err(format!("{key}: {error}"));
                }
            }
            Ok(())
        })
    });
    for outcome in join_all(tasks).await {
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(error)) => panic!("memory_store::{case}: {error}"),
            Err(error) => panic!("memory_store::{case}: a writer panicked: {error}"),
        }
    }
    assert_eq!(
        index_keys(store.as_ref(), case).await.len(),
        200,
        "memory_store::{case}"
    );
}

async fn racing_creates_of_one_key_have_one_winner(store: Arc<dyn MemoryStore>) {
    let case = "racing_creates_of_one_key_have_one_winner";
    let tasks = (0..8).map(|writer| {
        let store = Arc::clone(&store);
        tokio::spawn(async move { store.put(create("contested", &format!("w{writer}"), "")).await })
    });
    let mut winners = 0;
    for outcome in join_all(tasks).await {
        match outcome {
            Ok(Ok(_)) => winners += 1,
            Ok(Err(MemoryError::AlreadyExists { version: 1, .. })) => {}
            Ok(Err(error)) => panic!("memory_store::{case}: unexpected error {error}"),
            Err(error) => panic!("memory_store::{case}: a writer panicked: {error}"),
        }
    }
    assert_eq!(winners, 1, "memory_store::{case}");
}
