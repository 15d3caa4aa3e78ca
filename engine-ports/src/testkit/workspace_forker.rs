//! Conformance suite for [`WorkspaceForker`] implementations (Unix: it checks
//! symlinks and permission bits).

use std::fs;
use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

use crate::fork::{ChangeKind, FileChange, ForkError, WorkspaceCopy, WorkspaceForker};

/// Runs every case against `forker`, building workspaces under `scratch` (an empty
/// directory). The forker must keep at least one preserved copy.
///
/// # Panics
/// When a case fails; the message names the case.
pub async fn run(forker: &dyn WorkspaceForker, scratch: &Path) {
    copies_everything_and_follows_no_link(forker, &scratch.join("copies")).await;
    lists_changes_and_never_touches_the_source(forker, &scratch.join("changes")).await;
    applies_changes_to_the_source(forker, &scratch.join("apply")).await;
    refuses_to_apply_over_a_changed_source(forker, &scratch.join("conflict")).await;
    removes_on_drop_and_discard_keeps_when_preserved(forker, &scratch.join("cleanup")).await;
    a_cancelled_fork_fails(forker, &scratch.join("cancel")).await;
}

/// A workspace: `a.txt`, `dir/b.txt`, `.git/HEAD`, an executable, a symlink to
/// `a.txt` and a dangling symlink.
fn workspace(root: &Path) -> PathBuf {
    let source = root.join("source");
    fs::create_dir_all(source.join("dir")).unwrap_or_else(|e| panic!("creating the workspace: {e}"));
    fs::create_dir_all(source.join(".git")).unwrap_or_else(|e| panic!("creating .git: {e}"));
    for (path, text) in [
        ("a.txt", "a"),
        ("dir/b.txt", "b"),
        (".git/HEAD", "ref: main"),
        ("run.sh", "#!/bin/sh"),
    ] {
        fs::write(source.join(path), text).unwrap_or_else(|e| panic!("writing {path}: {e}"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        fs::set_permissions(source.join("run.sh"), fs::Permissions::from_mode(0o755))
            .unwrap_or_else(|e| panic!("chmod: {e}"));
        std::os::unix::fs::symlink("a.txt", source.join("link")).unwrap_or_else(|e| panic!("symlink: {e}"));
        std::os::unix::fs::symlink("/nonexistent/target", source.join("dangling"))
            .unwrap_or_else(|e| panic!("symlink: {e}"));
    }
    source
}

async fn fork(forker: &dyn WorkspaceForker, source: &Path, case: &str) -> Box<dyn WorkspaceCopy> {
    forker
        .fork(source, case, &CancellationToken::new())
        .await
        .unwrap_or_else(|e| panic!("workspace_forker::{case}: fork failed: {e}"))
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn change(path: &str, kind: ChangeKind) -> FileChange {
    FileChange {
        path: path.to_owned(),
        kind,
    }
}

async fn copies_everything_and_follows_no_link(forker: &dyn WorkspaceForker, root: &Path) {
    const CASE: &str = "copies_everything_and_follows_no_link";
    let source = workspace(root);
    let copy = fork(forker, &source, CASE).await;
    let at = copy.root().to_path_buf();
    assert!(
        at.is_absolute() && at != source,
        "workspace_forker::{CASE}: {}",
        at.display()
    );
    assert_eq!(copy.source(), source, "workspace_forker::{CASE}: source");
    assert!(
        !at.starts_with(&source),
        "workspace_forker::{CASE}: the copy is inside the source"
    );
    assert_eq!(read(&at.join("a.txt")), "a", "workspace_forker::{CASE}: a.txt");
    assert_eq!(
        read(&at.join("dir/b.txt")),
        "b",
        "workspace_forker::{CASE}: dir/b.txt"
    );
    assert_eq!(
        read(&at.join(".git/HEAD")),
        "ref: main",
        "workspace_forker::{CASE}: .git"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = fs::metadata(at.join("run.sh")).map(|m| m.permissions().mode() & 0o777);
        assert_eq!(
            mode.ok(),
            Some(0o755),
            "workspace_forker::{CASE}: permission bits"
        );
        for (link, target) in [("link", "a.txt"), ("dangling", "/nonexistent/target")] {
            let meta = fs::symlink_metadata(at.join(link));
            assert!(
                meta.is_ok_and(|m| m.file_type().is_symlink()),
                "workspace_forker::{CASE}: {link} must stay a symlink"
            );
            assert_eq!(
                fs::read_link(at.join(link)).ok(),
                Some(PathBuf::from(target)),
                "workspace_forker::{CASE}: {link}'s target"
            );
        }
    }
    assert_eq!(
        copy.changes().await.map_err(|e| e.to_string()),
        Ok(Vec::new()),
        "workspace_forker::{CASE}: a fresh copy has no changes"
    );
}

async fn lists_changes_and_never_touches_the_source(forker: &dyn WorkspaceForker, root: &Path) {
    const CASE: &str = "lists_changes_and_never_touches_the_source";
    let source = workspace(root);
    let copy = fork(forker, &source, CASE).await;
    let at = copy.root().to_path_buf();
    fs::write(at.join("a.txt"), "changed in the copy").unwrap_or_else(|e| panic!("{e}"));
    fs::write(at.join("new.txt"), "new").unwrap_or_else(|e| panic!("{e}"));
    fs::remove_file(at.join("dir/b.txt")).unwrap_or_else(|e| panic!("{e}"));
    fs::create_dir(at.join("empty")).unwrap_or_else(|e| panic!("{e}"));
    let changes = copy
        .changes()
        .await
        .unwrap_or_else(|e| panic!("workspace_forker::{CASE}: {e}"));
    assert_eq!(
        changes,
        [
            change("a.txt", ChangeKind::Modified),
            change("dir/b.txt", ChangeKind::Deleted),
            change("new.txt", ChangeKind::Added),
        ],
        "workspace_forker::{CASE}"
    );
    assert_eq!(
        read(&source.join("a.txt")),
        "a",
        "workspace_forker::{CASE}: the source changed"
    );
    assert!(source.join("dir/b.txt").exists(), "workspace_forker::{CASE}");
    assert!(!source.join("new.txt").exists(), "workspace_forker::{CASE}");
}

async fn applies_changes_to_the_source(forker: &dyn WorkspaceForker, root: &Path) {
    const CASE: &str = "applies_changes_to_the_source";
    let source = workspace(root);
    let copy = fork(forker, &source, CASE).await;
    let at = copy.root().to_path_buf();
    fs::write(at.join("a.txt"), "applied").unwrap_or_else(|e| panic!("{e}"));
    fs::create_dir_all(at.join("deep/er")).unwrap_or_else(|e| panic!("{e}"));
    fs::write(at.join("deep/er/new.txt"), "new").unwrap_or_else(|e| panic!("{e}"));
    fs::remove_file(at.join("dir/b.txt")).unwrap_or_else(|e| panic!("{e}"));
    let applied = copy
        .apply()
        .await
        .unwrap_or_else(|e| panic!("workspace_forker::{CASE}: {e}"));
    assert_eq!(applied.len(), 3, "workspace_forker::{CASE}: {applied:?}");
    assert_eq!(read(&source.join("a.txt")), "applied", "workspace_forker::{CASE}");
    assert_eq!(
        read(&source.join("deep/er/new.txt")),
        "new",
        "workspace_forker::{CASE}"
    );
    assert!(!source.join("dir/b.txt").exists(), "workspace_forker::{CASE}");
}

async fn refuses_to_apply_over_a_changed_source(forker: &dyn WorkspaceForker, root: &Path) {
    const CASE: &str = "refuses_to_apply_over_a_changed_source";
    let source = workspace(root);
    let copy = fork(forker, &source, CASE).await;
    let at = copy.root().to_path_buf();
    fs::write(at.join("a.txt"), "from the copy").unwrap_or_else(|e| panic!("{e}"));
    fs::write(at.join("c.txt"), "also from the copy").unwrap_or_else(|e| panic!("{e}"));
    fs::write(source.join("a.txt"), "changed by someone else").unwrap_or_else(|e| panic!("{e}"));
    match copy.apply().await {
        Err(ForkError::Conflict { copy: named, paths }) => {
            assert_eq!(paths, ["a.txt"], "workspace_forker::{CASE}");
            assert_eq!(named, at, "workspace_forker::{CASE}: the error names the copy");
        }
        other => panic!("workspace_forker::{CASE}: expected a conflict, got {other:?}"),
    }
    assert_eq!(
        read(&source.join("a.txt")),
        "changed by someone else",
        "workspace_forker::{CASE}"
    );
    assert!(
        !source.join("c.txt").exists(),
        "workspace_forker::{CASE}: nothing is applied"
    );
}

async fn removes_on_drop_and_discard_keeps_when_preserved(forker: &dyn WorkspaceForker, root: &Path) {
    const CASE: &str = "removes_on_drop_and_discard_keeps_when_preserved";
    let source = workspace(root);
    let dropped = fork(forker, &source, CASE).await;
    let at = dropped.root().to_path_buf();
    drop(dropped);
    assert!(
        !at.exists(),
        "workspace_forker::{CASE}: a dropped copy stays at {}",
        at.display()
    );
    let discarded = fork(forker, &source, CASE).await;
    let at = discarded.root().to_path_buf();
    discarded.discard().await;
    assert!(!at.exists(), "workspace_forker::{CASE}: a discarded copy stays");
    let kept = fork(forker, &source, CASE).await;
    let at = kept.root().to_path_buf();
    assert!(kept.preserve(), "workspace_forker::{CASE}: preserve");
    drop(kept);
    assert!(
        at.join("a.txt").exists(),
        "workspace_forker::{CASE}: a preserved copy was removed"
    );
    assert!(
        source.join("a.txt").exists(),
        "workspace_forker::{CASE}: the source is intact"
    );
}

async fn a_cancelled_fork_fails(forker: &dyn WorkspaceForker, root: &Path) {
    const CASE: &str = "a_cancelled_fork_fails";
    let source = workspace(root);
    let cancel = CancellationToken::new();
    cancel.cancel();
    match forker.fork(&source, CASE, &cancel).await {
        Err(ForkError::Cancelled) => {}
        other => panic!("workspace_forker::{CASE}: expected Cancelled, got {other:?}"),
    }
}
