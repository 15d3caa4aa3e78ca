//! The `.events.jsonl` log, torn tails, corrupt lines and
//! lazy readers.

use std::sync::Arc;
use std::time::Duration;

use adapter_jsonlstore::StoreOptions;
use engine_ports::{Event, EventKind, EventLog, StopReason, StoreError, Usage, Verdict};

use crate::support::{self, delta, good_seqs, logs, open, open_with, read_all, runtime, sid, within};

fn line(event: &Event) -> String {
    let mut text = serde_json::to_string(&serde_json::json!({"v": "mecated-events/1", "ev": event})).unwrap();
    text.push('\n');
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_round_trip_reads_back_in_order() {
    let dir = support::tempdir();
    let store = open(dir.path());
    let id = sid("sess-ask");
    let events = vec![
        Event {
            seq: 1,
            time: None,
            kind: EventKind::ToolCall {
                call_id: "c1".into(),
                name: "Shell".into(),
                args: serde_json::json!({"command": "rm -rf build"}),
            },
        },
        Event {
            seq: 2,
            time: None,
            kind: EventKind::PermissionAsk {
                ask_id: "ask-1".into(),
                call_id: "c1".into(),
                name: "Shell".into(),
                args: serde_json::json!({"command": "rm -rf build"}),
                reason: "Shell can change files".into(),
                suggested_rule: None,
            },
        },
        Event {
            seq: 3,
            time: Some("2026-11-30T09:55:35.123456Z".into()),
            kind: EventKind::PermissionVerdict {
                ask_id: "ask-1".into(),
                call_id: "c1".into(),
                verdict: Verdict::AllowAlways,
                saved_rule: None,
                reason: None,
            },
        },
        Event {
            seq: 4,
            time: None,
            kind: EventKind::Result {
                stop: StopReason::EndTurn,
                text: "done".into(),
                usage: Usage::new(3, 4),
                turns: 1,
                tool_calls: 1,
                error: None,
            },
        },
    ];
    for event in &events {
        store.append(&id, event).await.unwrap();
    }
    let text = std::fs::read_to_string(store.paths(&id).events).unwrap();
    assert_eq!(text.lines().count(), 4);
    for l in text.lines() {
        assert!(l.starts_with(r#"{"v":"mecated-events/1","ev":{"#), "{l}");
    }
    assert!(text.contains(r#""verdict":"allow_always""#));
    assert_eq!(store.read(&id).await.unwrap(), events);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_fragment_is_ignored_then_cut_with_one_warning() {
    let dir = support::tempdir();
    let store = open(dir.path());
    let id = sid("sess-torn-13");
    let path = store.paths(&id).events;
    std::fs::write(&path, format!("{}TORN-FRAGMENT", line(&delta(1, "one")))).unwrap();
    assert_eq!(good_seqs(&store, "sess-torn-13"), [1]);
    assert_eq!(
        read_all(&store, "sess-torn-13").len(),
        1,
        "no error for a torn tail"
    );
    store.append(&id, &delta(2, "two")).await.unwrap();
    assert_eq!(good_seqs(&store, "sess-torn-13"), [1, 2]);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("TORN"), "{text}");
    assert_eq!(
        text,
        format!("{}{}", line(&delta(1, "one")), line(&delta(2, "two")))
    );
    let warnings = logs::warnings_mentioning("sess-torn-13");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("bytes_cut=13"), "{warnings:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unterminated_tails_are_ignored_and_bad_lines_are_errors_after_the_prefix() {
    let dir = support::tempdir();
    let store = open(dir.path());
    let good = line(&delta(1, "one"));
    let write = |id: &str, text: &str| std::fs::write(store.paths(&sid(id)).events, text).unwrap();

    write("a", &format!("{good}{{\"v\":\"mecated-events/1\",\"ev\":{{"));
    assert_eq!(good_seqs(&store, "a"), [1]);
    assert_eq!(read_all(&store, "a").len(), 1);

    write("b", "{\"v\":\"mecated-events/1\",\"ev\":{\"seq\":1");
    assert!(read_all(&store, "b").is_empty());
    assert!(store.read(&sid("b")).await.unwrap().is_empty());

    write("c", &format!("{good}{{not-json\n{good}"));
    let items = read_all(&store, "c");
    assert_eq!(items.len(), 2, "the error ends the stream: {items:?}");
    assert_eq!(items[0].as_ref().unwrap().seq, 1);
    let message = items[1].as_ref().unwrap_err();
    assert!(message.contains("line 2"), "{message}");
    assert!(message.contains("\"c\""), "{message}");
    assert!(
        message.contains(&format!("byte offset {}", good.len())),
        "{message}"
    );
    match store.read(&sid("c")).await.unwrap_err() {
        StoreError::Corrupt { line, prefix, .. } => {
            assert_eq!(line, Some(2));
            assert_eq!(prefix, [delta(1, "one")]);
        }
        other => panic!("{other:?}"),
    }

    for blank in ["\n", "   \n", "\t \r\n"] {
        write("d", &format!("{good}{blank}"));
        let items = read_all(&store, "d");
        assert_eq!(items.len(), 2, "{blank:?}: {items:?}");
        assert!(items[0].is_ok() && items[1].is_err(), "{blank:?}: {items:?}");
    }

    write(
        "e",
        &format!("{good}{{\"v\":\"mecated-events/999\",\"ev\":{{\"from\":\"the future\"}}}}\n"),
    );
    let items = read_all(&store, "e");
    assert_eq!(items.len(), 2);
    let message = items[1].as_ref().unwrap_err();
    assert!(message.contains("mecated-events/999"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_messages_never_quote_record_contents() {
    let dir = support::tempdir();
    let store = open(dir.path());
    std::fs::write(
        store.paths(&sid("s")).events,
        "{\"v\":\"mecated-events/1\",\"ev\":{\"seq\":\"SECRET-CONTENT\",\"type\":\"message.delta\"}}\n",
    )
    .unwrap();
    let error = store.read(&sid("s")).await.unwrap_err().to_string();
    assert!(!error.contains("SECRET"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_over_the_record_limit_are_errors_and_appends_over_it_are_refused() {
    let dir = support::tempdir();
    let store = open_with(
        dir.path(),
        StoreOptions {
            max_record_bytes: 1024,
            ..StoreOptions::default()
        },
    );
    let id = sid("sess-limit");
    store.append(&id, &delta(1, "small")).await.unwrap();
    let error = store.append(&id, &delta(2, "x".repeat(2000))).await.unwrap_err();
    assert!(
        matches!(error, StoreError::TooLarge { limit: 1024, .. }),
        "{error:?}"
    );
    let path = store.paths(&id).events;
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&line(&delta(2, "y".repeat(2000))));
    text.push_str(&line(&delta(3, "after")));
    std::fs::write(&path, text).unwrap();
    let items = read_all(&store, "sess-limit");
    assert_eq!(items.len(), 2);
    assert!(
        items[1].as_ref().unwrap_err().contains("longer than 1024 bytes"),
        "{items:?}"
    );
    // An unterminated tail longer than the limit is still only a torn write.
    let mut text = line(&delta(1, "small"));
    text.push_str(&"z".repeat(5000));
    std::fs::write(&path, text).unwrap();
    assert_eq!(read_all(&store, "sess-limit").len(), 1);
    store.append(&id, &delta(2, "two")).await.unwrap();
    assert_eq!(good_seqs(&store, "sess-limit"), [1, 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_of_missing_or_invalid_ids() {
    let dir = support::tempdir();
    let store = open(dir.path());
    assert!(read_all(&store, "nobody").is_empty());
    assert!(matches!(
        store.read_events(&sid("")),
        Err(StoreError::InvalidId { .. })
    ));
    assert!(matches!(
        store.append(&sid(""), &delta(1, "x")).await,
        Err(StoreError::InvalidId { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_stops_early_sees_a_longer_prefix_later() {
    let dir = support::tempdir();
    let store = open(dir.path());
    let id = sid("sess-15");
    for seq in 1..=5 {
        store.append(&id, &delta(seq, "x")).await.unwrap();
    }
    let first: Vec<u64> = store
        .read_events(&id)
        .unwrap()
        .take(1)
        .map(|e| e.unwrap().seq)
        .collect();
    assert_eq!(first, [1]);
    store.append(&id, &delta(6, "y")).await.unwrap();
    assert_eq!(good_seqs(&store, "sess-15"), [1, 2, 3, 4, 5, 6]);
    assert_eq!(read_all(&store, "sess-15").len(), 6);
}

#[test]
fn a_paused_reader_never_blocks_appends() {
    let dir = support::tempdir();
    let store = Arc::new(open(dir.path()));
    let id = sid("sess-22");
    let rt = runtime();
    for seq in 1..=3 {
        rt.block_on(store.append(&id, &delta(seq, "before"))).unwrap();
    }
    let mut reader = store.read_events(&id).unwrap();
    assert_eq!(reader.next().unwrap().unwrap().seq, 1);
    // Paused here; 1,000 appends on another thread must all complete.
    let writer = Arc::clone(&store);
    let appended = within(Duration::from_secs(60), move || {
        let rt = runtime();
        let id = sid("sess-22");
        for seq in 4..=1003 {
            rt.block_on(writer.append(&id, &delta(seq, "while paused")))
                .unwrap();
        }
        1000
    });
    assert_eq!(appended, 1000);
    let rest: Vec<u64> = reader.map(|e| e.unwrap().seq).collect();
    assert_eq!(
        rest,
        [2, 3],
        "the paused reader sees the prefix committed when it started"
    );
    assert_eq!(good_seqs(&store, "sess-22").len(), 1003);
}

/// A paused reader reads only the committed window `[0, C)`: a torn fragment
/// beyond C that an appender later cuts and overwrites never reaches it, even when
/// the reader had already buffered the fragment's first bytes (the fragment here
/// straddles the reader's 64 KiB buffer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_reader_never_sees_a_fragment_that_is_cut_later() {
    let dir = support::tempdir();
    let store = open(dir.path());
    let id = sid("sess-window");
    let committed: Vec<Event> = (1..=100).map(|seq| delta(seq, "c".repeat(560))).collect();
    let mut bytes: String = committed.iter().map(line).collect();
    assert!(
        bytes.len() < 64 * 1024 && bytes.len() > 56 * 1024,
        "{}",
        bytes.len()
    );
    bytes.push_str(&"T".repeat(16 * 1024));
    std::fs::write(store.paths(&id).events, bytes).unwrap();

    let mut reader = store.read_events(&id).unwrap();
    assert_eq!(reader.next().unwrap().unwrap().seq, 1);
    for seq in 101..=200 {
        store.append(&id, &delta(seq, "n".repeat(40))).await.unwrap();
    }
    let rest: Vec<Event> = reader.map(Result::unwrap).collect();
    assert!(
        rest == committed[1..],
        "the reader saw bytes outside its committed window"
    );
    assert_eq!(good_seqs(&store, "sess-window").len(), 200);
}
