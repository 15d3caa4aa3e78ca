//! Crash tests: SIGKILL of a child in the middle of append loops (60 kills) and of
//! Save loops. Kill timing is randomized on purpose.

use std::io::Write;
use std::time::Duration;

use engine_ports::{EventLog, SessionStore};

use crate::support::child::{self, crash_event, version_snapshot};
use crate::support::{self, open, sid};

fn random_pause(max_millis: u64) {
    std::thread::sleep(Duration::from_micros(fastrand::u64(0..max_millis * 1000)));
}

/// The line the store writes for `event`.
fn line(event: &engine_ports::Event) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(&serde_json::json!({"v": "mecated-events/1", "ev": event})).unwrap();
    bytes.push(b'\n');
    bytes
}

/// After every kill a read returns exactly a prefix of what was appended, with no
/// corrupt record, and the next append succeeds and is readable.
///
/// A SIGKILL lands between system calls far more often than inside a page-cache
/// copy, so on its own it rarely tears a record. Every third round therefore starts
/// from a planted torn write (a prefix of a real record), which the killed child's
/// first append must cut, or the parent's append after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_appends_leaves_a_readable_prefix() {
    let dir = support::tempdir();
    let root = dir.path().to_string_lossy().into_owned();
    let store = open(dir.path());
    let mut committed = 0u64;
    for round in 0..60u64 {
        // A fresh log every 6 rounds keeps the read-back work bounded.
        let name = format!("crash/append-{}", round / 6);
        let id = sid(&name);
        if round % 6 == 0 {
            committed = 0;
        }
        if round % 3 == 2 {
            let torn = line(&crash_event(committed + 1));
            let cut = fastrand::usize(1..torn.len());
            let mut file = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(store.paths(&id).events)
                .unwrap();
            file.write_all(&torn[..cut]).unwrap();
        }
        let start = committed + 1;
        let mut appender = child::spawn("append-loop", &[&root, &name, &start.to_string()]);
        appender.wait_ready();
        random_pause(20);
        appender.kill();

        let events: Vec<_> = store
            .read_events(&id)
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap_or_else(|e| panic!("round {round}: corrupt record after a kill: {e}"));
        assert!(
            events.len() as u64 >= committed,
            "round {round}: records were lost"
        );
        for (i, event) in events.iter().enumerate() {
            assert!(
                *event == crash_event(i as u64 + 1),
                "round {round}: record {} is not what was appended",
                i + 1
            );
        }
        committed = events.len() as u64;

        // The next append succeeds (cutting any torn tail) and is readable.
        let next = crash_event(committed + 1);
        store.append(&id, &next).await.unwrap();
        let after = store.read(&id).await.unwrap();
        assert_eq!(after.len() as u64, committed + 1, "round {round}");
        assert!(after.last() == Some(&next), "round {round}");
        let expected: Vec<u8> = after.iter().flat_map(line).collect();
        assert!(
            std::fs::read(store.paths(&id).events).unwrap() == expected,
            "round {round}: the file holds exactly the committed records"
        );
        committed += 1;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_saves_leaves_one_of_the_saved_versions() {
    let dir = support::tempdir();
    let root = dir.path().to_string_lossy().into_owned();
    let store = open(dir.path());
    let id = "crash/save";
    store.save(&version_snapshot(id, 0)).await.unwrap();
    let mut last_seen = 0u64;
    for round in 0..40u64 {
        let start = 1 + round * 1000;
        let mut saver = child::spawn("save-loop", &[&root, id, &start.to_string()]);
        saver.wait_ready();
        random_pause(60);
        saver.kill();

        let loaded = store
            .load(&sid(id))
            .await
            .unwrap_or_else(|e| panic!("round {round}: Load failed after a kill: {e}"));
        let version = loaded.turns;
        assert!(
            version == last_seen || (start..start + 1000).contains(&version),
            "round {round}: version {version} was never saved in this window"
        );
        assert!(
            loaded == version_snapshot(id, version),
            "round {round}: a mix of versions"
        );
        last_seen = version;
        let listed: Vec<_> = store.list().await.unwrap().into_iter().map(|l| l.id).collect();
        assert_eq!(listed, [sid(id)], "round {round}");
    }
    // A leftover temp file never makes the session unwritable.
    store.save(&version_snapshot(id, 99_999)).await.unwrap();
    assert_eq!(store.load(&sid(id)).await.unwrap().turns, 99_999);
    let leftovers = support::entries(&dir.path().join("sid-v1"))
        .into_iter()
        .filter(|n| n.ends_with(".tmp"))
        .count();
    assert_eq!(leftovers, 0, "Save removed stale temp files");
}
