//! Session ids are opaque text: odd ids round-trip exactly through every operation,
//! list in byte order, and SQL-looking ids are only data (every value is bound).

use std::time::Duration;

use engine_ports::{
    EventLog, PermissionMode, SessionSnapshot, SessionStore, StoreError, ToolCall, ToolCallRecorder,
    ToolResult,
};

use crate::support::{TestDb, delta, sid};

const ODD_IDS: &[&str] = &[
    "team-abc/lead",
    "../escape/../x",
    "..",
    "/",
    "with space and tab\t",
    "ünïcødé 🦀 セッション",
    "quote's \"double\" \\back",
    "x'); DROP TABLE mecated_sessions; --",
    "%s $1 ? :name",
    "line\nbreak",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_session_ids_round_trip_through_every_operation() {
    let Some(db) = TestDb::new("odd_session_ids_round_trip_through_every_operation") else {
        return;
    };
    let store = db.open().await;
    for (i, id) in ODD_IDS.iter().enumerate() {
        let mut snapshot = SessionSnapshot::new(*id, PermissionMode::Plan);
        snapshot.turns = i as u64;
        store.create(&snapshot).await.unwrap();
        store.append(&sid(id), &delta(1, *id)).await.unwrap();
        let call = ToolCall::new("c1", "Read", "{}");
        store
            .record(
                &engine_ports::ToolCallRecord::new(
                    &sid(id),
                    &call,
                    &ToolResult::text("c1", *id),
                    Duration::ZERO,
                    Duration::ZERO,
                    std::time::SystemTime::now(),
                )
                .with_approval(engine_ports::Approval::POLICY_ALLOW),
            )
            .await
            .unwrap();
        let lease = store.acquire_run(&sid(id)).await.unwrap();
        assert_eq!(lease.session().as_str(), *id);
        drop(lease);
    }
    for (i, id) in ODD_IDS.iter().enumerate() {
        let loaded = store.load(&sid(id)).await.unwrap();
        assert_eq!(loaded.id.as_str(), *id);
        assert_eq!(loaded.turns, i as u64, "{id:?}");
        let events = store.read(&sid(id)).await.unwrap();
        assert_eq!(events, [delta(1, *id)], "{id:?}");
        let records = store.read_tool_calls(&sid(id)).await.unwrap();
        assert_eq!(records.len(), 1, "{id:?}");
        assert_eq!(records[0].session_id.as_str(), *id);
        assert_eq!(records[0].result, *id);
    }
    let listed: Vec<String> = store
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|l| l.id.to_string())
        .collect();
    let mut expected: Vec<String> = ODD_IDS.iter().map(|s| (*s).to_owned()).collect();
    expected.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    assert_eq!(listed, expected, "exact ids, in byte order");
    // The tables are all there and hold exactly what was written.
    assert_eq!(
        db.cluster.psql(&db.name, "SELECT count(*) FROM mecated_sessions"),
        ODD_IDS.len().to_string()
    );
    for id in ODD_IDS {
        store.delete(&sid(id)).await.unwrap();
    }
    assert!(store.list().await.unwrap().is_empty());
    assert_eq!(
        db.cluster.psql(&db.name, "SELECT count(*) FROM mecated_events"),
        "0"
    );
    assert_eq!(
        db.cluster
            .psql(&db.name, "SELECT count(*) FROM mecated_tool_calls"),
        "0"
    );
    assert_eq!(
        db.cluster
            .psql(&db.name, "SELECT count(*) FROM mecated_run_leases"),
        "0"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_up_to_the_cap_round_trip_and_longer_ones_are_invalid() {
    let Some(db) = TestDb::new("ids_up_to_the_cap_round_trip_and_longer_ones_are_invalid") else {
        return;
    };
    let store = db.open().await;
    let longest = format!("é{}", "/".repeat(adapter_pgstore::MAX_ID_BYTES - 2));
    assert_eq!(longest.len(), adapter_pgstore::MAX_ID_BYTES);
    store
        .save(&SessionSnapshot::new(longest.as_str(), PermissionMode::Default))
        .await
        .unwrap();
    assert_eq!(store.load(&sid(&longest)).await.unwrap().id.as_str(), longest);
    store.acquire_run(&sid(&longest)).await.unwrap().release().await;
    let too_long = format!("{longest}x");
    match store
        .save(&SessionSnapshot::new(too_long.as_str(), PermissionMode::Default))
        .await
    {
        Err(StoreError::InvalidId { reason }) => {
            assert_eq!(
                reason,
                "the session id is 2049 bytes long; this store holds ids of at most 2048 bytes"
            );
        }
        other => panic!("expected InvalidId, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_with_a_nul_character_is_an_invalid_id() {
    let Some(db) = TestDb::new("an_id_with_a_nul_character_is_an_invalid_id") else {
        return;
    };
    let store = db.open().await;
    let id = sid("nul\0inside");
    let outcomes = [
        (
            "save",
            store
                .save(&SessionSnapshot::new(id.clone(), PermissionMode::Default))
                .await
                .err(),
        ),
        ("load", store.load(&id).await.err()),
        ("append", store.append(&id, &delta(1, "x")).await.err()),
        ("acquire_run", store.acquire_run(&id).await.err()),
    ];
    for (op, outcome) in outcomes {
        match outcome {
            Some(StoreError::InvalidId { reason }) => assert!(reason.contains("NUL"), "{op}: {reason}"),
            other => panic!("{op}: expected InvalidId, got {other:?}"),
        }
    }
}
