//! The memory benches' workload, shared by every [`MemoryStore`](crate::MemoryStore)
//! bench so their figures compare: notes that mix common and rarer words under 64
//! areas ([`notes`]), the searches `SearchMemory` makes ([`queries`]), and the
//! compare-and-set replaces `Remember` makes ([`Rewrites`]).

use std::collections::HashMap;

use crate::MemoryWrite;

/// The common words notes share.
pub const COMMON_WORDS: &[&str] = &[
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

/// `n` words for entry `seed`: every fourth from [`COMMON_WORDS`], the others from
/// 2,000 rarer terms, as notes mix shared and specific vocabulary.
pub fn words(seed: usize, n: usize) -> String {
    (0..n)
        .map(|k| {
            if k % 4 == 0 {
                COMMON_WORDS[(seed * 7 + k * 13) % COMMON_WORDS.len()].to_owned()
            } else {
                format!("term{}", (seed * 31 + k * 97) % 2000)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `n` new notes under 64 areas (`area{i % 64}/note-{i}`): a few words of
/// description, about 200 bytes of value.
pub fn notes(n: usize) -> Vec<MemoryWrite> {
    (0..n)
        .map(|i| MemoryWrite {
            key: format!("area{}/note-{i}", i % 64),
            value: words(i, 28),
            description: words(i + 3, 6),
            expected_version: None,
            writer: "bench".to_owned(),
        })
        .collect()
}

/// 16 searches of one common word and one rarer term each.
pub fn queries() -> Vec<String> {
    (0..16)
        .map(|i| format!("{} term{}", COMMON_WORDS[i % COMMON_WORDS.len()], i * 113 % 2000))
        .collect()
}

/// Compare-and-set replaces of the first 256 of [`notes`], round robin, each
/// expecting the version the previous replace of that note left (the notes start at
/// version 1).
#[derive(Debug, Default)]
pub struct Rewrites {
    count: usize,
    versions: HashMap<usize, u64>,
}

impl Iterator for Rewrites {
    type Item = MemoryWrite;

    fn next(&mut self) -> Option<MemoryWrite> {
        self.count += 1;
        let slot = self.count % 256;
        let version = self.versions.entry(slot).or_insert(1);
        let write = MemoryWrite {
            key: format!("area{}/note-{slot}", slot % 64),
            value: words(self.count, 28),
            description: words(self.count, 6),
            expected_version: Some(*version),
            writer: "bench".to_owned(),
        };
        *version += 1;
        Some(write)
    }
}
