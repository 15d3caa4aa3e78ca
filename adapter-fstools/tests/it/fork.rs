//! `FsForker`: the port's conformance suite, then what the filesystem adds: the
//! limit of preserved copies, size limits, reflink-or-copy, and nothing left behind.

use std::fs;

use adapter_fstools::{ForkLimits, FsForker};
use engine_ports::{CancellationToken, ForkError, WorkspaceForker};

#[tokio::test]
async fn the_filesystem_forker_passes_the_conformance_suite() {
    let scratch = tempfile::tempdir().unwrap();
    let forker = FsForker::new(scratch.path().join("forks"), 2);
    engine_ports::testkit::workspace_forker::run(&forker, &scratch.path().join("suite")).await;
    // Only the preserved copy is left.
    let left: Vec<_> = fs::read_dir(forker.base()).unwrap().flatten().collect();
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(forker.preserved(), [left[0].path()]);
}

fn workspace(dir: &std::path::Path, files: usize) {
    fs::create_dir_all(dir.join("src")).unwrap();
    for i in 0..files {
        fs::write(dir.join(format!("src/f{i}.txt")), format!("file {i}")).unwrap();
    }
}

#[tokio::test]
async fn preserved_copies_beyond_the_cap_are_removed_oldest_first() {
    let scratch = tempfile::tempdir().unwrap();
    let source = scratch.path().join("ws");
    workspace(&source, 3);
    let forker = FsForker::new(scratch.path().join("forks"), 2);
    let mut roots = Vec::new();
    for label in ["one", "two", "three"] {
        let copy = forker
            .fork(&source, label, &CancellationToken::new())
            .await
            .unwrap();
        assert!(
            copy.root()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(label)
        );
        assert!(copy.preserve());
        roots.push(copy.root().to_path_buf());
    }
    assert!(!roots[0].exists(), "the oldest preserved copy is evicted");
    assert!(roots[1].exists() && roots[2].exists());
    assert_eq!(forker.preserved(), roots[1..]);
    let none = FsForker::new(scratch.path().join("none"), 0);
    let copy = none.fork(&source, "x", &CancellationToken::new()).await.unwrap();
    let root = copy.root().to_path_buf();
    assert!(!copy.preserve(), "a cap of 0 keeps nothing");
    drop(copy);
    assert!(!root.exists());
}

#[tokio::test]
async fn a_tree_over_a_limit_is_refused_and_leaves_nothing() {
    let scratch = tempfile::tempdir().unwrap();
    let source = scratch.path().join("ws");
    workspace(&source, 10);
    let forker = FsForker::new(scratch.path().join("forks"), 1).with_limits(ForkLimits {
        max_entries: 5,
        max_bytes: 1 << 20,
    });
    let error = forker
        .fork(&source, "big", &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(error, ForkError::TooLarge { .. }), "{error}");
    assert!(error.to_string().contains("more than 5 entries"), "{error}");
    assert_eq!(fs::read_dir(forker.base()).unwrap().count(), 0);
    let forker = FsForker::new(scratch.path().join("forks2"), 1).with_limits(ForkLimits {
        max_entries: 1000,
        max_bytes: 20,
    });
    let error = forker
        .fork(&source, "big", &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("more than 20 bytes"), "{error}");
}

#[tokio::test]
async fn every_file_is_cloned_or_copied_and_counted() {
    let scratch = tempfile::tempdir().unwrap();
    let source = scratch.path().join("ws");
    workspace(&source, 20);
    let forker = FsForker::new(scratch.path().join("forks"), 1);
    let copy = forker
        .fork(&source, "stats", &CancellationToken::new())
        .await
        .unwrap();
    let stats = forker.last_stats();
    assert_eq!(stats.files, 20);
    assert!(stats.reflinked <= stats.files);
    assert_eq!(
        fs::read_to_string(copy.root().join("src/f7.txt")).unwrap(),
        "file 7"
    );
}

#[tokio::test]
async fn an_apply_never_writes_through_a_symlinked_directory_of_the_source() {
    let scratch = tempfile::tempdir().unwrap();
    let source = scratch.path().join("ws");
    let outside = scratch.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    workspace(&source, 1);
    fs::create_dir(source.join("sub")).unwrap();
    let forker = FsForker::new(scratch.path().join("forks"), 1);
    let copy = forker
        .fork(&source, "escape", &CancellationToken::new())
        .await
        .unwrap();
    fs::write(copy.root().join("sub/new.txt"), "x").unwrap();
    // Meanwhile the source's directory became a symlink leading out of it.
    fs::remove_dir(source.join("sub")).unwrap();
    std::os::unix::fs::symlink(&outside, source.join("sub")).unwrap();
    let error = copy.apply().await.unwrap_err();
    assert!(
        matches!(&error, ForkError::Conflict { paths, .. } if paths == &["sub/new.txt"]),
        "{error}"
    );
    assert!(!outside.join("new.txt").exists());
}

/// Free bytes of the filesystem holding `path`.
fn free_bytes(path: &std::path::Path) -> u64 {
    let stats = rustix::fs::statvfs(path).unwrap();
    stats.f_bavail * stats.f_frsize
}

/// 4 files of 16 MiB each (64 MiB) under `dir/big`.
fn big_workspace(dir: &std::path::Path) -> u64 {
    let block: Vec<u8> = (0..16 * 1024 * 1024)
        .map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    fs::create_dir_all(dir.join("big")).unwrap();
    for i in 0..4 {
        fs::write(dir.join(format!("big/blob{i}.bin")), &block).unwrap();
    }
    4 * block.len() as u64
}

#[tokio::test]
async fn on_a_reflink_filesystem_a_copy_shares_the_source_blocks_until_written() {
    let Some(xfs) = test_peers::ReflinkFs::mount("fork_on_reflink_filesystem") else {
        return;
    };
    let source = xfs.path().join("ws");
    let total = big_workspace(&source);
    let forker = FsForker::new(xfs.path().join("forks"), 1);
    rustix::fs::sync();
    let before = free_bytes(xfs.path());
    let copy = forker
        .fork(&source, "cloned", &CancellationToken::new())
        .await
        .unwrap();
    rustix::fs::sync();
    let used = before.saturating_sub(free_bytes(xfs.path()));
    let stats = forker.last_stats();
    assert_eq!(
        (stats.files, stats.reflinked),
        (4, 4),
        "every file cloned by reference"
    );
    assert!(
        used < total / 8,
        "a cloned copy used {used} bytes for {total} bytes of files"
    );
    // Copy-on-write: writing the copy leaves the source as it was.
    fs::write(copy.root().join("big/blob0.bin"), "changed").unwrap();
    assert_eq!(
        fs::metadata(source.join("big/blob0.bin")).unwrap().len(),
        total / 4
    );
    copy.discard().await;
}

#[tokio::test]
async fn without_reflink_no_file_is_cloned_by_reference_and_every_byte_arrives() {
    let Some(xfs) = test_peers::ReflinkFs::mount("fork_without_reflink") else {
        return;
    };
    let source = xfs.path().join("ws");
    let total = big_workspace(&source);
    let forker = FsForker::new(xfs.path().join("forks"), 1).without_reflink();
    let copy = forker
        .fork(&source, "copied", &CancellationToken::new())
        .await
        .unwrap();
    let stats = forker.last_stats();
    // The kernel may still share blocks (`copy_file_range` remaps on XFS); what the
    // switch turns off is the explicit clone.
    assert_eq!((stats.files, stats.reflinked, stats.bytes), (4, 0, total));
    for i in 0..4 {
        let name = format!("big/blob{i}.bin");
        assert!(fs::read(copy.root().join(&name)).unwrap() == fs::read(source.join(&name)).unwrap());
    }
    copy.discard().await;
}
