//! Criterion benches of the file-backed memory store through the tools the model
//! calls: `SearchMemory` over 4,096 entries, and `Remember` (a compare-and-set
//! replace: lock, read check, temp file, `fsync`, rename, directory `fsync`) on a
//! store of 1,024 entries. Before each criterion run the bench prints p50/p99 over a
//! fixed number of sequential calls (`MEMORYFS_BENCH_CALLS`, default 1,000 searches
//! and 300 writes).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, missing_docs)]

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use adapter_memoryfs::{MemoryFs, MemoryFsOptions};
use criterion::{Criterion, criterion_group, criterion_main};
use engine_core::{Environment, Tool, memory_tools};
use engine_ports::{CancellationToken, MemoryStore, MemoryWrite, ToolCall};

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

fn tool(store: &Arc<MemoryFs>, name: &str) -> Arc<dyn Tool> {
    memory_tools(Arc::clone(store) as Arc<dyn MemoryStore>)
        .into_iter()
        .find(|t| t.spec().name() == name)
        .unwrap()
}

fn search_memory(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryFs::open(dir.path(), MemoryFsOptions::default()));
    fill(&rt, &store, 4096);
    let search = tool(&store, "SearchMemory");
    let env = Environment::new(dir.path()).unwrap();
    let cancel = CancellationToken::new();
    let queries: Vec<ToolCall> = (0..16)
        .map(|i| {
            let query = format!("{} term{}", WORDS[i % WORDS.len()], i * 113 % 2000);
            ToolCall::new(
                "s1",
                "SearchMemory",
                serde_json::json!({ "query": query }).to_string(),
            )
        })
        .collect();
    // The first search builds the index; the figures are for a warm store.
    rt.block_on(search.execute(&cancel, &queries[0], &env)).unwrap();
    let mut samples = Vec::new();
    for i in 0..calls(1000) {
        let started = Instant::now();
        let result = rt
            .block_on(search.execute(&cancel, &queries[i % queries.len()], &env))
            .unwrap();
        samples.push(started.elapsed());
        assert!(!result.is_error(), "{}", result.content());
    }
    percentiles("search_memory (4096 entries, limit 10)", samples);
    let mut i = 0;
    c.bench_function("memory/search_4096", |b| {
        b.iter(|| {
            i += 1;
            black_box(
                rt.block_on(search.execute(&cancel, &queries[i % queries.len()], &env))
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
    let remember = tool(&store, "Remember");
    let env = Environment::new(dir.path()).unwrap();
    let cancel = CancellationToken::new();
    let mut versions: HashMap<usize, u64> = HashMap::new();
    let mut i = 0usize;
    let mut call = move || {
        i += 1;
        let slot = i % 256;
        let key = format!("area{}/note-{slot}", slot % 64);
        let version = versions.entry(slot).or_insert(1);
        let call = ToolCall::new(
            "r1",
            "Remember",
            serde_json::json!({"key": key, "value": words(i, 28), "description": words(i, 6), "expected_version": *version})
                .to_string(),
        );
        *version += 1;
        call
    };
    let mut samples = Vec::new();
    for _ in 0..calls(300).min(3000) {
        let next = call();
        let started = Instant::now();
        let result = rt.block_on(remember.execute(&cancel, &next, &env)).unwrap();
        samples.push(started.elapsed());
        assert!(!result.is_error(), "{}", result.content());
    }
    percentiles("remember (lock + fsync, 1024 entries)", samples);
    c.bench_function("memory/remember_1024", |b| {
        b.iter(|| {
            let next = call();
            black_box(rt.block_on(remember.execute(&cancel, &next, &env)).unwrap())
        });
    });
}

criterion_group!(benches, search_memory, remember);
criterion_main!(benches);
