//! The `engine-ports` memory-store conformance suite against `MemoryFs`.

use std::sync::{Arc, Mutex};

use adapter_memoryfs::{MemoryFs, MemoryFsOptions};
use engine_ports::MemoryStore;
use engine_ports::testkit::memory_store;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_fs_is_a_memory_store() {
    let dirs = Arc::new(Mutex::new(Vec::new()));
    let keep = Arc::clone(&dirs);
    memory_store::run(move || {
        let dir = tempfile::tempdir().unwrap();
        let store = MemoryFs::open(dir.path().join("scope"), MemoryFsOptions::default());
        keep.lock().unwrap().push(dir);
        Arc::new(store) as Arc<dyn MemoryStore>
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_store_values_over_one_directory_see_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let first = MemoryFs::open(dir.path(), MemoryFsOptions::default());
    let second = MemoryFs::open(dir.path(), MemoryFsOptions::default());
    first.put(memory_store::create("a", "one", "")).await.unwrap();
    assert_eq!(second.get("a").await.unwrap().unwrap().value, "one");
    let error = second
        .put(memory_store::create("a", "two", ""))
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("already exists at version 1"),
        "{error}"
    );
    assert_eq!(second.search("one", 5).await.unwrap().len(), 1);
    second
        .put(engine_ports::MemoryWrite {
            expected_version: Some(1),
            ..memory_store::create("a", "three", "")
        })
        .await
        .unwrap();
    assert_eq!(first.get("a").await.unwrap().unwrap().value, "three");
    assert!(
        first.search("one", 5).await.unwrap().is_empty(),
        "the search index follows the file"
    );
}
