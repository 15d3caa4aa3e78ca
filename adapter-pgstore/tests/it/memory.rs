//! `PgMemoryStore`: the `engine-ports` memory conformance suite, two replicas (two
//! pools) writing one scope at once, reads seeing other writers, a corrupted row
//! reported and kept, odd scope names, and a locked row failing within the time limit.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use adapter_pgstore::{PgMemoryStore, PgStoreOptions};
use engine_ports::testkit::memory_store;
use engine_ports::{MemoryError, MemoryStore, MemoryWrite};

use crate::support::{TestDb, fast};

fn create(key: &str, value: &str) -> MemoryWrite {
    MemoryWrite {
        key: key.to_owned(),
        value: value.to_owned(),
        description: String::new(),
        expected_version: None,
        writer: "test".to_owned(),
    }
}

fn replace(key: &str, value: &str, expected: u64) -> MemoryWrite {
    MemoryWrite {
        expected_version: Some(expected),
        ..create(key, value)
    }
}

impl TestDb {
    /// A memory store over this database with a pool of its own (a replica).
    async fn memory(&self, scope: &str) -> PgMemoryStore {
        PgMemoryStore::open(&self.url(), fast(), scope).await.unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_memory_store_is_a_memory_store() {
    let Some(db) = TestDb::new("pg_memory_store_is_a_memory_store") else {
        return;
    };
    let base = db.memory("conformance:base").await;
    let next = AtomicUsize::new(0);
    memory_store::run(|| {
        let n = next.fetch_add(1, Ordering::Relaxed);
        Arc::new(base.scope(&format!("conformance:case-{n}")).unwrap()) as Arc<dyn MemoryStore>
    })
    .await;
}

/// Two replicas (two pools) create 200 distinct keys each in one scope at once, four
/// writers per replica: every acknowledged create is there, seen by both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_creating_two_hundred_keys_each_lose_none() {
    let Some(db) = TestDb::new("two_replicas_creating_two_hundred_keys_each_lose_none") else {
        return;
    };
    let replicas = [
        db.memory("project:shared").await,
        db.memory("project:shared").await,
    ];
    let mut tasks = Vec::new();
    for (r, replica) in replicas.iter().enumerate() {
        for w in 0..4 {
            let replica = replica.clone();
            tasks.push(tokio::spawn(async move {
                for n in 0..50 {
                    let key = format!("r{r}/w{w}/k{n}");
                    replica.put(create(&key, &format!("{r}-{w}-{n}"))).await.unwrap();
                }
            }));
        }
    }
    for task in tasks {
        task.await.unwrap();
    }
    for replica in &replicas {
        let all = replica.prefix("r", 1000).await.unwrap();
        assert_eq!(all.total, 400);
        assert_eq!(replica.index().await.unwrap().len(), 400);
    }
    let fresh = db.memory("project:shared").await;
    for r in 0..2 {
        for w in 0..4 {
            for n in 0..50 {
                let entry = fresh.get(&format!("r{r}/w{w}/k{n}")).await.unwrap().unwrap();
                assert_eq!(entry.value, format!("{r}-{w}-{n}"));
                assert_eq!(entry.version, 1);
            }
        }
    }
}

/// Two replicas replacing one key with the same expected version at once: exactly
/// one wins, the other is told the winner's version; twenty rounds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_compare_and_set_from_two_replicas_has_exactly_one_winner() {
    let Some(db) = TestDb::new("racing_compare_and_set_from_two_replicas_has_exactly_one_winner") else {
        return;
    };
    let a = db.memory("project:race").await;
    let b = db.memory("project:race").await;
    a.put(create("race/key", "start")).await.unwrap();
    for (round, version) in (0..20).zip(1u64..) {
        let (left, right) = tokio::join!(
            a.put(replace("race/key", &format!("a{round}"), version)),
            b.put(replace("race/key", &format!("b{round}"), version)),
        );
        let (winner, loser) = match (left, right) {
            (Ok(entry), Err(error)) | (Err(error), Ok(entry)) => (entry, error),
            (left, right) => panic!("round {round}: expected one winner, got {left:?} and {right:?}"),
        };
        assert_eq!(winner.version, version + 1);
        assert_eq!(
            loser.to_string(),
            format!(
                "memory \"race/key\" is at version {}, not {version}; recall it and retry with expected_version {}",
                version + 1,
                version + 1
            )
        );
        assert_eq!(b.get("race/key").await.unwrap().unwrap().value, winner.value);
        assert_eq!(a.get("race/key").await.unwrap().unwrap().value, winner.value);
    }
}

/// A replica that read the scope (and cached it) sees another replica's write and
/// a change made by hand on its next read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_see_writes_of_other_replicas_and_edits_by_hand() {
    let Some(db) = TestDb::new("reads_see_writes_of_other_replicas_and_edits_by_hand") else {
        return;
    };
    let a = db.memory("project:seen").await;
    // The other replica's scope shares its session store's connections.
    let sessions = db.open().await;
    let b = sessions.memory("project:seen").unwrap();
    assert!(a.get("note").await.unwrap().is_none());
    assert!(a.search("deploy", 10).await.unwrap().is_empty());
    b.put(create("note", "deploy with make ship")).await.unwrap();
    assert_eq!(
        a.get("note").await.unwrap().unwrap().value,
        "deploy with make ship"
    );
    assert_eq!(a.search("deploy", 10).await.unwrap()[0].key, "note");
    // An UPDATE by hand bumps the version too (the table's trigger).
    let document = db.cluster.psql(
        &db.name,
        "SELECT document::text FROM mecated_memory WHERE scope = 'project:seen'",
    );
    let edited = document.replace("deploy with make ship", "deploy with just ship");
    db.cluster.psql(
        &db.name,
        &format!(
            "UPDATE mecated_memory SET document = '{}' WHERE scope = 'project:seen'",
            edited.replace('\'', "''")
        ),
    );
    assert_eq!(
        a.get("note").await.unwrap().unwrap().value,
        "deploy with just ship"
    );
}

/// A row whose document breaks a rule (or is not a memory document) fails every
/// operation with the scope's name, and a write leaves it exactly as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupted_row_is_reported_naming_the_scope_and_never_replaced() {
    let Some(db) = TestDb::new("a_corrupted_row_is_reported_naming_the_scope_and_never_replaced") else {
        return;
    };
    let store = db.memory("project:broken").await;
    store.put(create("good", "kept")).await.unwrap();
    let bad = r#"{"seq":1,"keys":{"Bad":[{"version":1,"seq":1,"updated_at":"2024-01-01T00:00:00Z","writer":"w"}]}}"#;
    let foreign = r#"{"hello":"world"}"#;
    for (document, reason) in [
        (
            bad,
            "invalid memory key \"Bad\": keys are segment(/segment)* where each segment starts with a-z \
             and goes on with a-z, 0-9, _ or - (e.g. build/test-command)",
        ),
        (
            foreign,
            "it is not valid JSON: unknown field `hello`, expected `seq` or `keys` at line 1 column 8",
        ),
    ] {
        db.cluster.psql(
            &db.name,
            &format!("UPDATE mecated_memory SET document = '{document}' WHERE scope = 'project:broken'"),
        );
        let expected = format!(
            "memory scope \"project:broken\" in PostgreSQL at 127.0.0.1:{}/{} cannot be used: {reason}; \
             it was left as it is (fix or delete its row)",
            db.cluster.port(),
            db.name
        );
        let errors = [
            store.get("good").await.unwrap_err(),
            store.put(create("other", "x")).await.unwrap_err(),
            store.forget("good", 1, "test").await.unwrap_err(),
            store.search("kept", 10).await.unwrap_err(),
            store.index().await.unwrap_err(),
            db.memory("project:broken")
                .await
                .prefix("", 10)
                .await
                .unwrap_err(),
        ];
        for error in errors {
            assert!(matches!(error, MemoryError::CorruptScope { .. }), "{error:?}");
            assert_eq!(error.to_string(), expected);
        }
        let stored = db.cluster.psql(
            &db.name,
            "SELECT document::text FROM mecated_memory WHERE scope = 'project:broken'",
        );
        assert_eq!(stored, document, "the row was left as it is");
    }
}

/// Scope names are opaque text: separators, dots, spaces and non-ASCII round-trip
/// byte for byte, and scopes never see each other's keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_scope_names_round_trip_and_stay_apart() {
    let Some(db) = TestDb::new("odd_scope_names_round_trip_and_stay_apart") else {
        return;
    };
    let odd = [
        "project:/srv/../ws-0123",
        "user-model:Ĳsbrand 名前",
        "project:a'b\"c;--",
        " ",
        "PROJECT:/srv/../ws-0123",
    ];
    for (i, scope) in odd.iter().enumerate() {
        let store = db.memory(scope).await;
        store.put(create("which", &i.to_string())).await.unwrap();
    }
    for (i, scope) in odd.iter().enumerate() {
        let store = db.memory(scope).await;
        assert_eq!(store.scope_name(), *scope);
        assert_eq!(store.get("which").await.unwrap().unwrap().value, i.to_string());
        assert_eq!(store.index().await.unwrap().len(), 1);
    }
    let mut stored: Vec<String> = db
        .cluster
        .psql(
            &db.name,
            "SELECT string_agg(scope, '|' ORDER BY scope) FROM mecated_memory",
        )
        .split('|')
        .map(str::to_owned)
        .collect();
    stored.sort();
    let mut expected: Vec<String> = odd.iter().map(|s| (*s).to_owned()).collect();
    expected.sort();
    assert_eq!(stored, expected);
    for bad in ["", "a\0b"] {
        let error = PgMemoryStore::open(&db.url(), fast(), bad).await.unwrap_err();
        assert!(error.to_string().contains("memory scope name"), "{error}");
    }
}

/// A row held locked by another transaction past the time limit: the write fails
/// within it, naming the scope and the server, and leaves nothing changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_behind_a_held_row_lock_fails_within_the_time_limit() {
    let Some(db) = TestDb::new("a_write_behind_a_held_row_lock_fails_within_the_time_limit") else {
        return;
    };
    let options = PgStoreOptions {
        timeout: Duration::from_millis(500),
        ..fast()
    };
    let store = PgMemoryStore::open(&db.url(), options, "project:locked")
        .await
        .unwrap();
    store.put(create("held", "before")).await.unwrap();
    let mut client = db.client().await;
    let locker = client.transaction().await.unwrap();
    locker
        .batch_execute("SELECT * FROM mecated_memory WHERE scope = 'project:locked' FOR UPDATE")
        .await
        .unwrap();
    let started = Instant::now();
    let error = store.put(replace("held", "after", 1)).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(error, MemoryError::Backend { .. }), "{error:?}");
    let text = error.to_string();
    assert!(
        text.starts_with("memory scope \"project:locked\": write failed: PostgreSQL at 127.0.0.1:"),
        "{text}"
    );
    assert!(text.contains("canceling statement due to"), "{text}");
    locker.rollback().await.unwrap();
    assert_eq!(store.get("held").await.unwrap().unwrap().value, "before");
}
