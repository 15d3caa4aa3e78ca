//! The file format, modes, and what happens to files the store cannot use.

use std::os::unix::fs::PermissionsExt;

use adapter_memoryfs::{DOCUMENT_FILE, LOCK_FILE, MemoryFs, MemoryFsOptions, TEMP_PREFIX};
use engine_ports::testkit::memory_store::create;
use engine_ports::{MemoryError, MemoryStore};

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn nothing_is_created_before_the_first_write() {
    let dir = tempfile::tempdir().unwrap();
    let scope = dir.path().join("a/b/scope");
    let store = MemoryFs::open(&scope, MemoryFsOptions::default());
    assert!(store.index().await.unwrap().is_empty());
    assert!(store.get("k").await.unwrap().is_none());
    assert!(!scope.exists());
    store.put(create("k", "v", "")).await.unwrap();
    assert_eq!(mode(&scope), 0o700);
    assert_eq!(mode(&scope.join(DOCUMENT_FILE)), 0o600);
    assert_eq!(mode(&scope.join(LOCK_FILE)), 0o600);
}

#[tokio::test]
async fn the_file_is_an_enveloped_document() {
    let dir = tempfile::tempdir().unwrap();
    let store = MemoryFs::open(dir.path(), MemoryFsOptions::default());
    store
        .put(create("build/cmd", "make", "how to build"))
        .await
        .unwrap();
    let text = std::fs::read_to_string(dir.path().join(DOCUMENT_FILE)).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["format"], "mecatl-memory/1");
    let revision = &value["document"]["keys"]["build/cmd"][0];
    assert_eq!(revision["value"], "make");
    assert_eq!(revision["description"], "how to build");
    assert_eq!(revision["version"], 1);
    assert!(text.ends_with("}\n"));
}

async fn refused_everywhere(store: &MemoryFs, expect: &str) {
    let errors = [
        store.get("k").await.err(),
        store.index().await.err(),
        store.search("k", 5).await.err(),
        store.prefix("", 5).await.err(),
        store.put(create("new", "v", "")).await.err(),
        store.forget("k", 1, "test").await.err(),
    ];
    for error in errors {
        let error = error.expect("the operation must fail");
        assert!(error.to_string().contains(expect), "{error}");
    }
}

#[tokio::test]
async fn a_torn_file_is_reported_and_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let store = MemoryFs::open(dir.path(), MemoryFsOptions::default());
    store.put(create("k", "v", "")).await.unwrap();
    let path = dir.path().join(DOCUMENT_FILE);
    let whole = std::fs::read(&path).unwrap();
    let torn = &whole[..whole.len() / 2];
    std::fs::write(&path, torn).unwrap();
    let fresh = MemoryFs::open(dir.path(), MemoryFsOptions::default());
    refused_everywhere(&fresh, "it is not valid JSON").await;
    let error = fresh.get("k").await.unwrap_err();
    assert!(matches!(error, MemoryError::Corrupt { .. }), "{error:?}");
    let text = error.to_string();
    let head = format!(
        "memory file {} cannot be used: it is not valid JSON (EOF while parsing",
        path.display()
    );
    assert!(text.starts_with(&head), "{text}");
    assert!(
        text.ends_with(
            "); a torn or hand-edited file is never replaced; it was left as it is (fix it or move it away)"
        ),
        "{text}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), torn, "the file is untouched");
}

#[tokio::test]
async fn a_foreign_file_is_reported_and_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DOCUMENT_FILE);
    std::fs::write(&path, r#"{"memories":["something else"]}"#).unwrap();
    let store = MemoryFs::open(dir.path(), MemoryFsOptions::default());
    refused_everywhere(&store, "is not a Mecatl memory document").await;
    assert_eq!(
        store.get("k").await.unwrap_err().to_string(),
        format!(
            "memory file {} is not a Mecatl memory document (it has no \"format\" field; expected \"mecatl-memory/1\"); it was left as it is",
            path.display()
        )
    );
    std::fs::write(&path, r#"{"format":"other/2"}"#).unwrap();
    let error = store.index().await.unwrap_err();
    assert!(
        error.to_string().contains(r#"its format is "other/2""#),
        "{error}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), r#"{"format":"other/2"}"#);
}

#[tokio::test]
async fn a_document_breaking_a_rule_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DOCUMENT_FILE);
    let text = r#"{"format":"mecatl-memory/1","document":{"seq":1,"keys":{"Bad Key":[{"version":1,"seq":1,"updated_at":"2024-01-01T00:00:00Z","writer":"w","value":"v"}]}}}"#;
    std::fs::write(&path, text).unwrap();
    let store = MemoryFs::open(dir.path(), MemoryFsOptions::default());
    refused_everywhere(&store, "invalid memory key \"Bad Key\"").await;
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[tokio::test]
async fn a_symlinked_document_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = dir.path().join("elsewhere.json");
    let scope = dir.path().join("scope");
    std::fs::create_dir(&scope).unwrap();
    std::fs::write(
        &elsewhere,
        r#"{"format":"mecatl-memory/1","document":{"seq":0,"keys":{}}}"#,
    )
    .unwrap();
    std::os::unix::fs::symlink(&elsewhere, scope.join(DOCUMENT_FILE)).unwrap();
    let store = MemoryFs::open(&scope, MemoryFsOptions::default());
    let error = store.get("k").await.unwrap_err();
    assert!(error.to_string().contains("symbolic link"), "{error}");
    assert!(store.put(create("k", "v", "")).await.is_err());
    assert!(
        std::fs::symlink_metadata(scope.join(DOCUMENT_FILE))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[tokio::test]
async fn a_write_removes_temp_files_of_an_interrupted_writer() {
    let dir = tempfile::tempdir().unwrap();
    let stale = dir.path().join(format!("{TEMP_PREFIX}0123456789abcdef"));
    std::fs::write(&stale, "half a docu").unwrap();
    let store = MemoryFs::open(dir.path(), MemoryFsOptions::default());
    store.put(create("k", "v", "")).await.unwrap();
    assert!(!stale.exists());
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut names = names;
    names.sort();
    assert_eq!(names, [DOCUMENT_FILE, LOCK_FILE]);
}

#[tokio::test]
async fn a_held_lock_times_out_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(LOCK_FILE), "").unwrap();
    let held = std::fs::File::open(dir.path().join(LOCK_FILE)).unwrap();
    held.lock().unwrap();
    let store = MemoryFs::open(
        dir.path(),
        MemoryFsOptions {
            lock_timeout: std::time::Duration::from_millis(50),
            ..MemoryFsOptions::default()
        },
    );
    let error = store.put(create("k", "v", "")).await.unwrap_err();
    assert!(matches!(error, MemoryError::LockTimeout { .. }), "{error:?}");
    assert!(
        error
            .to_string()
            .contains("another process is writing, try again"),
        "{error}"
    );
    // Reads take no lock.
    assert!(store.get("k").await.unwrap().is_none());
    drop(held);
    store.put(create("k", "v", "")).await.unwrap();
}
