//! Conformance suite for the [`LlmProvider`] stream contract (D12).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use tokio_util::sync::CancellationToken;

use crate::call::ToolCall;
use crate::llm::{Chunk, LlmError, LlmProvider, LlmRequest};
use crate::testkit::ScriptedTurn;
use crate::usage::Usage;

/// Runs every stream case. `make` builds a fresh provider that will answer its first
/// request with the given turn (scriptable providers map [`ScriptedTurn`] onto their
/// own script format).
///
/// # Panics
/// When a case fails; the message names the case.
pub async fn run(make: impl Fn(ScriptedTurn) -> Arc<dyn LlmProvider>) {
    text_then_done(&make).await;
    tool_calls_whole_in_order_verbatim(&make).await;
    usage_passes_through(&make).await;
    error_item_ends_the_turn(&make).await;
    a_cut_off_answer_is_marked_truncated(&make).await;
    start_error_is_the_outer_err(&make).await;
    a_context_too_long_refusal_stays_typed(&make).await;
    cancellation_ends_the_stream(&make).await;
}

/// Checks the contract any finished stream must satisfy: nothing after an `Err` item
/// or after `Done`, and the stream ends with one of them; `Truncated` only right
/// before `Done`; `Retry` notices only before anything of the answer.
///
/// # Errors
/// A description of the first breach.
pub fn check_contract(items: &[Result<Chunk, LlmError>]) -> Result<(), String> {
    for (index, item) in items.iter().enumerate() {
        let last = index + 1 == items.len();
        match item {
            Err(error) if !last => {
                return Err(format!("item {index} is an error ({error}) but items follow it"));
            }
            Ok(Chunk::Done) if !last => return Err(format!("item {index} is Done but items follow it")),
            Ok(Chunk::Truncated) if !matches!(items.get(index + 1), Some(Ok(Chunk::Done))) => {
                return Err(format!("item {index} is Truncated but Done does not follow it"));
            }
            Ok(Chunk::Retry(_)) if !items[..index].iter().all(|i| matches!(i, Ok(Chunk::Retry(_)))) => {
                return Err(format!("item {index} is a Retry notice after part of the answer"));
            }
            _ => {}
        }
    }
    match items.last() {
        Some(Ok(Chunk::Done) | Err(_)) => Ok(()),
        Some(other) => Err(format!(
            "the stream ended without Done or an error (last item {other:?})"
        )),
        None => Err("the stream ended without any item".to_owned()),
    }
}

/// Streams one request to the end and returns every item.
///
/// # Errors
/// The outer error when the request did not start.
pub async fn collect(
    provider: &dyn LlmProvider,
    request: LlmRequest,
    cancel: CancellationToken,
) -> Result<Vec<Result<Chunk, LlmError>>, LlmError> {
    let stream = provider.stream(request, cancel).await?;
    Ok(stream.collect().await)
}

fn request() -> LlmRequest {
    LlmRequest {
        model: "conformance".to_owned(),
        system: String::new(),
        messages: vec![crate::llm::Message::User {
            text: "hello".to_owned(),
        }]
        .into(),
        tools: Vec::new(),
        purpose: crate::llm::RequestPurpose::Conversation,
        max_tokens: None,
    }
}

async fn finished(
    case: &str,
    make: &impl Fn(ScriptedTurn) -> Arc<dyn LlmProvider>,
    turn: ScriptedTurn,
) -> Vec<Result<Chunk, LlmError>> {
    let provider = make(turn);
    let items = match collect(provider.as_ref(), request(), CancellationToken::new()).await {
        Ok(items) => items,
        Err(error) => panic!("llm_stream::{case}: the request did not start: {error}"),
    };
    if let Err(breach) = check_contract(&items) {
        panic!("llm_stream::{case}: {breach}");
    }
    items
}

fn text_of(items: &[Result<Chunk, LlmError>]) -> String {
    items
        .iter()
        .filter_map(|item| match item {
            Ok(Chunk::Text(text)) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn calls_of(items: &[Result<Chunk, LlmError>]) -> Vec<ToolCall> {
    items
        .iter()
        .filter_map(|item| match item {
            Ok(Chunk::ToolCall(call)) => Some(call.clone()),
            _ => None,
        })
        .collect()
}

async fn a_cut_off_answer_is_marked_truncated(make: &impl Fn(ScriptedTurn) -> Arc<dyn LlmProvider>) {
    let mut turn =
        ScriptedTurn::text("writing it").with_call("c1", "Write", r#"{"path":"a.txt","content":"hal"#);
    turn.ending = crate::testkit::TurnEnding::Truncated;
    let items = finished("a_cut_off_answer_is_marked_truncated", make, turn).await;
    assert_eq!(
        calls_of(&items),
        vec![ToolCall::new("c1", "Write", r#"{"path":"a.txt","content":"hal"#)],
        "llm_stream::a_cut_off_answer_is_marked_truncated: the cut call is passed on verbatim"
    );
    assert!(
        matches!(items.as_slice(), [.., Ok(Chunk::Truncated), Ok(Chunk::Done)]),
        "llm_stream::a_cut_off_answer_is_marked_truncated: Truncated then Done: {items:?}"
    );
}

async fn text_then_done(make: &impl Fn(ScriptedTurn) -> Arc<dyn LlmProvider>) {
    let items = finished(
        "text_then_done",
        make,
        ScriptedTurn::text("hello ").with_text("world"),
    )
    .await;
    assert_eq!(text_of(&items), "hello world", "llm_stream::text_then_done: text");
    assert!(
        matches!(items.last(), Some(Ok(Chunk::Done))),
        "llm_stream::text_then_done: ends with Done"
    );
}

async fn tool_calls_whole_in_order_verbatim(make: &impl Fn(ScriptedTurn) -> Arc<dyn LlmProvider>) {
    let turn = ScriptedTurn::text("let me look")
        .with_call("c1", "Read", r#"{"path":"a"}"#)
        .with_call("c2", "Grep", "{bad")
        .with_call("c3", "Glob", "");
    let items = finished("tool_calls_whole_in_order_verbatim", make, turn).await;
    let calls = calls_of(&items);
    let got: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|c| (c.id().as_str(), c.name(), c.args()))
        .collect();
    assert_eq!(
        got,
        [
            ("c1", "Read", r#"{"path":"a"}"#),
            ("c2", "Grep", "{bad"),
            ("c3", "Glob", "")
        ],
        "llm_stream::tool_calls_whole_in_order_verbatim"
    );
}

async fn usage_passes_through(make: &impl Fn(ScriptedTurn) -> Arc<dyn LlmProvider>) {
    let items = finished(
        "usage_passes_through",
        make,
        ScriptedTurn::text("x").with_usage(10, 2),
    )
    .await;
    let mut total = Usage::default();
    for item in &items {
        if let Ok(Chunk::Usage(usage)) = item {
            total += *usage;
        }
    }
    assert_eq!(total, Usage::new(10, 2), "llm_stream::usage_passes_through");
}

async fn error_item_ends_the_turn(make: &impl Fn(ScriptedTurn) -> Arc<dyn LlmProvider>) {
    let error = LlmError::Transport {
        provider: "conformance".to_owned(),
        model: "conformance".to_owned(),
        message: "connection reset".to_owned(),
    };
    let items = finished(
        "error_item_ends_the_turn",
        make,
        ScriptedTurn::text("partial").ending_with_error(error),
    )
    .await;
    assert!(
        matches!(items.last(), Some(Err(_))),
        "llm_stream::error_item_ends_the_turn: the last item is the error"
    );
}

async fn start_error_is_the_outer_err(make: &impl Fn(ScriptedTurn) -> Arc<dyn LlmProvider>) {
    let provider = make(ScriptedTurn::start_error(LlmError::Status {
        provider: "conformance".to_owned(),
        model: "conformance".to_owned(),
        status: 401,
        message: "unauthorized".to_owned(),
    }));
    let outcome = provider.stream(request(), CancellationToken::new()).await;
    assert!(
        outcome.is_err(),
        "llm_stream::start_error_is_the_outer_err: the request must not start"
    );
}

/// A provider that refuses the prompt as longer than the context window says so with
/// [`LlmError::ContextTooLong`] (scriptable providers map the scripted start error
/// onto their own refusal).
async fn a_context_too_long_refusal_stays_typed(make: &impl Fn(ScriptedTurn) -> Arc<dyn LlmProvider>) {
    let provider = make(ScriptedTurn::start_error(LlmError::ContextTooLong {
        provider: "conformance".to_owned(),
        model: "conformance".to_owned(),
        message: "prompt is too long".to_owned(),
    }));
    let outcome = provider.stream(request(), CancellationToken::new()).await;
    assert!(
        matches!(&outcome, Err(error) if error.is_context_too_long()),
        "llm_stream::a_context_too_long_refusal_stays_typed: got {:?}",
        outcome.err()
    );
}

async fn cancellation_ends_the_stream(make: &impl Fn(ScriptedTurn) -> Arc<dyn LlmProvider>) {
    let provider = make(ScriptedTurn::text("thinking").hanging());
    let cancel = CancellationToken::new();
    let mut stream = match provider.stream(request(), cancel.clone()).await {
        Ok(stream) => stream,
        Err(error) => panic!("llm_stream::cancellation_ends_the_stream: did not start: {error}"),
    };
    let first = stream.next().await;
    assert!(
        matches!(first, Some(Ok(Chunk::Text(_)))),
        "llm_stream::cancellation_ends_the_stream: first item {first:?}"
    );
    cancel.cancel();
    let rest = tokio::time::timeout(Duration::from_secs(5), stream.collect::<Vec<_>>()).await;
    let Ok(rest) = rest else {
        panic!("llm_stream::cancellation_ends_the_stream: the stream did not end within 5 s of cancel");
    };
    assert!(
        rest.iter().all(|item| !matches!(item, Ok(Chunk::ToolCall(_)))),
        "llm_stream::cancellation_ends_the_stream: no call after cancel"
    );
}
