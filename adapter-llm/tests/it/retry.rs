//! Retries only before the first chunk, time limits, cancellation and error texts,
//! for both HTTP providers.

use std::time::{Duration, Instant};

use adapter_llm::{AnthropicProvider, MAX_PROVIDER_MESSAGE_BYTES, OpenAiChatProvider, RetryPolicy, Timeouts};
use engine_ports::{CancellationToken, Chunk, LlmError, LlmProvider};
use futures::StreamExt as _;
use serde_json::json;

use crate::support::fixture::{FixtureServer, Piece, Reply, data};
use crate::support::{TEST_KEY, assert_no_key, collect, config, final_error, request, retries, text};

fn text_chunk(text: &str) -> String {
    data(&json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]}))
}

fn ok_stream(answer: &str) -> Reply {
    Reply::sse([
        text_chunk(answer),
        data(&json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})),
        "data: [DONE]\n\n".to_owned(),
    ])
}

fn error_reply(status: u16, message: &str) -> Reply {
    Reply::json(
        status,
        &json!({"error": {"message": message, "type": "test_error"}}),
    )
}

fn openai(server: &FixtureServer) -> OpenAiChatProvider {
    OpenAiChatProvider::new(config(format!("{}/v1", server.root()))).unwrap()
}

#[tokio::test]
async fn a_500_then_a_200_succeeds_after_two_requests() {
    let server = FixtureServer::start(vec![error_reply(500, "try again"), ok_stream("fine")]).await;
    let items = collect(&openai(&server), request(&[])).await.unwrap();
    assert_eq!(text(&items), "fine");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn transient_statuses_are_retried_with_a_notice_each() {
    for status in [408, 409, 429, 500, 502, 503, 504, 529] {
        let server = FixtureServer::start(vec![
            error_reply(status, "busy"),
            error_reply(status, "still busy"),
            ok_stream("fine"),
        ])
        .await;
        let items = collect(&openai(&server), request(&[])).await.unwrap();
        assert_eq!(text(&items), "fine", "status {status}");
        let notices = retries(&items);
        assert_eq!(notices.len(), 2, "status {status}: {items:?}");
        assert_eq!(
            (notices[0].attempt, notices[0].status, notices[1].attempt),
            (1, Some(status), 2)
        );
        assert!(notices[1].error.contains("still busy"), "{:?}", notices[1]);
        assert_eq!(server.requests().len(), 3, "status {status}");
    }
}

#[tokio::test]
async fn client_errors_are_never_retried() {
    for status in [400, 401, 403, 404, 422] {
        let server = FixtureServer::start(vec![error_reply(status, "no"), ok_stream("never reached")]).await;
        let error = collect(&openai(&server), request(&[])).await.unwrap_err();
        assert!(
            matches!(error, LlmError::Status { status: s, .. } if s == status),
            "{status}: {error}"
        );
        assert_eq!(server.requests().len(), 1, "status {status}");
    }
}

#[tokio::test]
async fn a_drop_after_one_text_chunk_fails_after_one_request() {
    let server = FixtureServer::start(vec![
        Reply::sse_pieces([Piece::Data(text_chunk("hel").into_bytes()), Piece::Cut]),
        ok_stream("never reached"),
    ])
    .await;
    let items = collect(&openai(&server), request(&[])).await.unwrap();
    assert_eq!(text(&items), "hel");
    let error = final_error(&items).unwrap();
    assert!(matches!(error, LlmError::Transport { .. }), "{error}");
    assert!(
        error.to_string().contains("openai-chat") && error.to_string().contains("gpt-5"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_drop_before_any_chunk_is_retried() {
    let server = FixtureServer::start(vec![
        Reply::sse_pieces([Piece::Data(b": warming up\n\n".to_vec()), Piece::Cut]),
        ok_stream("second try"),
    ])
    .await;
    let items = collect(&openai(&server), request(&[])).await.unwrap();
    assert_eq!(text(&items), "second try");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_401_is_not_retried_and_names_the_key_variable() {
    let server = FixtureServer::start(vec![
        Reply::json(
            401,
            &json!({"error": {"message": format!("Incorrect API key provided: {TEST_KEY}")}}),
        ),
        ok_stream("never reached"),
    ])
    .await;
    let error = collect(&openai(&server), request(&[])).await.unwrap_err();
    assert!(matches!(error, LlmError::Status { status: 401, .. }), "{error}");
    let text = error.to_string();
    assert!(text.contains("OPENAI_API_KEY"), "{text}");
    assert!(
        text.contains("openai-chat") && text.contains("gpt-5") && text.contains("401"),
        "{text}"
    );
    assert!(text.contains("Incorrect API key provided"), "{text}");
    assert_no_key(&error);
    assert_eq!(server.requests().len(), 1);

    let server = FixtureServer::start(vec![Reply::json(
        403,
        &json!({"type": "error", "error": {"type": "permission_error", "message": "no access"}}),
    )])
    .await;
    let provider = AnthropicProvider::new(config(server.root())).unwrap();
    let error = collect(&provider, request(&[])).await.unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("ANTHROPIC_API_KEY") && text.contains("no access") && text.contains("403"),
        "{text}"
    );
    assert!(
        text.contains("anthropic") && text.contains("claude-sonnet-4-6"),
        "{text}"
    );
    assert_no_key(&error);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn other_client_errors_are_not_retried_and_messages_are_bounded() {
    let long = "x".repeat(2000);
    let server = FixtureServer::start(vec![error_reply(400, &long), ok_stream("never reached")]).await;
    let error = collect(&openai(&server), request(&[])).await.unwrap_err();
    let LlmError::Status { status, message, .. } = &error else {
        panic!("{error}");
    };
    assert_eq!(*status, 400);
    assert!(
        message.len() <= MAX_PROVIDER_MESSAGE_BYTES + 100,
        "{}",
        message.len()
    );
    assert!(message.contains("xxxx"));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn retry_after_is_honoured() {
    let server = FixtureServer::start(vec![
        error_reply(429, "slow down").with_header("retry-after", "1"),
        ok_stream("after waiting"),
    ])
    .await;
    let started = Instant::now();
    let provider = OpenAiChatProvider::new(config(format!("{}/v1", server.root())).with_retry(RetryPolicy {
        budget: Duration::from_secs(5),
        ..RetryPolicy::default()
    }))
    .unwrap();
    let items = collect(&provider, request(&[])).await.unwrap();
    assert_eq!(text(&items), "after waiting");
    assert_eq!(server.requests().len(), 2);
    assert_eq!(retries(&items)[0].wait, Duration::from_secs(1));
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_retry_after_beyond_the_budget_ends_the_retries() {
    let server = FixtureServer::start(vec![
        error_reply(429, "come back tomorrow").with_header("retry-after", "3600"),
        ok_stream("never reached"),
    ])
    .await;
    let started = Instant::now();
    let error = collect(&openai(&server), request(&[])).await.unwrap_err();
    assert!(matches!(error, LlmError::Status { status: 429, .. }), "{error}");
    assert!(error.to_string().contains("come back tomorrow"));
    assert_eq!(server.requests().len(), 1);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn connect_failures_are_retried_then_reported() {
    // Bind and drop a listener: its port refuses connections.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let provider = OpenAiChatProvider::new(config(format!("http://127.0.0.1:{port}/v1")).with_retry(
        RetryPolicy {
            budget: Duration::from_millis(300),
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(20),
        },
    ))
    .unwrap();
    let items = collect(&provider, request(&[])).await.unwrap();
    let error = final_error(&items).unwrap();
    assert!(matches!(error, LlmError::Transport { .. }), "{error}");
    assert!(retries(&items).len() >= 2, "{items:?}");
    assert!(
        retries(&items).iter().all(|notice| notice.status.is_none()),
        "{items:?}"
    );
    assert!(error.to_string().contains("retry budget"), "{error}");
    let text = error.to_string();
    assert!(
        text.contains(&format!("127.0.0.1:{port}")) && text.contains("gpt-5"),
        "{text}"
    );
    assert_no_key(&error);
}

#[tokio::test]
async fn the_first_byte_limit_applies_per_attempt() {
    let server = FixtureServer::start(vec![Reply::silent(), Reply::silent(), Reply::silent()]).await;
    let provider = OpenAiChatProvider::new(
        config(format!("{}/v1", server.root()))
            .with_timeouts(Timeouts {
                first_byte: Duration::from_millis(200),
                idle: Duration::from_secs(10),
            })
            .with_retry(RetryPolicy {
                budget: Duration::from_millis(300),
                initial_backoff: Duration::from_millis(10),
                ..RetryPolicy::default()
            }),
    )
    .unwrap();
    let items = collect(&provider, request(&[])).await.unwrap();
    let error = final_error(&items).unwrap();
    assert!(matches!(error, LlmError::Transport { .. }), "{error}");
    assert!(error.to_string().contains("200ms"), "{error}");
    assert_eq!(retries(&items).len(), 1, "{items:?}");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn an_idle_gap_after_text_ends_the_turn() {
    let server = FixtureServer::start(vec![Reply::sse_pieces([
        Piece::Data(text_chunk("thinking").into_bytes()),
        Piece::Hang,
    ])])
    .await;
    let provider = OpenAiChatProvider::new(config(format!("{}/v1", server.root())).with_timeouts(Timeouts {
        first_byte: Duration::from_secs(10),
        idle: Duration::from_millis(200),
    }))
    .unwrap();
    let items = collect(&provider, request(&[])).await.unwrap();
    assert_eq!(text(&items), "thinking");
    let error = final_error(&items).unwrap();
    assert!(error.to_string().contains("idle"), "{error}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn cancellation_ends_the_stream_promptly() {
    let server = FixtureServer::start(vec![Reply::sse_pieces([
        Piece::Data(text_chunk("thinking").into_bytes()),
        Piece::Hang,
    ])])
    .await;
    let provider = openai(&server);
    let cancel = CancellationToken::new();
    let mut stream = provider.stream(request(&[]), cancel.clone()).await.unwrap();
    assert_eq!(stream.next().await, Some(Ok(Chunk::Text("thinking".to_owned()))));
    cancel.cancel();
    let started = Instant::now();
    let rest: Vec<_> = tokio::time::timeout(Duration::from_secs(5), stream.collect::<Vec<_>>())
        .await
        .unwrap();
    assert_eq!(rest, vec![Err(LlmError::Cancelled)]);
    // The server never answers: ending before the test's own 5 s bound is the proof.
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );

    // Cancelled while waiting for the response headers: the outer error.
    let server = FixtureServer::start(vec![Reply::silent()]).await;
    let provider = openai(&server);
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    let started = Instant::now();
    let (outcome, ()) = tokio::join!(provider.stream(request(&[]), cancel), async move {
        canceller.cancel();
    });
    assert!(matches!(outcome, Err(LlmError::Cancelled)));
    // The server never answers: ending before the test's own 5 s bound is the proof.
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn cancellation_interrupts_the_backoff() {
    // The server asks for a 20 s wait; cancelling once the first attempt arrived ends
    // the request at once (the wait, or the attempt itself, is interrupted).
    let server = FixtureServer::start(vec![
        error_reply(503, "busy").with_header("retry-after", "20"),
        ok_stream("never reached"),
    ])
    .await;
    let provider =
        OpenAiChatProvider::new(config(format!("{}/v1", server.root())).with_retry(RetryPolicy::default()))
            .unwrap();
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    let started = Instant::now();
    let mut stream = provider.stream(request(&[]), cancel).await.unwrap();
    let Some(Ok(Chunk::Retry(notice))) = stream.next().await else {
        panic!("expected a retry notice first");
    };
    assert_eq!(notice.wait, Duration::from_secs(20));
    canceller.cancel();
    assert_eq!(stream.next().await, Some(Err(LlmError::Cancelled)));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(server.requests().len(), 1);
}
