//! Shared helpers: a database per test on the shared cluster, stores over it, a
//! plain client for the test's own SQL, log capture and child processes.

pub(crate) mod child;
pub(crate) use test_peers::logs;
pub(crate) mod proxy;

use std::time::Duration;

use adapter_pgstore::{PgStore, PgStoreOptions, StoreUrl};
use engine_ports::{Event, EventKind, SessionId};
use test_peers::PgCluster;

/// A database of its own on the shared cluster.
pub(crate) struct TestDb {
    pub(crate) cluster: &'static PgCluster,
    pub(crate) name: String,
}

/// Options for tests: short time limits (the defaults are for production).
pub(crate) fn fast() -> PgStoreOptions {
    PgStoreOptions {
        timeout: Duration::from_secs(5),
        ..PgStoreOptions::default()
    }
}

impl TestDb {
    /// A fresh database; `None` when PostgreSQL is missing and skipping is allowed.
    pub(crate) fn new(test: &str) -> Option<Self> {
        logs::init();
        let cluster = PgCluster::shared(test)?;
        let name = cluster.fresh_database("t");
        Some(Self { cluster, name })
    }

    /// The URL with the password.
    pub(crate) fn raw_url(&self) -> String {
        self.cluster.url(&self.name)
    }

    /// The parsed URL.
    pub(crate) fn url(&self) -> StoreUrl {
        StoreUrl::parse(&self.raw_url(), None).unwrap()
    }

    /// The URL whose connections use `schema` (created here) as their search path.
    pub(crate) fn schema_url(&self, schema: &str) -> StoreUrl {
        self.cluster
            .psql(&self.name, &format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\""));
        let raw = format!("{}?options=-c%20search_path%3D{schema}", self.raw_url());
        StoreUrl::parse(&raw, None).unwrap()
    }

    /// A store over this database with [`fast`] options.
    pub(crate) async fn open(&self) -> PgStore {
        self.open_with(fast()).await
    }

    /// A store over this database.
    pub(crate) async fn open_with(&self, options: PgStoreOptions) -> PgStore {
        PgStore::open(&self.url(), options).await.unwrap()
    }

    /// A plain connection for the test's own statements.
    pub(crate) async fn client(&self) -> tokio_postgres::Client {
        let (client, connection) = tokio_postgres::connect(&self.raw_url(), tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client
    }
}

/// Takes `ACCESS EXCLUSIVE` on `table` in a transaction of `client`: every statement
/// on the table waits until the returned transaction ends.
pub(crate) async fn lock_table<'a>(
    client: &'a mut tokio_postgres::Client,
    table: &str,
) -> tokio_postgres::Transaction<'a> {
    let locker = client.transaction().await.unwrap();
    locker
        .batch_execute(&format!("LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE"))
        .await
        .unwrap();
    locker
}

/// A session id.
pub(crate) fn sid(id: &str) -> SessionId {
    SessionId::from(id)
}

/// A `message.delta` event.
pub(crate) fn delta(seq: u64, text: impl Into<String>) -> Event {
    Event {
        seq,
        time: None,
        kind: EventKind::MessageDelta { text: text.into() },
    }
}

/// The text of a `message.delta` event.
pub(crate) fn text_of(event: &Event) -> &str {
    match &event.kind {
        EventKind::MessageDelta { text } => text,
        _ => "",
    }
}

/// The audit record of a `Read` call `call_id` in `session`, allowed by the policy.
pub(crate) fn record(session: &SessionId, call_id: &str) -> engine_ports::ToolCallRecord {
    engine_ports::ToolCallRecord::new(
        session,
        &engine_ports::ToolCall::new(call_id, "Read", "{}"),
        &engine_ports::ToolResult::text(call_id, "x"),
        Duration::ZERO,
        Duration::ZERO,
        std::time::SystemTime::UNIX_EPOCH,
    )
    .with_approval(engine_ports::Approval::POLICY_ALLOW)
}
