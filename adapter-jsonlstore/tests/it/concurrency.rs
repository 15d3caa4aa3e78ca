//! Loss-free concurrency: 8 sessions × 10,000 appends from 2 processes × 4 threads
//! (SyncPolicy::Never); every writer hits every session, so each session's lock is
//! contended across processes and threads.

use std::collections::HashMap;

use crate::support::child::{self, writer_event, writer_session};
use crate::support::{self, open_with, sid};

const SESSIONS: u64 = 8;
const PROCESSES: u64 = 2;
const THREADS: u64 = 4;
/// Appends of one writer to one session: 8 writers × 1,250 = 10,000 per session.
const PER_SESSION: u64 = 1_250;

#[test]
fn eight_sessions_times_ten_thousand_appends_from_two_processes_lose_nothing() {
    let dir = support::tempdir();
    let root = dir.path().to_string_lossy().into_owned();
    let children: Vec<_> = (0..PROCESSES)
        .map(|p| {
            child::spawn(
                "writer",
                &[
                    &root,
                    &(p * THREADS).to_string(),
                    &THREADS.to_string(),
                    &PER_SESSION.to_string(),
                    &SESSIONS.to_string(),
                ],
            )
        })
        .collect();
    for c in children {
        c.wait_success();
    }
    let store = open_with(dir.path(), support::never());
    let mut total = 0;
    for s in 0..SESSIONS {
        let id = writer_session(s);
        let events = store
            .read_events(&sid(&id))
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap_or_else(|e| panic!("{id}: {e}"));
        assert_eq!(events.len() as u64, PROCESSES * THREADS * PER_SESSION, "{id}");
        let mut next_k: HashMap<u64, u64> = HashMap::new();
        for event in &events {
            let w = event.seq / 1_000_000;
            let k = next_k.entry(w).or_insert(0);
            assert!(
                *event == writer_event(w, s, *k),
                "{id}: writer {w} record {k} out of order"
            );
            *k += 1;
        }
        assert_eq!(
            next_k.len() as u64,
            PROCESSES * THREADS,
            "{id}: every writer appended"
        );
        assert!(next_k.values().all(|&k| k == PER_SESSION), "{id}: {next_k:?}");
        total += events.len();
    }
    assert_eq!(total, 80_000);
}
