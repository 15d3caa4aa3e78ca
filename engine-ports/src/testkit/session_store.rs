//! Conformance suite for [`SessionStore`] implementations.

use std::collections::BTreeSet;
use std::sync::Arc;

use futures::future::join_all;

use crate::call::ToolCall;
use crate::content::ContentPart;
use crate::ids::SessionId;
use crate::llm::Message;
use crate::mode::PermissionMode;
use crate::result::ToolResult;
use crate::store::{ReportedContext, RunLease, SessionSnapshot, SessionStore, StoreError};
use crate::usage::Usage;

/// Runs every session-store case, each against a fresh, empty store from `make`.
///
/// The suite tests the port contract only (never file names or modes). Run it from
/// a multi-threaded tokio runtime.
///
/// # Panics
/// When a case fails; the message names the case (`session_store::<case>`).
pub async fn run(make: impl Fn() -> Arc<dyn SessionStore>) {
    round_trip_after_a_turn(make()).await;
    compacted_session_round_trips(make()).await;
    invalid_argument_text_round_trips(make()).await;
    image_part_round_trips(make()).await;
    long_ids_round_trip(make()).await;
    long_ids_differing_at_the_end_stay_separate(make()).await;
    ids_are_isolated(make()).await;
    last_save_wins(make()).await;
    mutating_after_save_changes_nothing(make()).await;
    not_found_names_the_id(make()).await;
    list_of_an_empty_store_is_empty(make()).await;
    list_returns_exact_ids(make()).await;
    a_listing_carries_the_saved_mode_and_counters(make()).await;
    delete_is_idempotent(make()).await;
    create_collision_leaves_the_winner(make()).await;
    racing_creates_have_one_winner(make()).await;
    empty_id_is_invalid(make()).await;
    a_held_lease_refuses_a_second_until_dropped(make()).await;
    leases_of_other_sessions_are_independent(make()).await;
    racing_acquires_have_one_winner(make()).await;
    a_released_lease_is_free_at_once(make()).await;
    a_lease_holder_creates_saves_and_loads(make()).await;
    delete_of_a_leased_session_is_refused(make()).await;
    a_reachable_store_answers_the_probe(make()).await;
}

/// The readiness probe of a working store succeeds, empty or not, lease held or not.
async fn a_reachable_store_answers_the_probe(store: Arc<dyn SessionStore>) {
    const CASE: &str = "session_store::a_reachable_store_answers_the_probe";
    store
        .probe()
        .await
        .unwrap_or_else(|e| panic!("{CASE}: empty store: {e}"));
    store
        .create(&SessionSnapshot::new("probe-s", PermissionMode::Default))
        .await
        .unwrap_or_else(|e| panic!("{CASE}: create: {e}"));
    let lease = store
        .acquire_run(&SessionId::from("probe-s"))
        .await
        .unwrap_or_else(|e| panic!("{CASE}: acquire_run: {e}"));
    store
        .probe()
        .await
        .unwrap_or_else(|e| panic!("{CASE}: while leased: {e}"));
    lease.release().await;
}

/// A session after one turn: a user message, an assistant message calling `Grep`,
/// its result, plan mode, hydrated names, counters and usage.
pub fn session_after_a_turn(id: &str) -> SessionSnapshot {
    let mut snapshot = SessionSnapshot::new(id, PermissionMode::Plan);
    snapshot.conversation = vec![
        Message::User {
            text: "find the TODOs".into(),
        },
        Message::Assistant {
            text: "let me look".into(),
            tool_calls: vec![ToolCall::new(
                "call-1",
                "Grep",
                r#"{"pattern":"TODO","path":"src","z":1.50}"#,
            )],
        },
        Message::Tool {
            result: ToolResult::text("call-1", "src/lib.rs:3: // TODO: ünïcode \"quoted\"\nline 2"),
        },
        Message::Assistant {
            text: "one TODO".into(),
            tool_calls: Vec::new(),
        },
    ]
    .into();
    snapshot.hydrated = BTreeSet::from(["mcp__a__b".to_owned(), "mcp__srv__search".to_owned()]);
    snapshot.next_seq = 42;
    snapshot.turns = 2;
    snapshot.tool_calls = 1;
    snapshot.usage = Usage::new(1234, 567);
    snapshot
}

async fn save_ok(store: &dyn SessionStore, snapshot: &SessionSnapshot, case: &str) {
    if let Err(error) = store.save(snapshot).await {
        panic!("session_store::{case}: save of {:?} failed: {error}", snapshot.id);
    }
}

async fn load_ok(store: &dyn SessionStore, id: &str, case: &str) -> SessionSnapshot {
    match store.load(&SessionId::from(id)).await {
        Ok(snapshot) => snapshot,
        Err(error) => panic!("session_store::{case}: load of {id:?} failed: {error}"),
    }
}

async fn list_ids(store: &dyn SessionStore, case: &str) -> Vec<String> {
    match store.list().await {
        Ok(listings) => listings.into_iter().map(|l| l.id.to_string()).collect(),
        Err(error) => panic!("session_store::{case}: list failed: {error}"),
    }
}

async fn round_trip_after_a_turn(store: Arc<dyn SessionStore>) {
    let case = "round_trip_after_a_turn";
    let snapshot = session_after_a_turn("sess-1");
    save_ok(store.as_ref(), &snapshot, case).await;
    assert_eq!(
        load_ok(store.as_ref(), "sess-1", case).await,
        snapshot,
        "session_store::{case}"
    );
}

/// A compacted session: a summary first, cache counts in the usage, usage per model,
/// a chosen model, and the provider's last count.
pub fn compacted_session(id: &str) -> SessionSnapshot {
    let mut snapshot = session_after_a_turn(id);
    snapshot.conversation.insert(
        0,
        Message::Summary {
            text: "earlier: the user asked for TODOs in src/".into(),
            replaced_turns: 7,
        },
    );
    snapshot.usage = Usage::new(1234, 567).with_cache(1000, 200);
    snapshot
        .model_usage
        .insert("model-a".into(), Usage::new(1000, 500).with_cache(1000, 200));
    snapshot.model_usage.insert("model-b".into(), Usage::new(234, 67));
    snapshot.model = Some("model-b".into());
    snapshot.system_prompt = Some("you are a test".into());
    snapshot.context = Some(ReportedContext {
        tokens: 3210,
        messages: 5,
    });
    snapshot
}

async fn compacted_session_round_trips(store: Arc<dyn SessionStore>) {
    let case = "compacted_session_round_trips";
    let snapshot = compacted_session("sess-compacted");
    save_ok(store.as_ref(), &snapshot, case).await;
    assert_eq!(
        load_ok(store.as_ref(), "sess-compacted", case).await,
        snapshot,
        "session_store::{case}"
    );
}

async fn invalid_argument_text_round_trips(store: Arc<dyn SessionStore>) {
    let case = "invalid_argument_text_round_trips";
    let texts = [
        r#"{"p":"#,
        "{not json",
        "",
        "  \n\t",
        "{\n  \"pretty\": true\n}",
        "\u{0}\u{7f}é",
    ];
    let mut snapshot = SessionSnapshot::new("sess-args", PermissionMode::Default);
    snapshot.conversation = vec![Message::Assistant {
        text: String::new(),
        tool_calls: texts
            .iter()
            .enumerate()
            .map(|(i, text)| ToolCall::new(format!("c{i}"), "Edit", *text))
            .collect(),
    }]
    .into();
    save_ok(store.as_ref(), &snapshot, case).await;
    let loaded = load_ok(store.as_ref(), "sess-args", case).await;
    let Some(Message::Assistant { tool_calls, .. }) = loaded.conversation.first() else {
        panic!("session_store::{case}: the assistant message is gone");
    };
    let loaded_texts: Vec<&str> = tool_calls.iter().map(ToolCall::args).collect();
    assert_eq!(
        loaded_texts, texts,
        "session_store::{case}: argument text byte for byte"
    );
    assert_eq!(loaded, snapshot, "session_store::{case}");
}

async fn image_part_round_trips(store: Arc<dyn SessionStore>) {
    let case = "image_part_round_trips";
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let data: Vec<u8> = (0..5 * 1024 * 1024)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect();
    let part = ContentPart::Image {
        mime: "image/png; charset=binary".into(),
        data: data.clone(),
    };
    let result = match ToolResult::with_parts("call-img", "a 5 MiB image", vec![part]) {
        Ok(result) => result,
        Err(error) => panic!("session_store::{case}: building the result failed: {error}"),
    };
    let mut snapshot = SessionSnapshot::new("sess-image", PermissionMode::Default);
    snapshot.conversation = vec![Message::Tool { result }].into();
    save_ok(store.as_ref(), &snapshot, case).await;
    let loaded = load_ok(store.as_ref(), "sess-image", case).await;
    let Some(Message::Tool { result }) = loaded.conversation.first() else {
        panic!("session_store::{case}: the tool message is gone");
    };
    match result.parts() {
        [ContentPart::Image { data: back, .. }] => {
            assert!(back == &data, "session_store::{case}: image bytes differ");
        }
        other => panic!(
            "session_store::{case}: unexpected parts ({} of them)",
            other.len()
        ),
    }
    assert!(loaded == snapshot, "session_store::{case}: snapshots differ");
}

/// An id of exactly `bytes` UTF-8 bytes with path-hostile characters.
fn id_of_len(bytes: usize, last: char) -> String {
    let mut id = String::from("long/../é ");
    while id.len() + last.len_utf8() < bytes {
        id.push(if id.len() % 7 == 0 { '/' } else { 'x' });
    }
    id.push(last);
    assert_eq!(id.len(), bytes, "id_of_len");
    id
}

async fn long_ids_round_trip(store: Arc<dyn SessionStore>) {
    let case = "long_ids_round_trip";
    let ids: Vec<String> = [175, 176, 241, 1024].iter().map(|&n| id_of_len(n, 'z')).collect();
    for id in &ids {
        let mut snapshot = session_after_a_turn(id);
        snapshot.turns = id.len() as u64;
        save_ok(store.as_ref(), &snapshot, case).await;
    }
    for id in &ids {
        let loaded = load_ok(store.as_ref(), id, case).await;
        assert_eq!(
            &loaded.id,
            id.as_str(),
            "session_store::{case}: id of {} bytes",
            id.len()
        );
        assert_eq!(
            loaded.turns,
            id.len() as u64,
            "session_store::{case}: {} bytes",
            id.len()
        );
    }
    let mut expected = ids.clone();
    expected.sort();
    assert_eq!(
        list_ids(store.as_ref(), case).await,
        expected,
        "session_store::{case}: list"
    );
}

async fn long_ids_differing_at_the_end_stay_separate(store: Arc<dyn SessionStore>) {
    let case = "long_ids_differing_at_the_end_stay_separate";
    let a = id_of_len(1024, 'a');
    let b = id_of_len(1024, 'b');
    let mut first = SessionSnapshot::new(a.as_str(), PermissionMode::Default);
    first.turns = 1;
    let mut second = SessionSnapshot::new(b.as_str(), PermissionMode::Plan);
    second.turns = 2;
    save_ok(store.as_ref(), &first, case).await;
    save_ok(store.as_ref(), &second, case).await;
    assert_eq!(
        load_ok(store.as_ref(), &a, case).await,
        first,
        "session_store::{case}: first"
    );
    assert_eq!(
        load_ok(store.as_ref(), &b, case).await,
        second,
        "session_store::{case}: second"
    );
    assert_eq!(
        list_ids(store.as_ref(), case).await.len(),
        2,
        "session_store::{case}: list"
    );
}

async fn ids_are_isolated(store: Arc<dyn SessionStore>) {
    let case = "ids_are_isolated";
    let lead = session_after_a_turn("team-abc/lead");
    let mut other = SessionSnapshot::new("team-abc_lead", PermissionMode::AcceptEdits);
    other.next_seq = 7;
    save_ok(store.as_ref(), &lead, case).await;
    save_ok(store.as_ref(), &other, case).await;
    assert_eq!(
        load_ok(store.as_ref(), "team-abc/lead", case).await,
        lead,
        "session_store::{case}"
    );
    assert_eq!(
        load_ok(store.as_ref(), "team-abc_lead", case).await,
        other,
        "session_store::{case}"
    );
    let deleted = store.delete(&SessionId::from("team-abc_lead")).await;
    assert!(
        deleted.is_ok(),
        "session_store::{case}: delete failed: {deleted:?}"
    );
    assert_eq!(
        load_ok(store.as_ref(), "team-abc/lead", case).await,
        lead,
        "session_store::{case}: deleting one id left the other"
    );
}

async fn last_save_wins(store: Arc<dyn SessionStore>) {
    let case = "last_save_wins";
    let mut snapshot = SessionSnapshot::new("sess-last", PermissionMode::Default);
    for turn in 1..=5 {
        snapshot.turns = turn;
        snapshot.conversation.push(Message::User {
            text: format!("turn {turn}"),
        });
        save_ok(store.as_ref(), &snapshot, case).await;
    }
    assert_eq!(
        load_ok(store.as_ref(), "sess-last", case).await,
        snapshot,
        "session_store::{case}"
    );
    // A shorter snapshot replaces a longer one entirely.
    let short = SessionSnapshot::new("sess-last", PermissionMode::Plan);
    save_ok(store.as_ref(), &short, case).await;
    assert_eq!(
        load_ok(store.as_ref(), "sess-last", case).await,
        short,
        "session_store::{case}: shorter"
    );
}

async fn mutating_after_save_changes_nothing(store: Arc<dyn SessionStore>) {
    let case = "mutating_after_save_changes_nothing";
    let mut snapshot = session_after_a_turn("sess-mut");
    let saved = snapshot.clone();
    save_ok(store.as_ref(), &snapshot, case).await;
    snapshot.conversation.clear();
    snapshot.hydrated.insert("Other".into());
    snapshot.next_seq = 999;
    assert_eq!(
        load_ok(store.as_ref(), "sess-mut", case).await,
        saved,
        "session_store::{case}"
    );
}

async fn not_found_names_the_id(store: Arc<dyn SessionStore>) {
    let case = "not_found_names_the_id";
    match store.load(&SessionId::from("ghost")).await {
        Err(error @ StoreError::NotFound { .. }) => {
            assert!(error.is_not_found(), "session_store::{case}");
            let text = error.to_string();
            assert!(text.contains("\"ghost\""), "session_store::{case}: {text:?}");
        }
        other => panic!("session_store::{case}: expected NotFound, got {other:?}"),
    }
}

async fn list_of_an_empty_store_is_empty(store: Arc<dyn SessionStore>) {
    let case = "list_of_an_empty_store_is_empty";
    assert!(
        list_ids(store.as_ref(), case).await.is_empty(),
        "session_store::{case}"
    );
}

async fn a_listing_carries_the_saved_mode_and_counters(store: Arc<dyn SessionStore>) {
    let case = "a_listing_carries_the_saved_mode_and_counters";
    let mut snapshot = session_after_a_turn("sess-listed");
    snapshot.mode = PermissionMode::Plan;
    snapshot.turns = 3;
    snapshot.tool_calls = 5;
    save_ok(store.as_ref(), &snapshot, case).await;
    let listed = match store.list().await {
        Ok(listings) => listings.into_iter().find(|l| l.id == snapshot.id),
        Err(error) => panic!("session_store::{case}: list failed: {error}"),
    };
    let Some(listed) = listed else {
        panic!("session_store::{case}: the saved session is not listed");
    };
    assert_eq!(
        (listed.mode, listed.turns, listed.tool_calls),
        (PermissionMode::Plan, 3, 5),
        "session_store::{case}: list"
    );
    match store.listing(&snapshot.id).await {
        Ok(one) => assert_eq!(
            one, listed,
            "session_store::{case}: listing equals the list entry"
        ),
        Err(error) => panic!("session_store::{case}: listing failed: {error}"),
    }
    match store.listing(&SessionId::from("sess-never")).await {
        Err(error) => assert!(error.is_not_found(), "session_store::{case}: {error}"),
        Ok(listing) => panic!("session_store::{case}: an unknown id was listed: {listing:?}"),
    }
}

async fn list_returns_exact_ids(store: Arc<dyn SessionStore>) {
    let case = "list_returns_exact_ids";
    let ids = [
        "team-abc/lead",
        "subagent-7f3a/../researcher #2 ü",
        "parallel-team-abc/lead-0",
    ];
    for id in ids {
        save_ok(
            store.as_ref(),
            &SessionSnapshot::new(id, PermissionMode::Default),
            case,
        )
        .await;
    }
    let first = match store.list().await {
        Ok(listings) => listings,
        Err(error) => panic!("session_store::{case}: list failed: {error}"),
    };
    let mut expected: Vec<&str> = ids.to_vec();
    expected.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    let got: Vec<&str> = first.iter().map(|l| l.id.as_str()).collect();
    assert_eq!(got, expected, "session_store::{case}: exact ids sorted by bytes");
    let second = store.list().await.ok();
    assert_eq!(
        second.as_ref(),
        Some(&first),
        "session_store::{case}: two lists are identical"
    );
    save_ok(
        store.as_ref(),
        &SessionSnapshot::new("team-abc/lead", PermissionMode::Plan),
        case,
    )
    .await;
    let third = store.list().await.ok().unwrap_or_default();
    let modified = |listings: &[crate::store::SessionListing]| {
        listings
            .iter()
            .find(|l| l.id == "team-abc/lead")
            .map(|l| l.modified_at)
    };
    assert!(
        modified(&third) >= modified(&first) && modified(&third).is_some(),
        "session_store::{case}: modified_at went backwards after a save"
    );
}

async fn delete_is_idempotent(store: Arc<dyn SessionStore>) {
    let case = "delete_is_idempotent";
    save_ok(store.as_ref(), &session_after_a_turn("sess-del"), case).await;
    let id = SessionId::from("sess-del");
    for attempt in ["first", "second"] {
        let deleted = store.delete(&id).await;
        assert!(
            deleted.is_ok(),
            "session_store::{case}: {attempt} delete failed: {deleted:?}"
        );
    }
    assert!(
        matches!(store.load(&id).await, Err(StoreError::NotFound { .. })),
        "session_store::{case}: load after delete"
    );
    assert!(
        list_ids(store.as_ref(), case).await.is_empty(),
        "session_store::{case}: list after delete"
    );
    let never = store.delete(&SessionId::from("never-saved")).await;
    assert!(
        never.is_ok(),
        "session_store::{case}: delete of an unknown id: {never:?}"
    );
    // A deleted id can be created again.
    let again = store
        .create(&SessionSnapshot::new("sess-del", PermissionMode::Default))
        .await;
    assert!(
        again.is_ok(),
        "session_store::{case}: create after delete: {again:?}"
    );
}

async fn create_collision_leaves_the_winner(store: Arc<dyn SessionStore>) {
    let case = "create_collision_leaves_the_winner";
    let winner = session_after_a_turn("sess-create");
    let created = store.create(&winner).await;
    assert!(
        created.is_ok(),
        "session_store::{case}: first create: {created:?}"
    );
    let loser = SessionSnapshot::new("sess-create", PermissionMode::AcceptEdits);
    match store.create(&loser).await {
        Err(StoreError::AlreadyExists { id }) => {
            assert_eq!(id, "sess-create", "session_store::{case}: the error names the id");
        }
        other => panic!("session_store::{case}: expected AlreadyExists, got {other:?}"),
    }
    assert_eq!(
        load_ok(store.as_ref(), "sess-create", case).await,
        winner,
        "session_store::{case}"
    );
    // Create after Save collides too.
    save_ok(
        store.as_ref(),
        &SessionSnapshot::new("sess-saved", PermissionMode::Plan),
        case,
    )
    .await;
    assert!(
        matches!(
            store
                .create(&SessionSnapshot::new("sess-saved", PermissionMode::Default))
                .await,
            Err(StoreError::AlreadyExists { .. })
        ),
        "session_store::{case}: create after save"
    );
    assert_eq!(
        load_ok(store.as_ref(), "sess-saved", case).await.mode,
        PermissionMode::Plan,
        "session_store::{case}: the saved session is unchanged"
    );
}

async fn racing_creates_have_one_winner(store: Arc<dyn SessionStore>) {
    let case = "racing_creates_have_one_winner";
    for round in 0..10 {
        let id = format!("race-{round}");
        let contenders: Vec<SessionSnapshot> = (0..8)
            .map(|i| {
                let mut s = SessionSnapshot::new(id.as_str(), PermissionMode::Default);
                s.turns = i;
                s
            })
            .collect();
        let outcomes = join_all(contenders.iter().map(|s| store.create(s))).await;
        let winners: Vec<usize> = outcomes
            .iter()
            .enumerate()
            .filter(|(_, o)| o.is_ok())
            .map(|(i, _)| i)
            .collect();
        assert_eq!(
            winners.len(),
            1,
            "session_store::{case}: round {round}: {outcomes:?}"
        );
        for outcome in &outcomes {
            assert!(
                matches!(outcome, Ok(()) | Err(StoreError::AlreadyExists { .. })),
                "session_store::{case}: round {round}: {outcome:?}"
            );
        }
        let loaded = load_ok(store.as_ref(), &id, case).await;
        assert_eq!(
            loaded, contenders[winners[0]],
            "session_store::{case}: round {round}: the winner is stored"
        );
    }
}

async fn empty_id_is_invalid(store: Arc<dyn SessionStore>) {
    let case = "empty_id_is_invalid";
    let empty = SessionSnapshot::new("", PermissionMode::Default);
    let id = SessionId::from("");
    let outcomes = [
        ("create", store.create(&empty).await.err()),
        ("save", store.save(&empty).await.err()),
        ("load", store.load(&id).await.err()),
        ("delete", store.delete(&id).await.err()),
        ("acquire_run", store.acquire_run(&id).await.err()),
    ];
    for (op, outcome) in outcomes {
        assert!(
            matches!(outcome, Some(StoreError::InvalidId { .. })),
            "session_store::{case}: {op} gave {outcome:?}"
        );
    }
    assert!(
        list_ids(store.as_ref(), case).await.is_empty(),
        "session_store::{case}: nothing stored"
    );
}

async fn acquire_ok(store: &dyn SessionStore, id: &str, case: &str) -> RunLease {
    match store.acquire_run(&SessionId::from(id)).await {
        Ok(lease) => {
            assert_eq!(
                lease.session().as_str(),
                id,
                "session_store::{case}: the lease names its session"
            );
            lease
        }
        Err(error) => panic!("session_store::{case}: acquire_run of {id:?} failed: {error}"),
    }
}

fn assert_busy(outcome: Result<RunLease, StoreError>, id: &str, case: &str) {
    match outcome {
        Err(error @ StoreError::Busy { .. }) => {
            assert!(
                error.to_string().contains(&format!("{id:?}")),
                "session_store::{case}: the refusal names the session: {error}"
            );
            assert!(error.is_busy(), "session_store::{case}");
        }
        other => panic!("session_store::{case}: expected Busy for {id:?}, got {other:?}"),
    }
}

async fn a_held_lease_refuses_a_second_until_dropped(store: Arc<dyn SessionStore>) {
    let case = "a_held_lease_refuses_a_second_until_dropped";
    let id = SessionId::from("sess-lease");
    let lease = acquire_ok(store.as_ref(), "sess-lease", case).await;
    for attempt in ["second", "third"] {
        let outcome = store.acquire_run(&id).await;
        assert!(outcome.is_err(), "session_store::{case}: {attempt} acquire");
        assert_busy(outcome, "sess-lease", case);
    }
    drop(lease);
    let again = acquire_ok(store.as_ref(), "sess-lease", case).await;
    drop(again);
    drop(acquire_ok(store.as_ref(), "sess-lease", case).await);
}

async fn leases_of_other_sessions_are_independent(store: Arc<dyn SessionStore>) {
    let case = "leases_of_other_sessions_are_independent";
    let a = acquire_ok(store.as_ref(), "sess-a", case).await;
    let b = acquire_ok(store.as_ref(), "sess-b", case).await;
    assert_busy(
        store.acquire_run(&SessionId::from("sess-a")).await,
        "sess-a",
        case,
    );
    drop(b);
    assert_busy(
        store.acquire_run(&SessionId::from("sess-a")).await,
        "sess-a",
        case,
    );
    let b = acquire_ok(store.as_ref(), "sess-b", case).await;
    drop(a);
    assert_busy(
        store.acquire_run(&SessionId::from("sess-b")).await,
        "sess-b",
        case,
    );
    drop(b);
}

async fn racing_acquires_have_one_winner(store: Arc<dyn SessionStore>) {
    let case = "racing_acquires_have_one_winner";
    for round in 0..5 {
        let id = SessionId::from(format!("lease-race-{round}"));
        let outcomes = join_all((0..8).map(|_| store.acquire_run(&id))).await;
        let winners = outcomes.iter().filter(|o| o.is_ok()).count();
        assert_eq!(winners, 1, "session_store::{case}: round {round}: {outcomes:?}");
        for outcome in outcomes {
            if outcome.is_err() {
                assert_busy(outcome, id.as_str(), case);
            }
        }
        // Every lease of the round is dropped here: the id is free again.
        drop(acquire_ok(store.as_ref(), id.as_str(), case).await);
    }
}

async fn a_released_lease_is_free_at_once(store: Arc<dyn SessionStore>) {
    let case = "a_released_lease_is_free_at_once";
    for round in 0..3 {
        let lease = acquire_ok(store.as_ref(), "sess-release", case).await;
        assert_busy(
            store.acquire_run(&SessionId::from("sess-release")).await,
            "sess-release",
            case,
        );
        lease.release().await;
        let again = store.acquire_run(&SessionId::from("sess-release")).await;
        assert!(
            again.is_ok(),
            "session_store::{case}: round {round}: acquire after release: {again:?}"
        );
        if let Ok(lease) = again {
            lease.release().await;
        }
    }
}

async fn a_lease_holder_creates_saves_and_loads(store: Arc<dyn SessionStore>) {
    let case = "a_lease_holder_creates_saves_and_loads";
    let lease = acquire_ok(store.as_ref(), "sess-held", case).await;
    let created = store
        .create(&SessionSnapshot::new("sess-held", PermissionMode::Default))
        .await;
    assert!(created.is_ok(), "session_store::{case}: create: {created:?}");
    let snapshot = session_after_a_turn("sess-held");
    save_ok(store.as_ref(), &snapshot, case).await;
    assert_eq!(
        load_ok(store.as_ref(), "sess-held", case).await,
        snapshot,
        "session_store::{case}"
    );
    drop(lease);
    assert_eq!(
        load_ok(store.as_ref(), "sess-held", case).await,
        snapshot,
        "session_store::{case}: releasing changes nothing stored"
    );
}

async fn delete_of_a_leased_session_is_refused(store: Arc<dyn SessionStore>) {
    let case = "delete_of_a_leased_session_is_refused";
    let snapshot = session_after_a_turn("sess-busy-del");
    save_ok(store.as_ref(), &snapshot, case).await;
    let id = SessionId::from("sess-busy-del");
    let lease = acquire_ok(store.as_ref(), "sess-busy-del", case).await;
    match store.delete(&id).await {
        Err(error @ StoreError::Busy { .. }) => assert!(
            error.to_string().contains("\"sess-busy-del\""),
            "session_store::{case}: {error}"
        ),
        other => panic!("session_store::{case}: expected Busy, got {other:?}"),
    }
    assert_eq!(
        load_ok(store.as_ref(), "sess-busy-del", case).await,
        snapshot,
        "session_store::{case}: the refused delete changed nothing"
    );
    drop(lease);
    let deleted = store.delete(&id).await;
    assert!(
        deleted.is_ok(),
        "session_store::{case}: delete after release: {deleted:?}"
    );
    assert!(
        list_ids(store.as_ref(), case).await.is_empty(),
        "session_store::{case}: deleted"
    );
}
