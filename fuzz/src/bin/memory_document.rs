//! Fuzz target: a hostile `memory.json` through the file-backed memory store. Every
//! operation works or reports the file (never a panic); a file that does not decode is
//! never rewritten; a document that decodes takes a new key and reads it back.

use adapter_memoryfs::{DOCUMENT_FILE, MemoryFs, MemoryFsOptions};
use engine_ports::{MemoryStore, MemoryWrite};

fn main() {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread().build() else {
        return;
    };
    afl::fuzz!(|data: &[u8]| {
        let Ok(dir) = tempfile::tempdir() else {
            return;
        };
        let file = dir.path().join(DOCUMENT_FILE);
        if std::fs::write(&file, data).is_err() {
            return;
        }
        let store = MemoryFs::open(dir.path(), MemoryFsOptions::default());
        runtime.block_on(async {
            let readable = store.index().await.is_ok();
            let _ = store.get("a").await;
            let _ = store.search("a b", 5).await;
            let _ = store.prefix("", 5).await;
            let _ = store.history("a").await;
            let written = store
                .put(MemoryWrite {
                    key: "fuzz/new-key".to_owned(),
                    value: "v".to_owned(),
                    description: String::new(),
                    expected_version: None,
                    writer: "fuzz".to_owned(),
                })
                .await;
            if !readable {
                assert!(written.is_err(), "an unreadable document took a write");
                assert_eq!(std::fs::read(&file).ok().as_deref(), Some(data), "an unreadable document was rewritten");
            } else if written.is_ok() {
                let back = store.get("fuzz/new-key").await;
                assert!(matches!(back, Ok(Some(ref e)) if e.value == "v"), "a write did not read back");
            }
        });
    });
}
