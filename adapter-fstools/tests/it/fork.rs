//! `FsForker`: the port's conformance suite, then what the filesystem adds: the
//! limit of preserved copies, size limits and the budget, reflink-or-copy, a base
//! directory of the user's own, all-or-nothing apply, change detection that sees
//! restored mtimes, and nothing left behind (sweeps of copies whose owner died).

use std::fs;
use std::io::{BufRead as _, BufReader};
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use adapter_fstools::{ForkLimits, FsForker};
use engine_ports::{CancellationToken, ChangeKind, FileChange, ForkError, WorkspaceForker};

#[tokio::test]
async fn the_filesystem_forker_passes_the_conformance_suite() {
    let scratch = tempfile::tempdir().unwrap();
    let forker = FsForker::new(scratch.path().join("forks"), 2);
    engine_ports::testkit::workspace_forker::run(&forker, &scratch.path().join("suite")).await;
    // Only the preserved copy is left (beside it, its lock file and its marker).
    let left = copy_dirs(forker.base());
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(forker.preserved(), left);
}

/// The copy directories under `base` (not the lock files and markers beside them).
fn copy_dirs(base: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(base)
        .unwrap()
        .flatten()
        .filter(|entry| !entry.file_name().to_string_lossy().starts_with('.'))
        .map(|entry| entry.path())
        .collect();
    dirs.sort();
    dirs
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
    assert_eq!(
        fs::read_dir(forker.base()).unwrap().count(),
        0,
        "no copy and no lock file left"
    );
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

async fn fork(forker: &FsForker, source: &Path, label: &str) -> Box<dyn engine_ports::WorkspaceCopy> {
    forker
        .fork(source, label, &CancellationToken::new())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_base_that_is_a_symlink_is_refused_naming_it() {
    let scratch = tempfile::tempdir().unwrap();
    let source = scratch.path().join("ws");
    workspace(&source, 1);
    let real = scratch.path().join("real");
    fs::create_dir(&real).unwrap();
    fs::set_permissions(&real, fs::Permissions::from_mode(0o700)).unwrap();
    let link = scratch.path().join("forks");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let forker = FsForker::new(&link, 1);
    let error = forker
        .fork(&source, "x", &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(error, ForkError::Base { .. }), "{error}");
    let text = error.to_string();
    assert!(text.contains(&link.display().to_string()), "{text}");
    assert!(text.contains("it is a symbolic link"), "{text}");
    assert_eq!(
        fs::read_dir(&real).unwrap().count(),
        0,
        "nothing copied through the link"
    );
}

#[tokio::test]
async fn a_base_other_users_can_enter_is_refused_and_left_as_it_is() {
    let scratch = tempfile::tempdir().unwrap();
    let source = scratch.path().join("ws");
    workspace(&source, 1);
    let base = scratch.path().join("forks");
    fs::create_dir(&base).unwrap();
    fs::set_permissions(&base, fs::Permissions::from_mode(0o777)).unwrap();
    let forker = FsForker::new(&base, 1);
    let error = forker
        .fork(&source, "x", &CancellationToken::new())
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, ForkError::Base { .. }), "{text}");
    assert!(text.contains(&base.display().to_string()), "{text}");
    assert!(
        text.contains("its mode is 0777: group or other users have access"),
        "{text}"
    );
    assert_eq!(
        fs::metadata(&base).unwrap().mode() & 0o777,
        0o777,
        "never chmodded"
    );
    assert_eq!(fs::read_dir(&base).unwrap().count(), 0);
    assert!(matches!(forker.sweep_stale(), Err(ForkError::Base { .. })));
}

#[tokio::test]
async fn a_base_owned_by_another_user_is_refused_and_left_as_it_is() {
    let scratch = tempfile::tempdir().unwrap();
    let source = scratch.path().join("ws");
    workspace(&source, 1);
    let base = scratch.path().join("forks");
    fs::create_dir(&base).unwrap();
    fs::set_permissions(&base, fs::Permissions::from_mode(0o700)).unwrap();
    if std::os::unix::fs::chown(&base, Some(65534), Some(65534)).is_err() {
        // Only root can give a directory away; elsewhere this case cannot be built.
        return;
    }
    let forker = FsForker::new(&base, 1);
    let error = forker
        .fork(&source, "x", &CancellationToken::new())
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, ForkError::Base { .. }), "{text}");
    assert!(text.contains(&base.display().to_string()), "{text}");
    assert!(
        text.contains("it is owned by uid 65534, not by this user"),
        "{text}"
    );
    let meta = fs::metadata(&base).unwrap();
    assert_eq!((meta.uid(), meta.mode() & 0o777), (65534, 0o700));
    assert_eq!(fs::read_dir(&base).unwrap().count(), 0);
}

#[test]
fn the_default_base_is_a_private_directory_named_for_the_user() {
    let scratch = tempfile::tempdir().unwrap();
    let uid = fs::metadata("/proc/self").unwrap().uid();
    let temp = scratch.path().join("tmp");
    assert_eq!(
        FsForker::default_base_given(None, &temp),
        temp.join(format!("mecatl-forks-{uid}"))
    );
    let runtime = scratch.path().join("run");
    fs::create_dir(&runtime).unwrap();
    fs::set_permissions(&runtime, fs::Permissions::from_mode(0o700)).unwrap();
    assert_eq!(
        FsForker::default_base_given(Some(&runtime), &temp),
        runtime.join("mecatl-forks")
    );
    // A runtime directory others can enter is not used.
    fs::set_permissions(&runtime, fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(
        FsForker::default_base_given(Some(&runtime), &temp),
        temp.join(format!("mecatl-forks-{uid}"))
    );
    assert!(
        FsForker::default_base()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("mecatl-forks")
    );
}

/// A process holding `flock` on `path` until killed (it has the lock when this
/// returns).
fn lock_holder(path: &Path) -> Child {
    // The shell opens the file, locks it and becomes `sleep`: the lock lives exactly
    // as long as the spawned process.
    let mut child = Command::new("sh")
        .args([
            "-c",
            "exec 9<>\"$0\" && flock -x 9 && echo locked && exec sleep 600",
        ])
        .arg(path)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "locked\n");
    child
}

/// A copy directory `name` holding a `.env`, with its lock file, as a forker lays
/// them out.
fn planted_copy(base: &Path, name: &str) -> PathBuf {
    let dir = base.join(name);
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join(".env"), "TOKEN=secret").unwrap();
    fs::write(base.join(format!(".{name}.lock")), "").unwrap();
    dir
}

#[tokio::test]
async fn a_sweep_removes_copies_whose_owner_died_and_keeps_live_and_preserved_ones() {
    let scratch = tempfile::tempdir().unwrap();
    let source = scratch.path().join("ws");
    workspace(&source, 2);
    let base = scratch.path().join("forks");
    let first = FsForker::new(&base, 2);
    // This process's copies: one in use, one preserved and dropped.
    let live = fork(&first, &source, "live").await;
    let kept = fork(&first, &source, "kept").await;
    assert!(kept.preserve());
    let kept_root = kept.root().to_path_buf();
    drop(kept);
    // Another process's copy, whose lock that process holds.
    let other = planted_copy(&base, "other-00000001");
    let mut holder = lock_holder(&base.join(".other-00000001.lock"));
    // A copy whose owner was killed: its lock was released by the kernel.
    let dead = planted_copy(&base, "dead-00000002");
    let mut killed = lock_holder(&base.join(".dead-00000002.lock"));
    killed.kill().unwrap();
    killed.wait().unwrap();
    // And one left without its lock file.
    let bare = base.join("bare-00000003");
    fs::create_dir(&bare).unwrap();

    let next = FsForker::new(&base, 2);
    assert_eq!(next.sweep_stale().unwrap(), 2);
    assert!(
        !dead.exists() && !bare.exists(),
        "the copies of dead owners are removed"
    );
    assert!(!base.join(".dead-00000002.lock").exists());
    assert!(live.root().exists(), "a live copy of this process is kept");
    assert!(
        other.join(".env").exists(),
        "a live copy of another process is kept"
    );
    assert!(kept_root.exists(), "a preserved copy is kept");

    holder.kill().unwrap();
    holder.wait().unwrap();
    assert_eq!(next.sweep_stale().unwrap(), 1, "once its owner is gone");
    assert!(!other.exists());
    assert!(live.root().exists() && kept_root.exists());
}

#[tokio::test]
async fn at_shutdown_every_copy_not_preserved_is_removed() {
    let scratch = tempfile::tempdir().unwrap();
    let source = scratch.path().join("ws");
    workspace(&source, 2);
    let forker = FsForker::new(scratch.path().join("forks"), 2);
    let busy = fork(&forker, &source, "busy").await;
    let winner = fork(&forker, &source, "winner").await;
    assert!(winner.preserve());
    assert_eq!(forker.remove_unpreserved(), 1);
    assert!(!busy.root().exists());
    assert!(winner.root().exists());
    drop(busy);
    assert_eq!(copy_dirs(forker.base()), [winner.root().to_path_buf()]);
}

#[tokio::test]
async fn copies_over_the_budget_are_refused_before_copying_naming_the_budget_and_the_size() {
    let scratch = tempfile::tempdir().unwrap();
    let source = scratch.path().join("ws");
    fs::create_dir_all(&source).unwrap();
    fs::write(source.join("data.bin"), vec![7u8; 1000]).unwrap();
    let forker = FsForker::new(scratch.path().join("forks"), 2).with_budget(2500);
    forker.check_budget(&source, 2).await.unwrap();
    let error = forker.check_budget(&source, 3).await.unwrap_err();
    assert!(matches!(error, ForkError::OverBudget { .. }), "{error}");
    let text = error.to_string();
    assert!(
        text.contains("needs 3000 bytes (3 copies of 1000 bytes), over the budget of 2500 bytes"),
        "{text}"
    );
    // What copies hold counts: two live copies leave no room for a third.
    let one = fork(&forker, &source, "one").await;
    let two = fork(&forker, &source, "two").await;
    assert_eq!(forker.held_bytes(), 2000);
    let error = forker.check_budget(&source, 1).await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("2000 bytes are held by copies already"),
        "{error}"
    );
    let error = forker
        .fork(&source, "three", &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(error, ForkError::OverBudget { .. }), "{error}");
    assert_eq!(copy_dirs(forker.base()).len(), 2, "the refused copy left nothing");
    one.discard().await;
    drop(two);
    assert_eq!(forker.held_bytes(), 0);
    forker.check_budget(&source, 2).await.unwrap();
}

#[tokio::test]
async fn a_failing_apply_rolls_back_every_change_and_names_the_path() {
    let scratch = tempfile::tempdir().unwrap();
    let source = scratch.path().join("ws");
    fs::create_dir_all(source.join("d")).unwrap();
    fs::write(source.join("a.txt"), "old a").unwrap();
    fs::write(source.join("d/f.txt"), "f").unwrap();
    fs::write(source.join("z.txt"), "old z").unwrap();
    let forker = FsForker::new(scratch.path().join("forks"), 1);
    let copy = fork(&forker, &source, "rollback").await;
    let at = copy.root();
    fs::write(at.join("a.txt"), "new a, longer").unwrap();
    fs::create_dir_all(at.join("new/deeper")).unwrap();
    fs::write(at.join("new/deeper/file.txt"), "x").unwrap();
    fs::remove_file(at.join("z.txt")).unwrap();
    // In the copy, `d` became a file: in the workspace it is a non-empty directory,
    // which no rename can replace.
    fs::remove_file(at.join("d/f.txt")).unwrap();
    fs::remove_dir(at.join("d")).unwrap();
    fs::write(at.join("d"), "a file now").unwrap();
    fs::write(source.join("d/other.txt"), "keeps d non-empty").unwrap();
    let before = tree(&source);

    let error = copy.apply().await.unwrap_err();
    let text = error.to_string();
    assert!(
        matches!(&error, ForkError::ApplyFailed { path, .. } if path == &source.join("d")),
        "{text}"
    );
    assert!(text.contains("Is a directory"), "{text}");
    assert!(text.contains("every change made was rolled back"), "{text}");
    assert_eq!(tree(&source), before, "the workspace is exactly as it was");
}

/// Every entry under `root` with its content (a directory as `<dir>`), sorted.
fn tree(root: &Path) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = walk(root)
        .into_iter()
        .map(|path| {
            let name = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let content = if path.is_dir() {
                "<dir>".to_owned()
            } else {
                fs::read_to_string(&path).unwrap()
            };
            (name, content)
        })
        .collect();
    out.sort();
    out
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        }
        out.push(path);
    }
    out
}

#[tokio::test]
async fn an_apply_replaces_a_file_whose_name_is_as_long_as_a_name_may_be() {
    let scratch = tempfile::tempdir().unwrap();
    let source = scratch.path().join("ws");
    fs::create_dir_all(&source).unwrap();
    let name = "n".repeat(255);
    fs::write(source.join(&name), "old").unwrap();
    let forker = FsForker::new(scratch.path().join("forks"), 1);
    let copy = fork(&forker, &source, "long").await;
    fs::write(copy.root().join(&name), "new content").unwrap();
    let applied = copy.apply().await.unwrap();
    assert_eq!(
        applied,
        [FileChange {
            path: name.clone(),
            kind: ChangeKind::Modified
        }]
    );
    assert_eq!(fs::read_to_string(source.join(&name)).unwrap(), "new content");
    assert_eq!(fs::read_dir(&source).unwrap().count(), 1, "no temp file left");
}

/// Rewrites `path` with `text` (of the same length), then sets its mtime back.
fn edit_keeping_mtime(path: &Path, text: &str) {
    let mtime = fs::metadata(path).unwrap().modified().unwrap();
    assert_eq!(fs::metadata(path).unwrap().len(), text.len() as u64);
    fs::write(path, text).unwrap();
    let file = fs::File::options().write(true).open(path).unwrap();
    file.set_times(fs::FileTimes::new().set_modified(mtime)).unwrap();
    assert_eq!(fs::metadata(path).unwrap().modified().unwrap(), mtime);
}

#[tokio::test]
async fn a_same_length_edit_with_the_mtime_restored_is_a_change_in_the_copy() {
    let scratch = tempfile::tempdir().unwrap();
    let source = scratch.path().join("ws");
    workspace(&source, 2);
    let forker = FsForker::new(scratch.path().join("forks"), 1);
    let copy = fork(&forker, &source, "mtime").await;
    edit_keeping_mtime(&copy.root().join("src/f1.txt"), "FILE 1");
    assert_eq!(
        copy.changes().await.unwrap(),
        [FileChange {
            path: "src/f1.txt".to_owned(),
            kind: ChangeKind::Modified
        }]
    );
    copy.apply().await.unwrap();
    assert_eq!(fs::read_to_string(source.join("src/f1.txt")).unwrap(), "FILE 1");
}

#[tokio::test]
async fn a_same_length_edit_with_the_mtime_restored_in_the_workspace_is_a_conflict() {
    let scratch = tempfile::tempdir().unwrap();
    let source = scratch.path().join("ws");
    workspace(&source, 2);
    let forker = FsForker::new(scratch.path().join("forks"), 1);
    let copy = fork(&forker, &source, "conflict").await;
    fs::write(copy.root().join("src/f0.txt"), "the branch's version").unwrap();
    edit_keeping_mtime(&source.join("src/f0.txt"), "user 0");
    let error = copy.apply().await.unwrap_err();
    assert!(
        matches!(&error, ForkError::Conflict { paths, .. } if paths == &["src/f0.txt"]),
        "{error}"
    );
    assert_eq!(fs::read_to_string(source.join("src/f0.txt")).unwrap(), "user 0");
}
