//! What Load adds to the port contract here: a session's numbering continues after
//! events a run logged past its last save (a replica that crashed mid-run), so two
//! replicas' events of one session keep one increasing `seq`.

use engine_ports::{EventLog, PermissionMode, SessionSnapshot, SessionStore};

use crate::support::{TestDb, delta, sid};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_continues_the_numbering_after_events_logged_past_the_last_save() {
    let Some(db) = TestDb::new("load_continues_the_numbering_after_events_logged_past_the_last_save") else {
        return;
    };
    let (a, b) = (db.open().await, db.open().await);
    let mut saved = SessionSnapshot::new("crashed", PermissionMode::Default);
    saved.next_seq = 5;
    a.save(&saved).await.unwrap();
    assert_eq!(
        b.load(&sid("crashed")).await.unwrap().next_seq,
        5,
        "nothing logged yet"
    );
    for seq in 5..=9 {
        a.append(&sid("crashed"), &delta(seq, "a run that never saved again"))
            .await
            .unwrap();
    }
    let loaded = b.load(&sid("crashed")).await.unwrap();
    assert_eq!(loaded.next_seq, 10);
    assert_eq!(
        SessionSnapshot {
            next_seq: 5,
            ..loaded
        },
        saved,
        "everything else as saved"
    );
    // A snapshot ahead of its log keeps its own number.
    saved.next_seq = 42;
    a.save(&saved).await.unwrap();
    assert_eq!(b.load(&sid("crashed")).await.unwrap().next_seq, 42);
}
