//! Two processes appending to the same eight sessions at once lose nothing and keep
//! each writer's order within each session.

use std::collections::HashMap;

use engine_ports::EventLog;

use crate::support::child::{self, writer_text};
use crate::support::{TestDb, sid, text_of};

const SESSIONS: usize = 8;
const PER_PROCESS: usize = 1_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_sessions_times_two_thousand_appends_from_two_processes_lose_nothing() {
    let Some(db) = TestDb::new("eight_sessions_times_two_thousand_appends_from_two_processes_lose_nothing")
    else {
        return;
    };
    let store = db.open().await; // the schema exists before the children start
    let url = db.raw_url();
    let sessions = SESSIONS.to_string();
    let appends = PER_PROCESS.to_string();
    let mut children: Vec<_> = ["a", "b"]
        .iter()
        .map(|tag| child::spawn("append-loop", &[&url, tag, &sessions, &appends]))
        .collect();
    for child in &mut children {
        let status = tokio::task::block_in_place(|| child.wait()).unwrap();
        assert!(status.success(), "a writer failed: {status}");
    }
    for session in 0..SESSIONS {
        let events = store.read(&sid(&format!("conc-{session}"))).await.unwrap();
        assert_eq!(
            events.len(),
            2 * PER_PROCESS,
            "session {session}: every append is there once"
        );
        let mut next: HashMap<&str, usize> = HashMap::new();
        for event in &events {
            let text = text_of(event);
            let tag = if text.starts_with("a:") { "a" } else { "b" };
            let n = next.entry(tag).or_default();
            assert_eq!(
                text,
                writer_text(tag, session, *n),
                "session {session}: writer {tag} out of order"
            );
            assert_eq!(event.seq, *n as u64 + 1);
            *n += 1;
        }
        assert_eq!(next.get("a"), Some(&PER_PROCESS));
        assert_eq!(next.get("b"), Some(&PER_PROCESS));
    }
}
