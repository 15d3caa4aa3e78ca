//! Criterion benches of the PostgreSQL memory store, the same calls at the same sizes
//! as the file store's `memory` bench (`adapter-memoryfs`; both write and search the
//! workload of `engine_ports::testkit::memory_workload`): the search of `SearchMemory` (limit 10) over 4,096 entries, and the
//! compare-and-set replace of `Remember` (one transaction: row lock, the document
//! written back whole, commit) on a scope of 1,024 entries. Before each criterion run
//! the bench prints p50/p99 over a fixed number of sequential calls
//! (`PGMEMORY_BENCH_CALLS`, default 1,000 searches and 300 writes).
//!
//! The server is a throwaway cluster on loopback (`test-peers::PgCluster`:
//! `synchronous_commit` on, `fsync` off). A warm search costs one round trip (the
//! row's version) plus the ranking over the cached index.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, missing_docs)]

use std::hint::black_box;
use std::time::Instant;

use adapter_pgstore::{PgMemoryStore, PgStoreOptions, StoreUrl};
use criterion::{Criterion, criterion_group, criterion_main};
use engine_ports::MemoryStore;
use engine_ports::testkit::memory_workload::{Rewrites, notes, queries};
use test_peers::PgCluster;
use test_peers::bench::latencies;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

fn calls(default: usize) -> usize {
    std::env::var("PGMEMORY_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn open(rt: &tokio::runtime::Runtime, cluster: &PgCluster, scope: &str) -> PgMemoryStore {
    let url = StoreUrl::parse(&cluster.url("postgres"), None).unwrap();
    rt.block_on(PgMemoryStore::open(&url, PgStoreOptions::default(), scope))
        .unwrap()
}

fn search_memory(c: &mut Criterion) {
    let Some(cluster) = PgCluster::shared("adapter-pgstore bench pg_memory") else {
        return;
    };
    let rt = runtime();
    let store = open(&rt, cluster, "bench:search");
    rt.block_on(store.put_many(notes(4096))).unwrap();
    let queries = queries();
    // The first search builds the index; the figures are for a warm store.
    rt.block_on(store.search(&queries[0], 10)).unwrap();
    let mut samples = Vec::new();
    for i in 0..calls(1000) {
        let started = Instant::now();
        let hits = rt
            .block_on(store.search(&queries[i % queries.len()], 10))
            .unwrap();
        samples.push(started.elapsed());
        assert!(!hits.is_empty());
    }
    println!(
        "pg_search_memory (4096 entries, limit 10): {}",
        latencies(&mut samples)
    );
    let mut i = 0;
    c.bench_function("pg_memory/search_4096", |b| {
        b.iter(|| {
            i += 1;
            black_box(
                rt.block_on(store.search(&queries[i % queries.len()], 10))
                    .unwrap(),
            )
        });
    });
}

fn remember(c: &mut Criterion) {
    let Some(cluster) = PgCluster::shared("adapter-pgstore bench pg_memory") else {
        return;
    };
    let rt = runtime();
    let store = open(&rt, cluster, "bench:remember");
    rt.block_on(store.put_many(notes(1024))).unwrap();
    let mut rewrites = Rewrites::default();
    let mut samples = Vec::new();
    for _ in 0..calls(300).min(3000) {
        let next = rewrites.next().unwrap();
        let started = Instant::now();
        rt.block_on(store.put(next)).unwrap();
        samples.push(started.elapsed());
    }
    println!(
        "pg_remember (row lock + commit, 1024 entries): {}",
        latencies(&mut samples)
    );
    c.bench_function("pg_memory/remember_1024", |b| {
        b.iter(|| {
            let next = rewrites.next().unwrap();
            black_box(rt.block_on(store.put(next)).unwrap())
        });
    });
}

criterion_group!(benches, search_memory, remember);
criterion_main!(benches);
