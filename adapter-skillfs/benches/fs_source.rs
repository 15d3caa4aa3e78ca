//! Building `FsSource` from 1,000 skills with assets (target: under 200 ms on a
//! 2-core machine, release build, warm page cache): discovery, parsing, the
//! `has_assets` listing and the diagnostics.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use adapter_skillfs::{DirSource, FsSource, FsSourceConfig};
use criterion::{Criterion, criterion_group, criterion_main};

/// Writes `count` skills, each a 1 KiB `SKILL.md` plus 5 assets in 2 subdirectories.
fn populate(root: &Path, count: usize) {
    for i in 0..count {
        let name = format!("skill-{i:04}");
        let dir = root.join(&name);
        std::fs::create_dir_all(dir.join("references")).unwrap();
        std::fs::create_dir_all(dir.join("scripts")).unwrap();
        let mut text = format!(
            "---\nname: {name}\ndescription: Benchmark skill number {i}, describing when to use it.\n\
             license: MIT\nallowed-tools: Read Grep Shell\nmetadata:\n  author: bench\n  version: \"1\"\n---\n\n"
        );
        while text.len() < 1_024 {
            text.push_str("Follow these steps carefully and report what you found.\n");
        }
        text.truncate(1_024);
        std::fs::write(dir.join("SKILL.md"), &text).unwrap();
        for asset in [
            "references/api.md",
            "references/guide.md",
            "references/faq.md",
            "scripts/run.sh",
            "scripts/check.sh",
        ] {
            std::fs::write(dir.join(asset), "asset content\n").unwrap();
        }
    }
}

fn build_from_1000_skills(c: &mut Criterion) {
    let root = tempfile::tempdir().unwrap();
    populate(root.path(), 1_000);
    let source = DirSource::new(root.path());
    let built = FsSource::build(&source, FsSourceConfig::default()).unwrap();
    assert_eq!(built.source.metas().len(), 1_000);
    assert!(built.diagnostics.is_empty());
    assert!(built.source.metas().iter().all(|m| m.has_assets));

    c.bench_function("fs_source_build_1000_skills_with_assets", |b| {
        b.iter(|| FsSource::build(&source, FsSourceConfig::default()).unwrap());
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = build_from_1000_skills
}
criterion_main!(benches);
