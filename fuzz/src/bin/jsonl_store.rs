//! Fuzz target: hostile files under a JSONL store. The first byte picks the file the
//! rest is written to: the session snapshot (List and Load), the event sidecar
//! (read, then an append that must keep every byte before the last newline), or the
//! tool-call sidecar (read).

use std::sync::OnceLock;

use adapter_jsonlstore::{JsonlStore, StoreOptions, SyncPolicy};
use engine_ports::{Event, EventLog as _, SessionId, SessionStore as _};

fn main() {
    // One store per process, under $TMPDIR (scripts/fuzz.sh points it at fuzz/target).
    static STORE: OnceLock<(tempfile::TempDir, JsonlStore, tokio::runtime::Runtime)> = OnceLock::new();
    let (_dir, store, rt) = STORE.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let opts = StoreOptions {
            sync: SyncPolicy::Never,
            max_record_bytes: 4096,
            max_snapshot_bytes: 65536,
            ..StoreOptions::default()
        };
        let store = JsonlStore::open(dir.path(), opts).expect("open");
        (
            dir,
            store,
            tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("runtime"),
        )
    });
    let id = SessionId::from("fuzz");
    let event: Event = serde_json::from_str(r#"{"seq":1,"type":"message.delta","text":"x"}"#).expect("event");
    afl::fuzz!(|data: &[u8]| {
        let Some((&which, bytes)) = data.split_first() else {
            return;
        };
        let paths = store.paths(&id);
        match which % 3 {
            0 => {
                std::fs::write(&paths.snapshot, bytes).expect("write");
                let _ = rt.block_on(store.list());
                let _ = rt.block_on(store.load(&id));
            }
            1 => {
                std::fs::write(&paths.events, bytes).expect("write");
                store.read_events(&id).expect("read").for_each(drop);
                let committed = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                rt.block_on(store.append(&id, &event)).expect("append");
                let after = std::fs::read(&paths.events).expect("read back");
                assert_eq!(
                    &after[..committed],
                    &bytes[..committed],
                    "committed bytes rewritten"
                );
            }
            _ => {
                std::fs::write(&paths.tools, bytes).expect("write");
                store.read_tool_calls(&id).expect("read").for_each(drop);
            }
        }
    });
}
