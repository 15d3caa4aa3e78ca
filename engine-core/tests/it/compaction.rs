//! Context management in the loop: a scripted model with a tiny context window forces
//! compaction (recent turns and unanswered calls kept verbatim, one tool-less summary
//! request), a resumed session continues the compacted conversation, and a provider's
//! "context too long" refusal gets one compaction and one retry, never a loop.

use std::sync::Arc;

use engine_core::{COMPACTION_INSTRUCTIONS, EngineConfig, SUMMARY_INTRO, context_window_for};
use engine_ports::testkit::ScriptedTurn;
use engine_ports::{
    Chunk, CompactionTrigger, Event, EventKind, LlmError, LlmRequest, Message, PermissionMode,
    RequestPurpose, SessionId, SessionSnapshot, StopReason, ToolCall, ToolResult, Usage,
};

use crate::support::{FakeTool, Harness, Probe, catalog_of, config, harness, kinds, run_to_end, stop_of};

/// A catalog of one read-only `Read` whose result is `{"size": N}` bytes of `r`.
fn sized_read() -> Arc<engine_core::Catalog> {
    let probe = Probe::new();
    catalog_of(vec![
        FakeTool::new("Read", true, &probe)
            .behaving(|call: ToolCall, _| async move {
                let size = call.args_value()["size"].as_u64().unwrap_or(0);
                Ok(ToolResult::text(
                    call.id().clone(),
                    "r".repeat(usize::try_from(size).unwrap()),
                ))
            })
            .arc(),
    ])
}

fn read(id: &str, size: u64) -> ScriptedTurn {
    ScriptedTurn::call(id, "Read", &format!(r#"{{"size":{size}}}"#))
}

fn windowed(window: u64) -> EngineConfig {
    EngineConfig {
        context_window: Some(window),
        ..config()
    }
}

fn too_long() -> LlmError {
    LlmError::ContextTooLong {
        provider: "scripted".to_owned(),
        model: "scripted".to_owned(),
        message: "prompt is too long: 250000 tokens > 200000 maximum".to_owned(),
    }
}

/// The `context.compacted` events of a run.
fn compactions(events: &[Event]) -> Vec<(CompactionTrigger, u64, u64, u64, u64)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ContextCompacted {
                trigger,
                tokens_before,
                tokens_after,
                messages_replaced,
                messages_kept,
                ..
            } => Some((
                *trigger,
                *tokens_before,
                *tokens_after,
                *messages_replaced,
                *messages_kept,
            )),
            _ => None,
        })
        .collect()
}

fn compaction_requests(h: &Harness) -> Vec<LlmRequest> {
    h.llm
        .requests()
        .into_iter()
        .filter(|r| r.purpose == RequestPurpose::Compaction)
        .collect()
}

fn conversation_requests(h: &Harness) -> Vec<LlmRequest> {
    h.llm
        .requests()
        .into_iter()
        .filter(|r| r.purpose.is_conversation())
        .collect()
}

async fn stored(h: &Harness, session: &str) -> SessionSnapshot {
    h.engine.store().load(&SessionId::from(session)).await.unwrap()
}

fn summary_of(message: &Message) -> (&str, u64) {
    match message {
        Message::Summary { text, replaced_turns } => (text.as_str(), *replaced_turns),
        other => panic!("expected a summary, got {other:?}"),
    }
}

fn error_of(events: &[Event]) -> String {
    match &events.last().unwrap().kind {
        EventKind::Result {
            stop: StopReason::Error,
            error: Some(error),
            ..
        } => error.clone(),
        other => panic!("expected an error result, got {other:?}"),
    }
}

/// Three user turns in a 1,000-token window (compaction above 800 tokens, 1,000 bytes
/// kept): the third turn's result passes the threshold.
fn three_turns_script() -> Vec<ScriptedTurn> {
    vec![
        read("c1", 2_500),
        ScriptedTurn::text("first done"),
        read("c2", 300),
        ScriptedTurn::text("second done"),
        read("c3", 400),
        ScriptedTurn::text("SUMMARY: the user asked for three reads"),
        ScriptedTurn::text("third done"),
        ScriptedTurn::text("fourth done"),
    ]
}

#[tokio::test]
async fn a_tiny_window_compacts_older_turns_and_keeps_the_last_two_user_turns_verbatim() {
    let h = harness(sized_read(), three_turns_script(), windowed(1_000));
    for prompt in ["one", "two"] {
        let events = run_to_end(&h.engine, "s", prompt).await;
        assert!(compactions(&events).is_empty(), "{:?}", kinds(&events));
    }
    let before = stored(&h, "s").await.conversation;
    let events = run_to_end(&h.engine, "s", "three").await;
    assert_eq!(stop_of(&events), (StopReason::EndTurn, "third done".to_owned()));

    let found = compactions(&events);
    assert_eq!(found.len(), 1, "{:?}", kinds(&events));
    let (trigger, tokens_before, tokens_after, replaced, kept) = found[0];
    assert_eq!(trigger, CompactionTrigger::Threshold);
    assert!(tokens_before > 800, "{tokens_before}");
    assert!(tokens_after < 400, "{tokens_after}");
    assert_eq!((replaced, kept), (4, 7));
    // Compaction happens between turns: after the third read's result, before the
    // next turn starts.
    let order: Vec<&str> = kinds(&events);
    let at = order.iter().position(|k| *k == "context.compacted").unwrap();
    assert_eq!(
        &order[at - 1..=at + 1],
        ["tool.result", "context.compacted", "turn.start"]
    );

    // One tool-less summary request over the replaced messages.
    let summaries = compaction_requests(&h);
    assert_eq!(summaries.len(), 1);
    let summary_request = &summaries[0];
    assert!(summary_request.tools.is_empty() && summary_request.system.is_empty());
    let messages = summary_request.messages.to_vec();
    let [Message::User { text: prompt }] = messages.as_slice() else {
        panic!("{:?}", summary_request.messages);
    };
    assert!(prompt.starts_with(COMPACTION_INSTRUCTIONS), "{prompt}");
    assert!(
        prompt.contains(
            "[user]\none\n\n[assistant]\n\n[tool call c1] Read {\"size\":2500}\n\n[tool result c1]\nrrr"
        ),
        "{prompt}"
    );
    assert!(!prompt.contains("[user]\ntwo"), "{prompt}");

    // The next request: the summary, then the last two user turns verbatim.
    let next = conversation_requests(&h).pop().unwrap();
    let (text, replaced_turns) = summary_of(&next.messages[0]);
    assert_eq!(
        text,
        format!("{SUMMARY_INTRO}\n\n<summary>\nSUMMARY: the user asked for three reads\n</summary>")
    );
    assert_eq!(replaced_turns, 2);
    let mut expected_kept = before.to_vec()[4..].to_vec();
    expected_kept.push(Message::User {
        text: "three".to_owned(),
    });
    expected_kept.extend(stored_tail_of_run_three(&h).await);
    assert_eq!(next.messages.to_vec()[1..], expected_kept[..]);
    assert_eq!(
        next.tools.iter().map(|s| s.name()).collect::<Vec<_>>(),
        ["Read"],
        "the conversation keeps its tools"
    );

    // The compaction is saved: the session holds the compacted conversation.
    let snapshot = stored(&h, "s").await;
    assert_eq!(snapshot.conversation.prefix(8), next.messages);
    assert_eq!(snapshot.turns, 6);
}

/// The third run's read and its result, as stored.
async fn stored_tail_of_run_three(h: &Harness) -> Vec<Message> {
    let conversation = stored(h, "s").await.conversation;
    let at = conversation
        .iter()
        .position(|m| matches!(m, Message::User { text } if text == "three"))
        .unwrap();
    conversation.to_vec()[at + 1..at + 3].to_vec()
}

#[tokio::test]
async fn a_resumed_session_sends_the_compacted_conversation() {
    let h = harness(sized_read(), three_turns_script(), windowed(1_000));
    for prompt in ["one", "two", "three"] {
        run_to_end(&h.engine, "s", prompt).await;
    }
    let compacted = stored(&h, "s").await.conversation;
    assert!(matches!(compacted[0], Message::Summary { .. }));

    // A new engine over the same store (a later process) continues it.
    let resumed = harness(
        sized_read(),
        vec![ScriptedTurn::text("fourth done")],
        windowed(1_000),
    );
    resumed.engine.store().save(&stored(&h, "s").await).await.unwrap();
    let events = run_to_end(&resumed.engine, "s", "four").await;
    assert_eq!(stop_of(&events), (StopReason::EndTurn, "fourth done".to_owned()));
    assert!(compactions(&events).is_empty());
    let sent = &resumed.llm.requests()[0];
    let mut expected = compacted;
    expected.push(Message::User {
        text: "four".to_owned(),
    });
    assert_eq!(sent.messages, expected);
    assert!(
        !sent
            .messages
            .iter()
            .any(|m| matches!(m, Message::User { text } if text == "one")),
        "the replaced turns stay replaced"
    );
}

#[tokio::test]
async fn an_unanswered_call_is_kept_verbatim() {
    let h = harness(
        sized_read(),
        vec![
            ScriptedTurn::text("SUMMARY: the user said one"),
            ScriptedTurn::text("done"),
        ],
        windowed(1_000),
    );
    let unanswered = Message::Assistant {
        text: String::new(),
        tool_calls: vec![ToolCall::new("open", "Read", r#"{"size":1}"#)],
    };
    let mut snapshot = SessionSnapshot::new("s", PermissionMode::Default);
    snapshot.conversation = vec![
        Message::User {
            text: "one".to_owned(),
        },
        unanswered.clone(),
        Message::User {
            text: "two".to_owned(),
        },
        Message::Assistant {
            text: "b".repeat(3_400),
            tool_calls: Vec::new(),
        },
    ]
    .into();
    h.engine.store().save(&snapshot).await.unwrap();
    let events = run_to_end(&h.engine, "s", "three").await;
    assert_eq!(stop_of(&events).0, StopReason::EndTurn);
    assert_eq!(compactions(&events).len(), 1);
    let prompt = match &compaction_requests(&h)[0].messages[0] {
        Message::User { text } => text.clone(),
        other => panic!("{other:?}"),
    };
    assert!(
        prompt.ends_with("<conversation>\n[user]\none\n</conversation>"),
        "{prompt}"
    );
    let sent = conversation_requests(&h).pop().unwrap();
    assert_eq!(sent.messages[1], unanswered);
    assert_eq!(sent.messages.len(), 5);
}

#[tokio::test]
async fn a_too_long_refusal_gets_one_compaction_and_one_retry() {
    let h = harness(
        sized_read(),
        vec![
            ScriptedTurn::text("1 done"),
            ScriptedTurn::text("2 done"),
            ScriptedTurn::start_error(too_long()),
            ScriptedTurn::text("SUMMARY: one"),
            ScriptedTurn::text("3 done"),
        ],
        config(),
    );
    run_to_end(&h.engine, "s", "one").await;
    run_to_end(&h.engine, "s", "two").await;
    let events = run_to_end(&h.engine, "s", "three").await;
    assert_eq!(stop_of(&events), (StopReason::EndTurn, "3 done".to_owned()));
    let found = compactions(&events);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0, CompactionTrigger::ContextTooLong);
    assert_eq!((found[0].3, found[0].4), (2, 3));
    assert_eq!(
        kinds(&events),
        [
            "session.init",
            "turn.start",
            "context.compacted",
            "message.delta",
            "turn.end",
            "result"
        ]
    );
    let purposes: Vec<RequestPurpose> = h.llm.requests().iter().map(|r| r.purpose).collect();
    assert_eq!(
        purposes[2..],
        [
            RequestPurpose::Conversation,
            RequestPurpose::Compaction,
            RequestPurpose::Conversation
        ]
    );
    let retry = conversation_requests(&h).pop().unwrap();
    assert_eq!(summary_of(&retry.messages[0]).1, 1);
    assert_eq!(
        retry.messages.to_vec()[1..],
        [
            Message::User {
                text: "two".to_owned()
            },
            Message::Assistant {
                text: "2 done".to_owned(),
                tool_calls: Vec::new()
            },
            Message::User {
                text: "three".to_owned()
            },
        ]
    );
}

#[tokio::test]
async fn a_second_too_long_refusal_ends_the_run_without_another_attempt() {
    let h = harness(
        sized_read(),
        vec![
            ScriptedTurn::text("1 done"),
            ScriptedTurn::text("2 done"),
            ScriptedTurn::start_error(too_long()),
            ScriptedTurn::text("SUMMARY: one"),
            ScriptedTurn::start_error(too_long()),
            ScriptedTurn::text("never played"),
        ],
        config(),
    );
    run_to_end(&h.engine, "s", "one").await;
    run_to_end(&h.engine, "s", "two").await;
    let events = run_to_end(&h.engine, "s", "three").await;
    assert_eq!(
        error_of(&events),
        "scripted request for model scripted does not fit the model's context window: prompt is too long: \
         250000 tokens > 200000 maximum; the conversation was already compacted and retried once for this \
         request, so the run stops (the configured context window may be larger than the model's)"
    );
    assert_eq!(compactions(&events).len(), 1);
    assert_eq!(h.llm.requests().len(), 5, "two refused requests and one summary");
    assert_eq!(h.llm.remaining(), 1);
    // The compaction itself was kept.
    assert!(matches!(
        stored(&h, "s").await.conversation[0],
        Message::Summary { .. }
    ));
}

#[tokio::test]
async fn a_too_long_refusal_with_nothing_to_compact_ends_the_run() {
    let h = harness(
        sized_read(),
        vec![ScriptedTurn::start_error(too_long())],
        config(),
    );
    let events = run_to_end(&h.engine, "s", "a huge prompt").await;
    assert!(
        error_of(&events).ends_with("; nothing in the conversation can be compacted to make it fit"),
        "{}",
        error_of(&events)
    );
    assert_eq!(h.llm.requests().len(), 1);
}

#[tokio::test]
async fn a_failed_summary_ends_the_run_and_keeps_the_conversation() {
    let mut script = three_turns_script();
    script[5] = ScriptedTurn::start_error(LlmError::Status {
        provider: "scripted".to_owned(),
        model: "scripted".to_owned(),
        status: 500,
        message: "overloaded".to_owned(),
    });
    let h = harness(sized_read(), script, windowed(1_000));
    run_to_end(&h.engine, "s", "one").await;
    run_to_end(&h.engine, "s", "two").await;
    let events = run_to_end(&h.engine, "s", "three").await;
    assert_eq!(
        error_of(&events),
        "compacting the conversation failed: the summary request failed: scripted request for model scripted \
         failed with HTTP 500: overloaded; the conversation was kept as it was"
    );
    assert!(compactions(&events).is_empty());
    let snapshot = stored(&h, "s").await;
    let users: Vec<&str> = snapshot
        .conversation
        .iter()
        .filter_map(|m| match m {
            Message::User { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(users, ["one", "two", "three"]);
    assert!(
        !snapshot
            .conversation
            .iter()
            .any(|m| matches!(m, Message::Summary { .. }))
    );
    assert_eq!(
        snapshot.conversation.len(),
        11,
        "the third read and its result are kept"
    );
}

#[tokio::test]
async fn reported_usage_drives_the_estimate_and_cache_counts_reach_turn_end() {
    let mut first = ScriptedTurn::text("1 done");
    first
        .chunks
        .push(Chunk::Usage(Usage::new(100, 5).with_cache(80, 20)));
    let mut second = ScriptedTurn::text("2 done");
    // The provider says the prompt nearly fills the 1,000-token window.
    second.chunks.push(Chunk::Usage(Usage::new(850, 5)));
    let h = harness(
        sized_read(),
        vec![
            first,
            second,
            ScriptedTurn::text("SUMMARY"),
            ScriptedTurn::text("3 done"),
        ],
        windowed(1_000),
    );
    let events = run_to_end(&h.engine, "s", "one").await;
    let turn_end = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::TurnEnd { usage, .. } => Some(*usage),
            _ => None,
        })
        .unwrap();
    assert_eq!(turn_end, Usage::new(100, 5).with_cache(80, 20));
    run_to_end(&h.engine, "s", "two").await;
    let snapshot = stored(&h, "s").await;
    assert_eq!(snapshot.context.map(|c| (c.tokens, c.messages)), Some((855, 4)));
    let events = run_to_end(&h.engine, "s", "three").await;
    let found = compactions(&events);
    assert_eq!(found.len(), 1);
    // 855 reported tokens plus the new prompt's 5 bytes.
    assert_eq!(found[0].1, 857);
    let result_usage = match &events.last().unwrap().kind {
        EventKind::Result { usage, .. } => *usage,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        result_usage,
        Usage::default(),
        "the scripted summary reported none"
    );
    assert_eq!(stored(&h, "s").await.context, None);
}

#[test]
fn the_window_comes_from_the_setting_else_the_table() {
    let h = harness(sized_read(), Vec::new(), windowed(4_096));
    assert_eq!(h.engine.context_window(), 4_096);
    let h = harness(
        sized_read(),
        Vec::new(),
        EngineConfig {
            model: "claude-opus-4-1".to_owned(),
            ..config()
        },
    );
    assert_eq!(h.engine.context_window(), 200_000);
    assert_eq!(context_window_for("scripted"), 128_000);
    let refused = engine_core::Engine::new(engine_core::Deps {
        config: windowed(0),
        ..engine_core::Deps::new(
            Arc::new(engine_ports::testkit::ScriptedLlm::new(Vec::new())),
            sized_read(),
            crate::support::env(),
        )
    });
    assert!(
        matches!(refused, Err(engine_core::EngineError::InvalidConfig(ref m)) if m.contains("context_window")),
        "{:?}",
        refused.err()
    );
}

#[tokio::test]
async fn cancelling_during_the_summary_request_stops_the_run_and_keeps_the_conversation() {
    let mut script = three_turns_script();
    script[5] = ScriptedTurn::text("a summary that never ends").hanging();
    let h = harness(sized_read(), script, windowed(1_000));
    run_to_end(&h.engine, "s", "one").await;
    run_to_end(&h.engine, "s", "two").await;
    let run = h.engine.run(&SessionId::from("s"), "three").unwrap();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while compaction_requests(&h).is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the summary request was never made"
        );
        tokio::task::yield_now().await;
    }
    run.cancel();
    let events: Vec<Event> = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        futures::StreamExt::collect::<Vec<_>>(run),
    )
    .await
    .expect("the cancelled run ends");
    assert_eq!(stop_of(&events).0, StopReason::Cancelled);
    assert!(compactions(&events).is_empty());
    let snapshot = stored(&h, "s").await;
    assert_eq!(snapshot.conversation.len(), 11);
    assert!(matches!(snapshot.conversation[0], Message::User { .. }));
}
