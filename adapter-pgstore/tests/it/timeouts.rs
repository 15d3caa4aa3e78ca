//! Nothing waits forever: the connect timeout bounds a silent server, the server's
//! time limit a blocked statement, and the client's deadline a stalled connection
//! (which is then replaced). Errors name the server, never the password.

use std::time::{Duration, Instant};

use adapter_pgstore::{PgStore, PgStoreOptions, StoreUrl};
use engine_ports::EventLog;

use crate::support::proxy::Proxy;
use crate::support::{TestDb, delta, fast, lock_table, sid};

fn one_second() -> PgStoreOptions {
    PgStoreOptions {
        timeout: Duration::from_secs(1),
        ..fast()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_gives_up_on_a_silent_server_after_the_connect_timeout() {
    // Accepts connections and never says a word.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        let mut sockets = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            sockets.push(socket);
        }
    });
    let url = StoreUrl::parse(
        &format!("postgres://u:hunter2@127.0.0.1:{port}/db?connect_timeout=1"),
        None,
    )
    .unwrap();
    let started = Instant::now();
    let error = PgStore::open(&url, fast()).await.unwrap_err().to_string();
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(4),
        "{waited:?}"
    );
    assert!(
        error.contains(&format!("PostgreSQL at 127.0.0.1:{port}/db: cannot connect")),
        "{error}"
    );
    assert!(!error.contains("hunter2"), "{error}");
    held.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_against_a_closed_port_names_the_host_without_the_password() {
    let port = test_peers::free_port();
    let url = StoreUrl::parse(&format!("postgres://u:hunter2@127.0.0.1:{port}/db"), None).unwrap();
    let error = PgStore::open(&url, fast()).await.unwrap_err().to_string();
    assert!(error.contains(&format!("127.0.0.1:{port}/db")), "{error}");
    assert!(error.to_lowercase().contains("refused"), "{error}");
    assert!(!error.contains("hunter2"), "{error}");
    assert!(!format!("{url:?}").contains("hunter2"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_blocked_by_a_lock_fails_at_the_time_limit() {
    let Some(db) = TestDb::new("a_statement_blocked_by_a_lock_fails_at_the_time_limit") else {
        return;
    };
    let store = db.open_with(one_second()).await;
    let mut client = db.client().await;
    let locker = lock_table(&mut client, "mecated_events").await;
    let started = Instant::now();
    let error = store
        .append(&sid("blocked"), &delta(1, "x"))
        .await
        .unwrap_err()
        .to_string();
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(3), "{waited:?}");
    assert!(
        error.contains("canceling statement due to statement timeout")
            || error.contains("canceling statement due to lock timeout"),
        "{error}"
    );
    assert!(
        error.contains(&format!(
            "session \"blocked\": append failed: PostgreSQL at 127.0.0.1:{}",
            db.cluster.port()
        )),
        "{error}"
    );
    locker.rollback().await.unwrap();
    store.append(&sid("blocked"), &delta(1, "x")).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_connection_is_abandoned_at_the_deadline_and_replaced() {
    let Some(db) = TestDb::new("a_stalled_connection_is_abandoned_at_the_deadline_and_replaced") else {
        return;
    };
    let proxy = Proxy::start(db.cluster.port()).await;
    let raw = format!(
        "postgres://{}:{}@127.0.0.1:{}/{}?connect_timeout=1",
        test_peers::PG_USER,
        db.cluster.password(),
        proxy.port,
        db.name
    );
    let store = PgStore::open(&StoreUrl::parse(&raw, None).unwrap(), one_second())
        .await
        .unwrap();
    store.append(&sid("stall"), &delta(1, "before")).await.unwrap();
    proxy.freeze();
    let started = Instant::now();
    let error = store
        .append(&sid("stall"), &delta(2, "frozen"))
        .await
        .unwrap_err()
        .to_string();
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(4), "{waited:?}");
    assert!(error.contains("gave up after"), "{error}");
    proxy.thaw();
    store.append(&sid("stall"), &delta(3, "after")).await.unwrap();
    let mut seqs: Vec<u64> = store
        .read(&sid("stall"))
        .await
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    // The frozen append may still reach the server when the bytes flow again (its
    // client was gone); nothing is doubled.
    seqs.sort_unstable();
    assert!(seqs == [1, 3] || seqs == [1, 2, 3], "{seqs:?}");
}
