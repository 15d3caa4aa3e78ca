//! Save, Load, List and Create.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use adapter_jsonlstore::{JsonlStore, StoreOptions};
use engine_ports::testkit::session_store::session_after_a_turn;
use engine_ports::{Message, PermissionMode, SessionSnapshot, SessionStore, StoreError, ToolCall};

use crate::support::{self, entries, logs, open, sid};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn save_then_load_returns_the_whole_value_from_a_one_line_file() {
    let dir = support::tempdir();
    let store = open(dir.path());
    let snapshot = session_after_a_turn("sess-1");
    let Some(Message::Assistant { tool_calls, .. }) = snapshot.conversation.get(1) else {
        panic!("fixture changed");
    };
    assert_eq!(tool_calls[0].name(), "Grep");
    store.save(&snapshot).await.unwrap();
    assert_eq!(store.load(&sid("sess-1")).await.unwrap(), snapshot);
    let text = std::fs::read_to_string(store.paths(&sid("sess-1")).snapshot).unwrap();
    assert_eq!(text.matches('\n').count(), 1, "one line");
    assert!(text.ends_with('\n'));
    assert!(
        text.starts_with(r#"{"format":"mecated-session/1","id":"sess-1","saved_at":""#),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_mode_hydrated_names_and_invalid_argument_text_survive() {
    let dir = support::tempdir();
    let store = open(dir.path());
    let mut snapshot = SessionSnapshot::new("sess-plan", PermissionMode::Plan);
    snapshot.hydrated = BTreeSet::from(["mcp__a__b".to_owned()]);
    snapshot.next_seq = 42;
    snapshot.conversation = vec![Message::Assistant {
        text: String::new(),
        tool_calls: vec![ToolCall::new("c1", "Edit", r#"{"p":"#)],
    }]
    .into();
    store.save(&snapshot).await.unwrap();
    let loaded = store.load(&sid("sess-plan")).await.unwrap();
    assert_eq!(loaded, snapshot);
    let Message::Assistant { tool_calls, .. } = &loaded.conversation[0] else {
        panic!("not an assistant message");
    };
    assert_eq!(tool_calls[0].args(), r#"{"p":"#);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loading_a_ghost_is_not_found_naming_it() {
    let dir = support::tempdir();
    let store = open(dir.path());
    let error = store.load(&sid("ghost")).await.unwrap_err();
    assert!(matches!(error, StoreError::NotFound { .. }), "{error:?}");
    assert!(error.to_string().contains("\"ghost\""), "{error}");
}

/// Load creates, locks and repairs nothing, and never touches a sidecar (FIFOs in
/// their place would make any open of them fail or hang).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_is_a_pure_reader() {
    let dir = support::tempdir();
    let store = open(dir.path());
    let id = sid("sess-pure");
    store
        .save(&SessionSnapshot::new("sess-pure", PermissionMode::Default))
        .await
        .unwrap();
    let paths = store.paths(&id);
    std::fs::remove_file(&paths.lock).unwrap();
    for fifo in [&paths.events, &paths.tools] {
        assert!(
            std::process::Command::new("mkfifo")
                .arg(fifo)
                .status()
                .unwrap()
                .success()
        );
    }
    let family = dir.path().join("sid-v1");
    let before = entries(&family);
    assert!(store.load(&id).await.is_ok());
    assert!(store.load(&sid("missing")).await.is_err());
    assert_eq!(entries(&family), before, "Load created or removed a file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_reports_bad_files_as_errors_not_not_found() {
    let dir = support::tempdir();
    let store = open(dir.path());
    store
        .save(&SessionSnapshot::new("sess-1", PermissionMode::Default))
        .await
        .unwrap();
    let good = std::fs::read(store.paths(&sid("sess-1")).snapshot).unwrap();

    // The stored id differs from the requested one.
    std::fs::write(store.paths(&sid("sess-2")).snapshot, &good).unwrap();
    let error = store.load(&sid("sess-2")).await.unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error:?}");
    assert!(error.to_string().contains("\"sess-2\""), "{error}");

    // An unknown format says a newer version wrote it.
    let newer = String::from_utf8(good.clone())
        .unwrap()
        .replace("mecated-session/1", "mecated-session/2");
    std::fs::write(
        store.paths(&sid("sess-3")).snapshot,
        newer.replace("sess-1", "sess-3"),
    )
    .unwrap();
    let error = store.load(&sid("sess-3")).await.unwrap_err();
    assert!(error.to_string().contains("newer version"), "{error}");

    // Undecodable.
    std::fs::write(store.paths(&sid("sess-4")).snapshot, b"{not json").unwrap();
    let error = store.load(&sid("sess-4")).await.unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error:?}");
    assert!(error.to_string().contains("\"sess-4\""), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_reports_the_stored_id_and_the_file_mtime() {
    let dir = support::tempdir();
    let store = open(dir.path());
    store
        .save(&SessionSnapshot::new("team-abc/lead", PermissionMode::Default))
        .await
        .unwrap();
    let listings = store.list().await.unwrap();
    assert_eq!(listings.len(), 1);
    assert_eq!(listings[0].id, "team-abc/lead");
    let mtime = std::fs::metadata(store.paths(&sid("team-abc/lead")).snapshot)
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(listings[0].modified_at, mtime);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_skips_junk_empty_and_misnamed_files_with_one_warning_each() {
    let dir = support::tempdir();
    let store = open(dir.path());
    store
        .save(&SessionSnapshot::new("sess-1", PermissionMode::Default))
        .await
        .unwrap();
    let family = dir.path().join("sid-v1");
    std::fs::write(family.join("junk.session.json"), b"{not json").unwrap();
    std::fs::write(family.join("empty.session.json"), b"").unwrap();
    std::fs::copy(
        store.paths(&sid("sess-1")).snapshot,
        family.join("sid-v1-other-00000000000000000000000000000000.session.json"),
    )
    .unwrap();
    // Sidecars, locks and temp files are never read by List.
    std::fs::write(family.join("x.tools.jsonl"), b"junk").unwrap();
    std::fs::write(family.join(".x.session.json.0011223344556677.tmp"), b"junk").unwrap();
    let listings = store.list().await.unwrap();
    let ids: Vec<&str> = listings.iter().map(|l| l.id.as_str()).collect();
    assert_eq!(ids, ["sess-1"]);
    let warnings = logs::warnings_mentioning(&family.to_string_lossy());
    assert_eq!(warnings.len(), 3, "{warnings:#?}");
    assert_eq!(store.list().await.unwrap(), listings, "two Lists agree");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_skips_an_unknown_format() {
    let dir = support::tempdir();
    let store = open(dir.path());
    store
        .save(&SessionSnapshot::new("sess-1", PermissionMode::Default))
        .await
        .unwrap();
    let path = store.paths(&sid("sess-1")).snapshot;
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("mecated-session/1", "mecated-session/7")).unwrap();
    assert!(store.list().await.unwrap().is_empty());
    let warnings = logs::warnings_mentioning(&path.to_string_lossy());
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("newer version"), "{warnings:?}");
}

fn set_old_mtime(path: &std::path::Path) -> SystemTime {
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(old)
        .unwrap();
    old
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_after_save_or_create_changes_no_byte_and_no_mtime() {
    let dir = support::tempdir();
    let store = open(dir.path());
    let path = store.paths(&sid("sess-1")).snapshot;
    store
        .save(&SessionSnapshot::new("sess-1", PermissionMode::Plan))
        .await
        .unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let old = set_old_mtime(&path);
    let error = store
        .create(&SessionSnapshot::new("sess-1", PermissionMode::Default))
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::AlreadyExists { .. }), "{error:?}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), old);

    let created = store.paths(&sid("sess-2")).snapshot;
    store
        .create(&SessionSnapshot::new("sess-2", PermissionMode::Plan))
        .await
        .unwrap();
    let bytes = std::fs::read(&created).unwrap();
    let old = set_old_mtime(&created);
    let error = store
        .create(&SessionSnapshot::new("sess-2", PermissionMode::Default))
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::AlreadyExists { .. }), "{error:?}");
    assert_eq!(std::fs::read(&created).unwrap(), bytes);
    assert_eq!(std::fs::metadata(&created).unwrap().modified().unwrap(), old);
    assert!(
        !entries(&dir.path().join("sid-v1"))
            .iter()
            .any(|n| n.ends_with(".tmp")),
        "no temp file left"
    );
}

/// Two handles on one directory, 100 fresh ids.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_handles_racing_create_have_exactly_one_winner() {
    let dir = support::tempdir();
    let a = Arc::new(open(dir.path()));
    let b = Arc::new(open(dir.path()));
    for round in 0..100 {
        let id = format!("race-{round}");
        let mut first = SessionSnapshot::new(id.as_str(), PermissionMode::Default);
        first.turns = 1;
        let mut second = SessionSnapshot::new(id.as_str(), PermissionMode::Default);
        second.turns = 2;
        let (ra, rb) = tokio::join!(a.create(&first), b.create(&second));
        let winner = match (ra, rb) {
            (Ok(()), Err(StoreError::AlreadyExists { .. })) => first,
            (Err(StoreError::AlreadyExists { .. }), Ok(())) => second,
            other => panic!("round {round}: {other:?}"),
        };
        assert_eq!(a.load(&sid(&id)).await.unwrap(), winner, "round {round}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leftover_temp_file_never_blocks_a_save() {
    let dir = support::tempdir();
    let store = open(dir.path());
    let id = sid("sess-tmp");
    let token = JsonlStore::token(&id);
    let leftover = dir
        .path()
        .join("sid-v1")
        .join(format!(".{token}.session.json.deadbeefdeadbeef.tmp"));
    std::fs::write(&leftover, b"{\"format\":").unwrap();
    store
        .save(&SessionSnapshot::new("sess-tmp", PermissionMode::Default))
        .await
        .unwrap();
    assert!(!leftover.exists(), "Save removes stale temp files of its session");
    assert!(store.load(&id).await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_snapshot_is_refused_before_any_write() {
    let dir = support::tempdir();
    let store = crate::support::open_with(
        dir.path(),
        StoreOptions {
            max_snapshot_bytes: 1024,
            ..StoreOptions::default()
        },
    );
    let mut snapshot = SessionSnapshot::new("sess-big", PermissionMode::Default);
    snapshot.conversation.push(Message::User {
        text: "x".repeat(2000),
    });
    for outcome in [store.save(&snapshot).await, store.create(&snapshot).await] {
        let error = outcome.unwrap_err();
        assert!(
            matches!(error, StoreError::TooLarge { limit: 1024, .. }),
            "{error:?}"
        );
        assert!(error.to_string().contains("\"sess-big\""), "{error}");
    }
    assert!(entries(&dir.path().join("sid-v1")).is_empty());
}
