//! Criterion benches of the PostgreSQL store, the JSONL store's bench side by side:
//!
//! - appends of a 512-byte event to one session with its run lease held (group
//!   commits, as a run appends; each timed sample ends with the `flush` that
//!   acknowledges it), and without a lease (each append one autocommitted `INSERT`,
//!   the price of an append acknowledged on return, as under `--store-sync always`);
//! - 8 leased sessions appending at once, each flushing at the end (aggregate);
//! - the recorder's `record` of a 1 KiB tool call with the lease held: p50/p99 of the
//!   time inside `record` over sequential calls (printed), flushed at the end;
//! - `save` (lease held) and `load` of a 100 KiB snapshot.
//!
//! The server is a throwaway cluster on loopback (`test-peers::PgCluster`:
//! `synchronous_commit` on, `fsync` off, so a commit waits for the WAL write, not for
//! the device).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, missing_docs)]

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use adapter_pgstore::{PgStore, PgStoreOptions, StoreUrl};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use engine_ports::{
    Event, EventKind, EventLog, Message, PermissionMode, SessionId, SessionSnapshot, SessionStore,
    ToolCallRecorder,
};
use test_peers::PgCluster;
use test_peers::bench::latencies;

/// Appends per iteration of the 8-session bench (500 per session).
const BATCH: u64 = 4000;

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

/// A snapshot whose JSON is about `bytes` long.
fn snapshot_of(id: &str, bytes: usize) -> SessionSnapshot {
    let mut snapshot = SessionSnapshot::new(id, PermissionMode::Default);
    let chunk = 1024;
    snapshot.conversation = (0..bytes / chunk)
        .map(|i| Message::User {
            text: format!("{i:06} {}", "m".repeat(chunk - 40)),
        })
        .collect();
    snapshot
}

fn open(runtime: &tokio::runtime::Runtime, cluster: &PgCluster) -> Arc<PgStore> {
    let url = StoreUrl::parse(&cluster.url("postgres"), None).unwrap();
    Arc::new(
        runtime
            .block_on(PgStore::open(&url, PgStoreOptions::default()))
            .unwrap(),
    )
}

fn appends(c: &mut Criterion, runtime: &tokio::runtime::Runtime, store: &Arc<PgStore>) {
    let seq = AtomicU64::new(0);

    let mut group = c.benchmark_group("pg_append_512B");
    group.throughput(Throughput::Elements(1));
    let leased = SessionId::from("bench-leased");
    let lease = runtime.block_on(store.acquire_run(&leased)).unwrap();
    // Each sample appends its iterations and then flushes them: the time until the
    // last one is committed.
    group.bench_function("leased", |b| {
        b.to_async(runtime).iter_custom(|iterations| {
            let store = Arc::clone(store);
            let id = leased.clone();
            let first = seq.fetch_add(iterations, Ordering::Relaxed);
            async move {
                let started = Instant::now();
                for n in 0..iterations {
                    store.append(&id, &event_512(first + n)).await.unwrap();
                }
                EventLog::flush(store.as_ref(), &id).await.unwrap();
                started.elapsed()
            }
        });
    });
    runtime.block_on(lease.release());
    let unleased = SessionId::from("bench-unleased");
    group.bench_function("unleased", |b| {
        b.to_async(runtime).iter(|| {
            let event = event_512(seq.fetch_add(1, Ordering::Relaxed));
            let store = Arc::clone(store);
            let id = unleased.clone();
            async move { store.append(&id, &event).await.unwrap() }
        });
    });
    group.finish();

    let mut group = c.benchmark_group("pg_append_512B_8_sessions");
    group.throughput(Throughput::Elements(BATCH));
    group.sample_size(10);
    let sessions: Vec<SessionId> = (0..8).map(|n| SessionId::from(format!("bench-{n}"))).collect();
    let leases: Vec<_> = sessions
        .iter()
        .map(|id| runtime.block_on(store.acquire_run(id)).unwrap())
        .collect();
    group.bench_function("concurrent", |b| {
        b.to_async(runtime).iter(|| {
            let store = Arc::clone(store);
            let sessions = sessions.clone();
            async move {
                let writers: Vec<_> = sessions
                    .into_iter()
                    .map(|id| {
                        let store = Arc::clone(&store);
                        tokio::spawn(async move {
                            for n in 0..BATCH / 8 {
                                store.append(&id, &event_512(n)).await.unwrap();
                            }
                            EventLog::flush(store.as_ref(), &id).await.unwrap();
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
    for lease in leases {
        runtime.block_on(lease.release());
    }
}

fn recorder(c: &mut Criterion, runtime: &tokio::runtime::Runtime, store: &Arc<PgStore>) {
    let calls: usize = std::env::var("PGSTORE_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let id = SessionId::from("bench-recorder");
    // Built once, as the engine's dispatcher builds each call's record.
    let record = engine_ports::testkit::tool_call_recorder::read_call_record(&id);
    let bytes = serde_json::to_vec(&record).unwrap().len();
    let lease = runtime.block_on(store.acquire_run(&id)).unwrap();
    // Percentiles of the time inside `record`, one call at a time; the flush after
    // the loop commits what is still queued.
    let started = Instant::now();
    let mut samples: Vec<Duration> = (0..calls)
        .map(|_| {
            let start = Instant::now();
            runtime.block_on(store.record(&record)).unwrap();
            start.elapsed()
        })
        .collect();
    runtime
        .block_on(ToolCallRecorder::flush(store.as_ref(), &id))
        .unwrap();
    let total = started.elapsed();
    println!(
        "pg_recorder/record ({bytes} B record, group commits): {}; all committed after {total:?}",
        latencies(&mut samples)
    );
    c.bench_function("pg_recorder/record_1KiB", |b| {
        b.iter(|| runtime.block_on(store.record(&record)).unwrap());
    });
    runtime
        .block_on(ToolCallRecorder::flush(store.as_ref(), &id))
        .unwrap();
    runtime.block_on(lease.release());
}

fn snapshots(c: &mut Criterion, runtime: &tokio::runtime::Runtime, store: &Arc<PgStore>) {
    let id = SessionId::from("bench-snapshot");
    let snapshot = snapshot_of("bench-snapshot", 100 * 1024);
    let lease = runtime.block_on(store.acquire_run(&id)).unwrap();
    runtime.block_on(store.save(&snapshot)).unwrap();
    let mut group = c.benchmark_group("pg_snapshot_100KiB");
    group.bench_function("save", |b| {
        b.iter(|| runtime.block_on(store.save(&snapshot)).unwrap());
    });
    group.bench_function("load", |b| {
        b.iter(|| black_box(runtime.block_on(store.load(&id)).unwrap()));
    });
    group.finish();
    runtime.block_on(lease.release());
}

fn pg_store(c: &mut Criterion) {
    let Some(cluster) = PgCluster::start("adapter-pgstore bench pg_store") else {
        return;
    };
    let runtime = runtime();
    let store = open(&runtime, &cluster);
    appends(c, &runtime, &store);
    recorder(c, &runtime, &store);
    snapshots(c, &runtime, &store);
    store.close();
    drop(cluster);
}

criterion_group!(benches, pg_store);
criterion_main!(benches);
