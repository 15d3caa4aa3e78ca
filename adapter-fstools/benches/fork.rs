//! Cost of a `Parallel` branch's workspace copy: `FsForker::fork` of a 10,000-file
//! workspace (100 directories of 100 files of 1 KiB, a `.git` directory and a few
//! symlinks), alone and as a fan-out of 8 concurrent copies (the most branches that
//! run at once), cloned by reference where the temp directory's filesystem can
//! (`FICLONE`) and byte-copied. Each copy is removed outside the timed part.
//!
//! - `fork/10k_files/{reflink,copy}`: one copy.
//! - `fork/10k_files_fan_out_8/{reflink,copy}`: 8 concurrent copies; divide by 8 for
//!   the time per branch.
//!
//! `reflink` runs on a loop-mounted XFS image with reflinks when the machine allows
//! it (root, `mkfs.xfs`: see `test_peers::ReflinkFs`), else in the temporary
//! directory; `copy` always runs in the temporary directory (on XFS the kernel's
//! `copy_file_range` would clone too).
//! A line on stdout says where and whether the filesystem cloned (`reflinked N of M
//! files`): on one that cannot (ext4, tmpfs), `reflink` measures the fallback after
//! one refused clone per copy.

// A benchmark program: a broken setup is fatal.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, clippy::print_stdout)]

use std::path::Path;
use std::time::{Duration, Instant};

use adapter_fstools::FsForker;
use criterion::{Criterion, SamplingMode};
use engine_ports::{CancellationToken, WorkspaceCopy, WorkspaceForker};

/// Directories of 100 files in the bench's workspace: 100, or `FORK_BENCH_DIRS` (the
/// smoke run of the benchmark script uses 2, so an unoptimized build stays quick).
fn workspace_dirs() -> usize {
    std::env::var("FORK_BENCH_DIRS")
        .ok()
        .and_then(|dirs| dirs.parse().ok())
        .unwrap_or(100)
}

fn workspace(root: &Path) {
    let body = "x".repeat(1024);
    for dir in 0..workspace_dirs() {
        let dir_path = root.join(format!("src/d{dir:03}"));
        std::fs::create_dir_all(&dir_path).unwrap();
        for file in 0..100 {
            std::fs::write(dir_path.join(format!("f{file:03}.txt")), &body).unwrap();
        }
    }
    std::fs::create_dir_all(root.join(".git/objects")).unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    for i in 0..10 {
        std::os::unix::fs::symlink(format!("src/d{i:03}"), root.join(format!("link{i}"))).unwrap();
    }
}

async fn forks(forker: &FsForker, source: &Path, fan_out: usize, iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    let cancel = CancellationToken::new();
    let labels: Vec<String> = (0..fan_out).map(|i| format!("bench-{i}")).collect();
    for _ in 0..iters {
        let started = Instant::now();
        let copies: Vec<Box<dyn WorkspaceCopy>> =
            futures::future::join_all(labels.iter().map(|label| forker.fork(source, label, &cancel)))
                .await
                .into_iter()
                .map(Result::unwrap)
                .collect();
        total += started.elapsed();
        for copy in copies {
            copy.discard().await;
        }
    }
    total
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let xfs = test_peers::ReflinkFs::try_mount()
        .inspect_err(|why| println!("fork: no reflink filesystem ({why}); copying in the temp directory"))
        .ok();
    let base = xfs.as_ref().map_or(scratch.path(), |fs| fs.path());
    let source = base.join("ws");
    workspace(&source);
    let reflink = FsForker::new(base.join("forks"), 0);
    // The byte copy runs in the temp directory: on XFS the kernel would clone anyway
    // (`copy_file_range` remaps blocks), so that would not measure a copy.
    let copy_source = scratch.path().join("ws");
    if xfs.is_some() {
        workspace(&copy_source);
    }
    let copy = FsForker::new(scratch.path().join("forks"), 0).without_reflink();
    let place = if xfs.is_some() {
        "an XFS image with reflinks"
    } else {
        "the temp directory"
    };
    runtime.block_on(async {
        forker_probe(&reflink, &source, place).await;
        first_branch_ready(&reflink, &source, "reflink").await;
        first_branch_ready(&copy, &copy_source, "copy").await;
    });
    let quick = std::env::args().any(|arg| arg == "--quick");
    let mut criterion = Criterion::default().configure_from_args();
    for (fan_out, group) in [(1, "fork/10k_files"), (8, "fork/10k_files_fan_out_8")] {
        let mut group = criterion.benchmark_group(group);
        // Flat sampling: every sample runs the same number of copies. Criterion's
        // default (linear) sampling runs 1, 2, … 10 iterations per sample, 55 fan-outs
        // of 8 copies (each also removed), which took over 20 minutes on two cores.
        group.sampling_mode(SamplingMode::Flat);
        group.sample_size(10);
        // A group's own measurement time would override `--quick`'s short one.
        if !quick {
            group.measurement_time(Duration::from_secs(10));
        }
        for (name, forker, from) in [("reflink", &reflink, &source), ("copy", &copy, &copy_source)] {
            group.bench_function(name, |b| {
                b.to_async(&runtime)
                    .iter_custom(|iters| forks(forker, from, fan_out, iters));
            });
        }
        group.finish();
    }
    criterion.final_summary();
}

/// The fan-out of 8 as `Parallel` starts it: the time until the first branch's copy
/// is ready (that branch can start) and until all 8 are; medians of 5 runs (1 with
/// criterion's `--quick`), on stdout.
async fn first_branch_ready(forker: &FsForker, source: &Path, how: &str) {
    let runs = if std::env::args().any(|arg| arg == "--quick") {
        1
    } else {
        5
    };
    use futures::StreamExt as _;
    let cancel = CancellationToken::new();
    let labels: Vec<String> = (0..8).map(|i| format!("branch-{i}")).collect();
    let (mut firsts, mut alls) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let started = Instant::now();
        let mut pending: futures::stream::FuturesUnordered<_> = labels
            .iter()
            .map(|label| forker.fork(source, label, &cancel))
            .collect();
        let mut copies = Vec::new();
        while let Some(copy) = pending.next().await {
            if copies.is_empty() {
                firsts.push(started.elapsed());
            }
            copies.push(copy.unwrap());
        }
        alls.push(started.elapsed());
        for copy in copies {
            copy.discard().await;
        }
    }
    firsts.sort();
    alls.sort();
    println!(
        "fork fan-out 8 ({how}): first branch ready after {:.1} ms, all 8 after {:.1} ms (medians of {runs})",
        firsts[runs / 2].as_secs_f64() * 1e3,
        alls[runs / 2].as_secs_f64() * 1e3
    );
}

/// Says whether this filesystem clones.
async fn forker_probe(forker: &FsForker, source: &Path, place: &str) {
    let copy = forker
        .fork(source, "probe", &CancellationToken::new())
        .await
        .unwrap();
    let stats = forker.last_stats();
    println!(
        "fork probe: reflinked {} of {} files ({} bytes) on {place}",
        stats.reflinked, stats.files, stats.bytes
    );
    copy.discard().await;
}
