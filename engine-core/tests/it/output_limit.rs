//! The output limit: every request carries one, a cut-off text answer stops the run
//! with `max_tokens`, a cut-off tool call never runs (the request is repeated once
//! with twice the limit, else the model is told), and the provider's retry notices
//! become `model.retry` events.

use std::time::Duration;

use engine_core::{Engine, EngineConfig, EngineError, output_limits_for};
use engine_ports::testkit::{ScriptedTurn, TurnEnding};
use engine_ports::{Chunk, EventKind, Message, ModelRetry, StopReason};

use crate::support::{FakeTool, Probe, catalog_of, config, harness, results_of, run_to_end, stop_of};

fn cut(turn: ScriptedTurn) -> ScriptedTurn {
    ScriptedTurn {
        ending: TurnEnding::Truncated,
        ..turn
    }
}

fn limits_sent(llm: &engine_ports::testkit::ScriptedLlm) -> Vec<Option<u32>> {
    llm.requests().iter().map(|r| r.max_tokens).collect()
}

fn raised_limits(events: &[engine_ports::Event]) -> Vec<Option<u32>> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ModelRetry { max_tokens, .. } => Some(*max_tokens),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_text_answer_cut_off_by_the_output_limit_stops_with_max_tokens() {
    let probe = Probe::new();
    let h = harness(
        catalog_of(vec![FakeTool::new("Read", true, &probe).arc()]),
        vec![cut(ScriptedTurn::text("The list: one, two"))],
        config(),
    );
    let events = run_to_end(&h.engine, "s", "list them").await;
    assert_eq!(
        stop_of(&events),
        (StopReason::MaxTokens, "The list: one, two".to_owned())
    );
    assert_eq!(limits_sent(&h.llm), [Some(engine_ports::DEFAULT_MAX_TOKENS)]);
}

#[tokio::test]
async fn a_cut_off_call_is_asked_again_with_twice_the_limit_and_runs_whole() {
    let probe = Probe::new();
    let h = harness(
        catalog_of(vec![FakeTool::new("Read", true, &probe).arc()]),
        vec![
            cut(ScriptedTurn::call("c1", "Read", r#"{"path":"REA"#).with_usage(10, 8192)),
            ScriptedTurn::call("c1", "Read", r#"{"path":"README.md"}"#).with_usage(10, 20),
            ScriptedTurn::text("read it"),
        ],
        config(),
    );
    let events = run_to_end(&h.engine, "s", "read").await;
    assert_eq!(stop_of(&events), (StopReason::EndTurn, "read it".to_owned()));
    assert_eq!(limits_sent(&h.llm), [Some(8192), Some(16384), Some(8192)]);
    assert_eq!(raised_limits(&events), [Some(16384)]);
    assert_eq!(
        probe.seen_args(),
        [("Read".to_owned(), r#"{"path":"README.md"}"#.to_owned())]
    );
    // The discarded answer's usage still counts.
    let first_turn_output = events.iter().find_map(|e| match &e.kind {
        EventKind::TurnEnd { turn: 1, usage } => Some(usage.output_tokens),
        _ => None,
    });
    assert_eq!(first_turn_output, Some(8192 + 20));
}

#[tokio::test]
async fn a_call_cut_off_twice_is_answered_without_running() {
    let probe = Probe::new();
    let h = harness(
        catalog_of(vec![FakeTool::new("Write", false, &probe).arc()]),
        vec![
            cut(ScriptedTurn::text("writing").with_call("c1", "Write", r#"{"path":"a.txt","content":"ha"#)),
            cut(ScriptedTurn::text("writing").with_call(
                "c1",
                "Write",
                r#"{"path":"a.txt","content":"half of"#,
            )),
            ScriptedTurn::text("I will write it in parts"),
        ],
        config(),
    );
    let events = run_to_end(&h.engine, "s", "write").await;
    assert_eq!(
        stop_of(&events),
        (StopReason::EndTurn, "I will write it in parts".to_owned())
    );
    assert_eq!(probe.executions("Write"), 0, "a cut-off call ran");
    let results = results_of(&events);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].2, "{results:?}");
    assert!(
        results[0].1.contains("not run") && results[0].1.contains("16384 tokens"),
        "{}",
        results[0].1
    );
    // The model's next request holds the call with valid arguments and its result.
    let next = &h.llm.requests()[2];
    let history = next.messages.to_vec();
    let Some(Message::Assistant { tool_calls, .. }) = history.get(history.len() - 2) else {
        panic!("{history:?}");
    };
    assert_eq!((tool_calls[0].name(), tool_calls[0].args()), ("Write", "{}"));
    assert!(
        matches!(history.last(), Some(Message::Tool { result }) if result.is_error()),
        "{history:?}"
    );
}

#[tokio::test]
async fn a_limit_already_at_the_models_maximum_is_not_raised() {
    assert_eq!(output_limits_for("claude-3-5-sonnet-latest").max, Some(8192));
    let probe = Probe::new();
    let h = harness(
        catalog_of(vec![FakeTool::new("Read", true, &probe).arc()]),
        vec![
            cut(ScriptedTurn::call("c1", "Read", r#"{"pa"#)),
            ScriptedTurn::text("sorry"),
        ],
        EngineConfig {
            model: "claude-3-5-sonnet-latest".to_owned(),
            ..config()
        },
    );
    let events = run_to_end(&h.engine, "s", "read").await;
    assert_eq!(limits_sent(&h.llm), [Some(8192), Some(8192)]);
    assert!(raised_limits(&events).is_empty(), "{events:?}");
    assert_eq!(probe.executions("Read"), 0);
}

#[tokio::test]
async fn the_max_tokens_setting_wins_over_the_table_and_must_be_positive() {
    let probe = Probe::new();
    let h = harness(
        catalog_of(vec![FakeTool::new("Read", true, &probe).arc()]),
        vec![ScriptedTurn::text("short")],
        EngineConfig {
            model: "gpt-4o".to_owned(),
            max_tokens: Some(300),
            ..config()
        },
    );
    run_to_end(&h.engine, "s", "hi").await;
    assert_eq!(limits_sent(&h.llm), [Some(300)]);
    assert_eq!(h.engine.output_limits().default, 300);

    let mut deps = engine_core::Deps::new(h.llm.clone(), catalog_of(Vec::new()), crate::support::env());
    deps.config = EngineConfig {
        max_tokens: Some(0),
        ..config()
    };
    let error = Engine::new(deps).err().unwrap();
    assert!(
        matches!(&error, EngineError::InvalidConfig(message) if message.contains("max_tokens")),
        "{error}"
    );
}

#[tokio::test]
async fn the_providers_retry_notices_become_model_retry_events() {
    let probe = Probe::new();
    let mut turn = ScriptedTurn::text("loaded");
    turn.chunks.insert(
        0,
        Chunk::Retry(ModelRetry {
            attempt: 1,
            status: Some(503),
            wait: Duration::from_millis(1500),
            error: "openai-chat request failed with HTTP 503: Loading model".to_owned(),
        }),
    );
    let h = harness(
        catalog_of(vec![FakeTool::new("Read", true, &probe).arc()]),
        vec![turn],
        config(),
    );
    let events = run_to_end(&h.engine, "s", "hi").await;
    let retry = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ModelRetry {
                attempt,
                status,
                wait_ms,
                max_tokens,
                error,
            } => Some((*attempt, *status, *wait_ms, *max_tokens, error.clone())),
            _ => None,
        })
        .expect("a model.retry event");
    assert_eq!(
        retry,
        (
            1,
            Some(503),
            1500,
            None,
            "openai-chat request failed with HTTP 503: Loading model".to_owned()
        )
    );
    assert_eq!(stop_of(&events), (StopReason::EndTurn, "loaded".to_owned()));
}
