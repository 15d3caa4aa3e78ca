//! Property: whatever bytes a crash leaves as a torn tail, a later read never
//! returns garbage, and the next append repairs the file.

use engine_ports::{Event, EventLog};
use proptest::prelude::*;

use crate::support::{self, delta, open_with, runtime, sid};

fn line(event: &Event) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(&serde_json::json!({"v": "mecated-events/1", "ev": event})).unwrap();
    bytes.push(b'\n');
    bytes
}

fn good_events(n: usize) -> Vec<Event> {
    (1..=n as u64)
        .map(|seq| delta(seq, format!("event {seq} ü")))
        .collect()
}

/// Writes `good` committed lines followed by `tail`, then checks the reads and the
/// repairing append.
fn check_torn_tail(good: usize, tail: &[u8]) {
    let dir = support::tempdir();
    let store = open_with(dir.path(), support::never());
    let id = sid("prop");
    let events = good_events(good);
    let mut bytes: Vec<u8> = events.iter().flat_map(line).collect();
    bytes.extend_from_slice(tail);
    std::fs::write(store.paths(&id).events, &bytes).unwrap();

    let items: Vec<_> = store.read_events(&id).unwrap().collect();
    let read: Vec<Event> = items.iter().map_while(|i| i.as_ref().ok().cloned()).collect();
    assert_eq!(read, events, "exactly the committed prefix");
    assert_eq!(items.len(), events.len(), "a newline-free tail is never an error");

    let next = delta(good as u64 + 1, "after the crash");
    runtime().block_on(store.append(&id, &next)).unwrap();
    let mut expected = events;
    expected.push(next);
    assert_eq!(runtime().block_on(store.read(&id)).unwrap(), expected);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn newline_free_torn_tails_are_ignored_then_cut(
        good in 0usize..4,
        tail in proptest::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 1..300),
    ) {
        check_torn_tail(good, &tail);
    }

    #[test]
    fn any_prefix_of_a_real_record_is_ignored_then_cut(good in 0usize..4, cut in 1usize..10_000) {
        let record = line(&delta(99, "x".repeat(300) + "\u{e9}\u{1f980}\"\\"));
        let cut = cut % (record.len() - 1) + 1;
        check_torn_tail(good, &record[..cut]);
    }

    #[test]
    fn arbitrary_trailing_bytes_give_the_good_prefix_then_at_most_an_error(
        good in 0usize..4,
        tail in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let dir = support::tempdir();
        let store = open_with(dir.path(), support::never());
        let id = sid("prop-any");
        let events = good_events(good);
        let mut bytes: Vec<u8> = events.iter().flat_map(line).collect();
        bytes.extend_from_slice(&tail);
        std::fs::write(store.paths(&id).events, &bytes).unwrap();
        let items: Vec<_> = store.read_events(&id).unwrap().collect();
        let ok: Vec<Event> = items.iter().take(good).map(|i| i.as_ref().unwrap().clone()).collect();
        prop_assert_eq!(ok, events);
        let rest = &items[good..];
        prop_assert!(rest.len() <= 1, "at most one error after the prefix: {:?}", rest);
        prop_assert!(rest.iter().all(Result::is_err), "no garbage event: {:?}", rest);
        match runtime().block_on(store.read(&id)) {
            Ok(all) => prop_assert_eq!(all.len(), good),
            Err(engine_ports::StoreError::Corrupt { prefix, .. }) => prop_assert_eq!(prefix.len(), good),
            Err(other) => prop_assert!(false, "unexpected error {other}"),
        }
    }
}
