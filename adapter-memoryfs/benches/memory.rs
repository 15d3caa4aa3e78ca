//! Criterion benches of the file-backed memory store through the port calls the
//! memory tools make: the search of `SearchMemory` (limit 10) over 4,096 entries, and
//! the compare-and-set replace of `Remember` (lock, read check, temp file, `fsync`,
//! rename, directory `fsync`) on a store of 1,024 entries. Before each criterion run
//! the bench prints p50/p99 over a fixed number of sequential calls
//! (`MEMORYFS_BENCH_CALLS`, default 1,000 searches and 300 writes). The PostgreSQL
//! store's bench (`adapter-pgstore`, `pg_memory`) measures the same calls at the same
//! sizes: both use the workload of `engine_ports::testkit::memory_workload`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, missing_docs)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use adapter_memoryfs::{MemoryFs, MemoryFsOptions};
use criterion::{Criterion, criterion_group, criterion_main};
use engine_ports::MemoryStore;
use engine_ports::testkit::memory_workload::{Rewrites, notes, queries};
use test_peers::bench::latencies;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

fn calls(default: usize) -> usize {
    std::env::var("MEMORYFS_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn search_memory(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryFs::open(dir.path(), MemoryFsOptions::default()));
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
        "search_memory (4096 entries, limit 10): {}",
        latencies(&mut samples)
    );
    let mut i = 0;
    c.bench_function("memory/search_4096", |b| {
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
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryFs::open(dir.path(), MemoryFsOptions::default()));
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
        "remember (lock + fsync, 1024 entries): {}",
        latencies(&mut samples)
    );
    c.bench_function("memory/remember_1024", |b| {
        b.iter(|| {
            let next = rewrites.next().unwrap();
            black_box(rt.block_on(store.put(next)).unwrap())
        });
    });
}

criterion_group!(benches, search_memory, remember);
criterion_main!(benches);
