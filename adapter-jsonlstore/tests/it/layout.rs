//! Directories, the token layout and file modes.

use std::time::{Duration, SystemTime};

use adapter_jsonlstore::{JsonlStore, StoreOptions};
use engine_ports::{
    EventLog, PermissionMode, SessionSnapshot, SessionStore, StoreError, ToolCall, ToolCallRecorder,
};

use crate::support::{self, allowed_record, child, delta, entries, logs, mode, open, sid};

#[test]
fn open_creates_0700_directories_and_refuses_an_empty_path() {
    let dir = support::tempdir();
    let root = dir.path().join("a/b/store");
    open(&root);
    assert_eq!(mode(&root), 0o700);
    assert_eq!(mode(&root.join("sid-v1")), 0o700);
    let error = JsonlStore::open("", StoreOptions::default()).unwrap_err();
    assert!(matches!(error, StoreError::StoreDir { .. }), "{error:?}");
    assert!(error.to_string().contains("empty"), "{error}");
}

#[test]
fn open_refuses_a_root_that_is_a_file() {
    let dir = support::tempdir();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let error = JsonlStore::open(&file, StoreOptions::default()).unwrap_err();
    assert!(error.to_string().contains(&*file.to_string_lossy()), "{error}");
}

#[test]
fn open_warns_about_loose_existing_directories_without_chmod() {
    use std::os::unix::fs::PermissionsExt;
    let dir = support::tempdir();
    let root = dir.path().join("loose");
    std::fs::create_dir(&root).unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
    open(&root);
    assert_eq!(mode(&root), 0o755, "existing directories are not chmod-ed");
    let warnings = logs::warnings_mentioning(&root.to_string_lossy());
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("0755"), "{warnings:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_root_may_be_a_symlink() {
    let dir = support::tempdir();
    let real = dir.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let store = open(&link.join("."));
    assert_eq!(store.root(), link, "kept as given, lexically cleaned");
    store
        .save(&SessionSnapshot::new("s", PermissionMode::Default))
        .await
        .unwrap();
    assert_eq!(entries(&real.join("sid-v1")).len(), 2, "snapshot and lock file");
}

#[test]
fn open_removes_temp_files_older_than_an_hour_only() {
    let dir = support::tempdir();
    let family = dir.path().join("sid-v1");
    std::fs::create_dir_all(&family).unwrap();
    let old = family.join(".sid-v1-s-0.session.json.00000000000000aa.tmp");
    let young = family.join(".sid-v1-s-0.session.json.00000000000000bb.tmp");
    for path in [&old, &young] {
        std::fs::write(path, b"{").unwrap();
    }
    let two_hours_ago = SystemTime::now() - Duration::from_secs(7200);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(two_hours_ago)
        .unwrap();
    open(dir.path());
    assert!(!old.exists());
    assert!(young.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_escaping_id_stays_inside_sid_v1() {
    let dir = support::tempdir();
    let root = dir.path().join("store");
    let store = open(&root);
    let id = sid("../escape/../x");
    let snapshot = SessionSnapshot::new("../escape/../x", PermissionMode::Default);
    store.save(&snapshot).await.unwrap();
    store.append(&id, &delta(1, "x")).await.unwrap();
    let call = ToolCall::new("c1", "Read", "{}");
    store.record(&allowed_record(&id, &call, "ok")).await.unwrap();
    let token = JsonlStore::token(&id);
    assert_eq!(token, "sid-v1-___escape____x-df4f080b07b9e8bf9e4574c708c80d62");
    let names = entries(&root.join("sid-v1"));
    assert_eq!(names.len(), 4, "{names:?}");
    for name in &names {
        assert!(name.starts_with(&token), "{name}");
        assert!(!name.contains('/'), "{name}");
    }
    assert_eq!(store.load(&id).await.unwrap(), snapshot);
    assert_eq!(entries(&root), ["sid-v1"], "nothing outside sid-v1");
    assert_eq!(entries(dir.path()), ["store"], "nothing escaped the root");
}

/// Every file 0600 and every directory 0700 whatever the umask: 000
/// (nothing masked) and 277 (owner bits masked, so only an explicit chmod gives
/// 0600/0700). The temp file's mode is checked by the unit test
/// `temp_files_are_0600_under_umask_000`.
#[test]
fn files_are_0600_and_directories_0700_whatever_the_umask() {
    for (umask, control_mode) in [("000", 0o666), ("277", 0o400)] {
        let dir = support::tempdir();
        let root = dir.path().join("store");
        let control = dir.path().join("control");
        child::spawn_with_umask(
            umask,
            "umask-files",
            &[&root.to_string_lossy(), &control.to_string_lossy()],
        )
        .wait_success();
        assert_eq!(
            mode(&control),
            control_mode,
            "the child really ran under umask {umask}"
        );
        assert_eq!(mode(&root), 0o700, "umask {umask}");
        assert_eq!(mode(&root.join("sid-v1")), 0o700, "umask {umask}");
        let store = open(&root);
        let paths = store.paths(&sid("sess-umask"));
        for path in [&paths.snapshot, &paths.tools, &paths.events, &paths.lock] {
            assert_eq!(mode(path), 0o600, "umask {umask}: {}", path.display());
        }
    }
}
