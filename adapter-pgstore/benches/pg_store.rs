//! Criterion benches of the PostgreSQL store: appends of a 512-byte event to one
//! session, with the session's run lease held (the fenced statement a run uses) and
//! without, and 8 sessions appending at once (aggregate).
//!
//! The server is a throwaway cluster on loopback (`test-peers::PgCluster`:
//! `synchronous_commit` on, `fsync` off, so a commit waits for the WAL write, not for
//! the device); each append is one autocommitted `INSERT`, so the figures are round
//! trips plus the server's commit, the price of an acknowledged append.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use adapter_pgstore::{PgStore, PgStoreOptions, StoreUrl};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use engine_ports::{Event, EventKind, EventLog, SessionId, SessionStore};
use test_peers::PgCluster;

/// Appends per iteration of the 8-session bench (50 per session).
const BATCH: u64 = 400;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A `message.delta` event whose JSON is about 512 bytes.
fn event_512(seq: u64) -> Event {
    Event {
        seq,
        time: Some("2026-11-30T09:55:35.123456Z".into()),
        kind: EventKind::MessageDelta {
            text: "x".repeat(440),
        },
    }
}

fn appends(c: &mut Criterion) {
    let Some(cluster) = PgCluster::start("adapter-pgstore bench pg_store") else {
        return;
    };
    let runtime = runtime();
    let url = StoreUrl::parse(&cluster.url("postgres"), None).unwrap();
    let store = Arc::new(
        runtime
            .block_on(PgStore::open(&url, PgStoreOptions::default()))
            .unwrap(),
    );
    let seq = AtomicU64::new(0);

    let mut group = c.benchmark_group("pg_append_512B");
    group.throughput(Throughput::Elements(1));
    let leased = SessionId::from("bench-leased");
    let lease = runtime.block_on(store.acquire_run(&leased)).unwrap();
    group.bench_function("leased", |b| {
        b.to_async(&runtime).iter(|| {
            let event = event_512(seq.fetch_add(1, Ordering::Relaxed));
            let store = Arc::clone(&store);
            let id = leased.clone();
            async move { store.append(&id, &event).await.unwrap() }
        });
    });
    runtime.block_on(lease.release());
    let unleased = SessionId::from("bench-unleased");
    group.bench_function("unleased", |b| {
        b.to_async(&runtime).iter(|| {
            let event = event_512(seq.fetch_add(1, Ordering::Relaxed));
            let store = Arc::clone(&store);
            let id = unleased.clone();
            async move { store.append(&id, &event).await.unwrap() }
        });
    });
    group.finish();

    let mut group = c.benchmark_group("pg_append_512B_8_sessions");
    group.throughput(Throughput::Elements(BATCH));
    group.sample_size(10);
    group.bench_function("concurrent", |b| {
        b.to_async(&runtime).iter(|| {
            let store = Arc::clone(&store);
            async move {
                let writers: Vec<_> = (0..8)
                    .map(|session| {
                        let store = Arc::clone(&store);
                        tokio::spawn(async move {
                            let id = SessionId::from(format!("bench-{session}"));
                            for n in 0..BATCH / 8 {
                                store.append(&id, &event_512(n)).await.unwrap();
                            }
                        })
                    })
                    .collect();
                for writer in writers {
                    writer.await.unwrap();
                }
            }
        });
    });
    group.finish();
    store.close();
    drop(cluster);
}

criterion_group!(benches, appends);
criterion_main!(benches);
