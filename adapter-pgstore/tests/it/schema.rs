//! The schema is created and migrated at open from the embedded, versioned SQL:
//! once however many replicas start together, all or nothing, and never over a
//! newer schema.

use adapter_pgstore::PgStore;
use adapter_pgstore::migrations::current_version;

use crate::support::{TestDb, fast};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_database_gets_every_table_at_the_current_version() {
    let Some(db) = TestDb::new("a_fresh_database_gets_every_table_at_the_current_version") else {
        return;
    };
    drop(db.open().await);
    assert_eq!(
        db.cluster.psql(
            &db.name,
            "SELECT string_agg(version || ':' || name, ',' ORDER BY version) FROM mecated_schema_version"
        ),
        "1:initial,2:memory"
    );
    let tables = db.cluster.psql(
        &db.name,
        "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE tablename LIKE 'mecated_%'",
    );
    assert_eq!(
        tables,
        "mecated_events,mecated_memory,mecated_run_leases,mecated_schema_version,mecated_sessions,mecated_tool_calls"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_opening_together_migrate_once() {
    let Some(db) = TestDb::new("replicas_opening_together_migrate_once") else {
        return;
    };
    let url = db.url();
    let opens = (0..4).map(|_| {
        let url = url.clone();
        async move { PgStore::open(&url, fast()).await }
    });
    for store in futures_join(opens).await {
        store.unwrap();
    }
    assert_eq!(
        db.cluster
            .psql(&db.name, "SELECT count(*) FROM mecated_schema_version"),
        current_version().to_string()
    );
    // Opening again changes nothing.
    drop(db.open().await);
    assert_eq!(
        db.cluster
            .psql(&db.name, "SELECT count(*) FROM mecated_schema_version"),
        current_version().to_string()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_schema_is_refused_naming_both_versions() {
    let Some(db) = TestDb::new("a_newer_schema_is_refused_naming_both_versions") else {
        return;
    };
    drop(db.open().await);
    db.cluster.psql(
        &db.name,
        "INSERT INTO mecated_schema_version (version, name) VALUES (999, 'future')",
    );
    let error = PgStore::open(&db.url(), fast()).await.unwrap_err().to_string();
    let expected = format!(
        "the database schema is at version 999, newer than this mecated knows ({})",
        current_version()
    );
    assert!(error.contains(&expected), "{error}");
    assert!(
        error.contains(&format!("127.0.0.1:{}/{}", db.cluster.port(), db.name)),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_migration_leaves_nothing_behind() {
    let Some(db) = TestDb::new("a_failed_migration_leaves_nothing_behind") else {
        return;
    };
    // Something else already owns one of the names.
    db.cluster.psql(&db.name, "CREATE TABLE mecated_events (x int)");
    let error = PgStore::open(&db.url(), fast()).await.unwrap_err().to_string();
    assert!(error.contains("schema migration 1 (initial) failed"), "{error}");
    assert!(error.contains("already exists"), "{error}");
    let left = db.cluster.psql(
        &db.name,
        "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE tablename LIKE 'mecated_%'",
    );
    assert_eq!(left, "mecated_events", "the migration rolled back whole");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_is_not_utf8_is_refused() {
    let Some(db) = TestDb::new("a_database_that_is_not_utf8_is_refused") else {
        return;
    };
    let ascii = format!("{}_ascii", db.name);
    db.cluster.psql(
        "postgres",
        &format!(
            "CREATE DATABASE \"{ascii}\" ENCODING 'SQL_ASCII' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'"
        ),
    );
    let url = adapter_pgstore::StoreUrl::parse(&db.cluster.url(&ascii), None).unwrap();
    let error = PgStore::open(&url, fast()).await.unwrap_err().to_string();
    assert!(error.contains("the database's encoding is SQL_ASCII"), "{error}");
}

async fn futures_join<F>(futures: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for handle in handles {
        out.push(handle.await.unwrap());
    }
    out
}
