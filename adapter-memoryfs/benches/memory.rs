//! Criterion benches of the file-backed memory store through the port calls the
//! memory tools make: the search of `SearchMemory` (limit 10) over 4,096 entries, and
//! the compare-and-set replace of `Remember` (lock, read check, temp file, `fsync`,
//! rename, directory `fsync`) on a store of 1,024 entries. Before each criterion run
//! the bench prints p50/p99 over a fixed number of sequential calls
//! (`MEMORYFS_BENCH_CALLS`, default 1,000 searches and 300 writes). The PostgreSQL
//! store's bench (`adapter-pgstore`, `pg_memory`) measures the same calls at the same
//! sizes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, missing_docs)]

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use adapter_memoryfs::{MemoryFs, MemoryFsOptions};
use criterion::{Criterion, criterion_group, criterion_main};
use engine_ports::{MemoryStore, MemoryWrite};

const WORDS: &[&str] = &[
    "build",
    "test",
    "deploy",
    "cache",
    "database",
    "migration",
    "schema",
    "release",
    "branch",
    "review",
    "lint",
    "format",
    "docker",
    "image",
    "kubernetes",
    "staging",
    "production",
    "secret",
    "token",
    "proxy",
    "latency",
    "timeout",
    "retry",
    "queue",
    "worker",
    "cron",
    "backup",
    "restore",
    "index",
    "search",
    "frontend",
    "backend",
    "api",
    "client",
    "server",
    "config",
    "feature",
    "flag",
    "rollout",
    "metric",
];

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// `n` words for entry `seed`: every fourth from the common words above, the others
/// from 2,000 rarer terms, as notes mix shared and specific vocabulary.
fn words(seed: usize, n: usize) -> String {
    (0..n)
        .map(|k| {
            if k % 4 == 0 {
                WORDS[(seed * 7 + k * 13) % WORDS.len()].to_owned()
            } else {
                format!("term{}", (seed * 31 + k * 97) % 2000)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `n` notes under 64 areas: a few words of description, about 200 bytes of value.
fn fill(rt: &tokio::runtime::Runtime, store: &MemoryFs, n: usize) {
    let writes = (0..n)
        .map(|i| MemoryWrite {
            key: format!("area{}/note-{i}", i % 64),
            value: words(i, 28),
            description: words(i + 3, 6),
            expected_version: None,
            writer: "bench".to_owned(),
        })
        .collect();
    rt.block_on(store.put_many(writes)).unwrap();
}

fn calls(default: usize) -> usize {
    std::env::var("MEMORYFS_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn percentiles(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let pct = |p: usize| samples[(samples.len() * p / 100).min(samples.len() - 1)];
    println!(
        "{name}: p50 {:?}, p99 {:?}, max {:?} over {} calls",
        pct(50),
        pct(99),
        samples[samples.len() - 1],
        samples.len()
    );
}

fn search_memory(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryFs::open(dir.path(), MemoryFsOptions::default()));
    fill(&rt, &store, 4096);
    let queries: Vec<String> = (0..16)
        .map(|i| format!("{} term{}", WORDS[i % WORDS.len()], i * 113 % 2000))
        .collect();
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
    percentiles("search_memory (4096 entries, limit 10)", samples);
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
    fill(&rt, &store, 1024);
    let mut versions: HashMap<usize, u64> = HashMap::new();
    let mut i = 0usize;
    let mut write = move || {
        i += 1;
        let slot = i % 256;
        let version = versions.entry(slot).or_insert(1);
        let write = MemoryWrite {
            key: format!("area{}/note-{slot}", slot % 64),
            value: words(i, 28),
            description: words(i, 6),
            expected_version: Some(*version),
            writer: "bench".to_owned(),
        };
        *version += 1;
        write
    };
    let mut samples = Vec::new();
    for _ in 0..calls(300).min(3000) {
        let next = write();
        let started = Instant::now();
        rt.block_on(store.put(next)).unwrap();
        samples.push(started.elapsed());
    }
    percentiles("remember (lock + fsync, 1024 entries)", samples);
    c.bench_function("memory/remember_1024", |b| {
        b.iter(|| {
            let next = write();
            black_box(rt.block_on(store.put(next)).unwrap())
        });
    });
}

criterion_group!(benches, search_memory, remember);
criterion_main!(benches);
