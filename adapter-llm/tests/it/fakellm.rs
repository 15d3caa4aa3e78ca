//! Both HTTP providers against the real fakellm 0.3.5 server (one server per test),
//! streamed and not; `/_fakellm/stats` tells which rule fired.

use adapter_llm::{AnthropicProvider, HttpProviderConfig, OpenAiChatProvider};
use engine_ports::{LlmError, LlmProvider, Message, ToolCall, ToolResult};
use serde_json::{Value, json};

use crate::support::{FakeLlm, assert_no_key, calls, collect, config, final_error, request, retries, text};

/// One `add` round trip: the call, then the final text after the tool result.
async fn add_round_trip(provider: &dyn LlmProvider, fakellm: &FakeLlm) {
    let first = collect(provider, request(&["add"]))
        .await
        .unwrap_or_else(|error| panic!("{error}\nfakellm stderr:\n{}", fakellm.stderr()));
    let found = calls(&first);
    assert_eq!(found.len(), 1, "{first:?}");
    let call = &found[0];
    assert_eq!(call.name(), "add");
    assert!(!call.id().is_empty());
    let args: Value = serde_json::from_str(call.args()).unwrap();
    assert_eq!(args, json!({"a": 2, "b": 3}));

    let mut follow_up = request(&["add"]);
    follow_up.messages.push(Message::Assistant {
        text: text(&first),
        tool_calls: vec![ToolCall::new(call.id().clone(), "add", call.args())],
    });
    follow_up.messages.push(Message::Tool {
        result: ToolResult::text(call.id().clone(), "5"),
    });
    let second = collect(provider, follow_up).await.unwrap();
    assert_eq!(text(&second), "The sum is 5.");
    assert!(calls(&second).is_empty());
}

fn rules(streamed: bool) -> Vec<(String, bool)> {
    vec![
        ("add-call".to_owned(), streamed),
        ("add-result".to_owned(), streamed),
    ]
}

#[tokio::test]
async fn openai_chat_streamed_against_fakellm() {
    let Some(fakellm) = FakeLlm::start("openai_chat_streamed_against_fakellm", "add.yaml") else {
        return;
    };
    let provider = OpenAiChatProvider::new(config(fakellm.v1())).unwrap();
    add_round_trip(&provider, &fakellm).await;
    assert_eq!(fakellm.fired().await, rules(true));
}

#[tokio::test]
async fn openai_chat_not_streamed_against_fakellm() {
    let Some(fakellm) = FakeLlm::start("openai_chat_not_streamed_against_fakellm", "add.yaml") else {
        return;
    };
    let provider = OpenAiChatProvider::new(config(fakellm.v1()).with_streaming(false)).unwrap();
    add_round_trip(&provider, &fakellm).await;
    assert_eq!(fakellm.fired().await, rules(false));
}

#[tokio::test]
async fn anthropic_streamed_against_fakellm() {
    let Some(fakellm) = FakeLlm::start("anthropic_streamed_against_fakellm", "add.yaml") else {
        return;
    };
    let provider = AnthropicProvider::new(config(fakellm.root())).unwrap();
    add_round_trip(&provider, &fakellm).await;
    assert_eq!(fakellm.fired().await, rules(true));
}

#[tokio::test]
async fn anthropic_not_streamed_against_fakellm() {
    let Some(fakellm) = FakeLlm::start("anthropic_not_streamed_against_fakellm", "add.yaml") else {
        return;
    };
    let provider = AnthropicProvider::new(config(fakellm.root()).with_streaming(false)).unwrap();
    add_round_trip(&provider, &fakellm).await;
    assert_eq!(fakellm.fired().await, rules(false));
}

fn model(config: HttpProviderConfig, name: &str) -> HttpProviderConfig {
    config.with_model(name).with_streaming(false)
}

#[tokio::test]
async fn server_errors_are_retried_within_the_budget_against_fakellm() {
    let Some(fakellm) = FakeLlm::start(
        "server_errors_are_retried_within_the_budget_against_fakellm",
        "errors.yaml",
    ) else {
        return;
    };
    let provider = OpenAiChatProvider::new(model(config(fakellm.v1()), "err500-a")).unwrap();
    let items = collect(&provider, request(&[])).await.unwrap();
    let notices = retries(&items);
    let error = final_error(&items).unwrap();
    assert!(matches!(error, LlmError::Status { status: 500, .. }), "{error}");
    let text = error.to_string();
    assert!(
        text.contains("the mock server is overloaded")
            && text.contains("err500-a")
            && text.contains("openai-chat"),
        "{text}"
    );
    assert!(text.contains("retry budget"), "{text}");
    assert_no_key(&error);
    assert!(notices.len() >= 2, "{items:?}");
    let stats = fakellm.stats().await;
    assert_eq!(stats["by_rule"], json!({"overloaded": notices.len() + 1}));
}

#[tokio::test]
async fn a_rejected_key_is_not_retried_against_fakellm() {
    let Some(fakellm) = FakeLlm::start("a_rejected_key_is_not_retried_against_fakellm", "errors.yaml") else {
        return;
    };
    let provider = OpenAiChatProvider::new(model(config(fakellm.v1()), "err401-a")).unwrap();
    let error = collect(&provider, request(&[])).await.unwrap_err();
    assert!(matches!(error, LlmError::Status { status: 401, .. }), "{error}");
    assert!(error.to_string().contains("OPENAI_API_KEY") && error.to_string().contains("invalid api key"));
    assert_no_key(&error);

    let provider = AnthropicProvider::new(model(config(fakellm.root()), "err401-b")).unwrap();
    let error = collect(&provider, request(&[])).await.unwrap_err();
    assert!(matches!(error, LlmError::Status { status: 401, .. }), "{error}");
    assert!(error.to_string().contains("ANTHROPIC_API_KEY") && error.to_string().contains("invalid api key"));
    assert_no_key(&error);

    let stats = fakellm.stats().await;
    assert_eq!(stats["by_rule"], json!({"bad-key": 2}));
}

#[tokio::test]
async fn context_window_refusals_are_typed_against_fakellm() {
    let Some(fakellm) = FakeLlm::start("context_window_refusals_are_typed_against_fakellm", "errors.yaml")
    else {
        return;
    };
    let anthropic = AnthropicProvider::new(model(config(fakellm.root()), "toolong-anthropic")).unwrap();
    let error = collect(&anthropic, request(&[])).await.unwrap_err();
    assert!(error.is_context_too_long(), "{error:?}");
    assert!(error.to_string().contains("prompt is too long"), "{error}");
    let openai = OpenAiChatProvider::new(model(config(fakellm.v1()), "toolong-openai")).unwrap();
    let error = collect(&openai, request(&[])).await.unwrap_err();
    assert!(error.is_context_too_long(), "{error:?}");
    assert!(error.to_string().contains("maximum context length"), "{error}");
    let stats = fakellm.stats().await;
    assert_eq!(
        stats["by_rule"],
        json!({"prompt-too-long": 1, "context-length-exceeded": 1}),
        "a refusal is never retried"
    );
}
