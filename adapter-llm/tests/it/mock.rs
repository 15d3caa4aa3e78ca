//! The mock provider: `--mock`, `--mock-script` parsing and validation, replay per
//! session, streaming shape and cancellable delays.

use std::path::PathBuf;
use std::time::Duration;

use tokio::time::Instant;

use adapter_llm::{
    MOCK_NOT_CONFIGURED_TEXT, MOCK_SCRIPT_EXHAUSTED_TEXT, MockProvider, MockScript, ScriptError,
};
use engine_ports::{
    CancellationToken, Chunk, LlmError, LlmProvider, LlmRequest, Message, RequestPurpose, ToolCall,
};
use futures::StreamExt as _;

use crate::support::{calls, collect, text};

fn script_file(json: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.json");
    std::fs::write(&path, json).unwrap();
    (dir, path)
}

fn parse(json: &str) -> Result<MockScript, ScriptError> {
    let (_dir, path) = script_file(json);
    MockScript::from_file(&path)
}

fn error_of(json: &str) -> (String, ScriptError) {
    let (_dir, path) = script_file(json);
    let error = MockScript::from_file(&path).unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains(&path.display().to_string()),
        "names the file: {text}"
    );
    (text, error)
}

/// A conversation with `assistant_turns` earlier model answers.
fn conversation(first_prompt: &str, assistant_turns: usize) -> LlmRequest {
    let mut messages = vec![Message::User {
        text: first_prompt.to_owned(),
    }];
    for turn in 0..assistant_turns {
        messages.push(Message::Assistant {
            text: format!("answer {turn}"),
            tool_calls: Vec::new(),
        });
        messages.push(Message::User {
            text: "go on".to_owned(),
        });
    }
    LlmRequest {
        messages: messages.into(),
        ..LlmRequest::default()
    }
}

const OVERVIEW_SCRIPT: &str = r#"{"turns": [
  {"text": "let me look", "tool_calls": [{"id": "c1", "name": "Read", "args": {"path": "README.md"}}]},
  {"delay_ms": 5, "text": "done"}
]}"#;

#[test]
fn the_overview_script_parses() {
    let script = parse(OVERVIEW_SCRIPT).unwrap();
    assert_eq!(script.turns().len(), 2);
    assert_eq!(script.turns()[0].text, "let me look");
    assert_eq!(
        script.turns()[0].tool_calls,
        vec![ToolCall::new("c1", "Read", r#"{"path":"README.md"}"#)]
    );
    assert_eq!(script.turns()[1].delay, Duration::from_millis(5));
}

#[test]
fn missing_ids_are_generated_and_args_kept() {
    let script = parse(
        r#"{"turns": [
          {"text": "one"},
          {"tool_calls": [{"name": "Read", "args": {"b": 1, "a": 2}}, {"name": "Glob"}, {"id": "", "name": "Grep", "args": "{bad"}]}
        ]}"#,
    )
    .unwrap();
    let got: Vec<(String, String, String)> = script.turns()[1]
        .tool_calls
        .iter()
        .map(|c| (c.id().to_string(), c.name().to_owned(), c.args().to_owned()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("call_2_1".into(), "Read".into(), r#"{"b":1,"a":2}"#.into()),
            ("call_2_2".into(), "Glob".into(), "{}".into()),
            ("call_2_3".into(), "Grep".into(), "{bad".into()),
        ]
    );
}

#[test]
fn validation_errors_name_the_file_and_turn() {
    let (text, error) = error_of(r#"{"turns": [{"text": "a"}], "extra": 1}"#);
    assert!(text.contains("unknown field `extra`"), "{text}");
    assert_eq!(error.turn(), None);

    let (text, error) = error_of(r#"{"turns": [{"text": "a"}, {"text": "b", "colour": "red"}]}"#);
    assert!(
        text.contains("turn 2") && text.contains("unknown field `colour`"),
        "{text}"
    );
    assert_eq!(error.turn(), Some(2));

    let (text, error) =
        error_of(r#"{"turns": [{"text": "a", "tool_calls": [{"name": "Read", "argz": {}}]}]}"#);
    assert!(text.contains("turn 1") && text.contains("argz"), "{text}");
    assert_eq!(error.turn(), Some(1));

    for empty in [
        r#"{}"#,
        r#"{"text": ""}"#,
        r#"{"tool_calls": []}"#,
        r#"{"delay_ms": 5}"#,
    ] {
        let (text, error) = error_of(&format!(r#"{{"turns": [{{"text": "ok"}}, {empty}]}}"#));
        assert!(text.contains("turn 2") && text.contains("empty"), "{text}");
        assert_eq!(error.turn(), Some(2));
    }

    let (text, _) = error_of(r#"{"turns": [{"text": "a", "delay_ms": 30001}]}"#);
    assert!(
        text.contains("turn 1") && text.contains("30001") && text.contains("30000"),
        "{text}"
    );
    assert!(parse(r#"{"turns": [{"text": "a", "delay_ms": 30000}]}"#).is_ok());
    let (text, _) = error_of(r#"{"turns": [{"text": "a", "delay_ms": -1}]}"#);
    assert!(text.contains("turn 1"), "{text}");

    let (text, error) = error_of(r#"{"turns": [{"text": "a"},]}"#);
    assert!(text.contains("invalid JSON") && text.contains("line 1"), "{text}");
    assert_eq!(error.turn(), None);

    let (text, _) = error_of(r#"{"turns": []}"#);
    assert!(text.contains("no turns"), "{text}");
    let (text, _) = error_of(r#"{"turns": [{"tool_calls": [{"name": ""}]}]}"#);
    assert!(text.contains("turn 1") && text.contains("empty `name`"), "{text}");

    let missing = PathBuf::from("/nonexistent/mecatl/script.json");
    let text = MockScript::from_file(&missing).unwrap_err().to_string();
    assert!(text.contains("/nonexistent/mecatl/script.json"), "{text}");
}

#[tokio::test]
async fn text_streams_in_deltas_then_calls_in_order() {
    let script = parse(
        r#"{"turns": [{"text": "let me look at the readme first", "tool_calls": [
            {"id": "c1", "name": "Read", "args": {"path": "README.md"}},
            {"id": "c2", "name": "Glob", "args": {"pattern": "*.rs"}}]}]}"#,
    )
    .unwrap();
    let provider = MockProvider::scripted(script);
    let items = collect(&provider, conversation("hi", 0)).await.unwrap();
    let text_items = items.iter().filter(|i| matches!(i, Ok(Chunk::Text(_)))).count();
    assert!((2..=4).contains(&text_items), "{items:?}");
    assert_eq!(text(&items), "let me look at the readme first");
    let kinds: Vec<&str> = items
        .iter()
        .map(|i| match i {
            Ok(Chunk::Text(_)) => "text",
            Ok(Chunk::ToolCall(_)) => "call",
            Ok(Chunk::Done) => "done",
            _ => "other",
        })
        .collect();
    let first_call = kinds.iter().position(|k| *k == "call").unwrap();
    assert!(kinds[..first_call].iter().all(|k| *k == "text"), "{kinds:?}");
    assert_eq!(&kinds[first_call..], ["call", "call", "done"]);
    let ids: Vec<String> = calls(&items).iter().map(|c| c.id().to_string()).collect();
    assert_eq!(ids, ["c1", "c2"]);
}

#[tokio::test]
async fn each_session_replays_from_the_first_turn_then_the_script_is_exhausted() {
    let provider = MockProvider::scripted(parse(OVERVIEW_SCRIPT).unwrap());
    let first = collect(&provider, conversation("session A", 0)).await.unwrap();
    assert_eq!(text(&first), "let me look");
    assert_eq!(calls(&first).len(), 1);
    let second = collect(&provider, conversation("session A", 1)).await.unwrap();
    assert_eq!(text(&second), "done");
    let other_session = collect(&provider, conversation("session B", 0)).await.unwrap();
    assert_eq!(text(&other_session), "let me look");
    for later in [2, 5] {
        let exhausted = collect(&provider, conversation("session A", later))
            .await
            .unwrap();
        assert_eq!(text(&exhausted), MOCK_SCRIPT_EXHAUSTED_TEXT);
        assert!(calls(&exhausted).is_empty());
        assert_eq!(exhausted.last(), Some(&Ok(Chunk::Done)));
    }
}

#[tokio::test]
async fn mock_answers_the_canned_text_every_time() {
    let provider = MockProvider::canned();
    for turns in [0, 3] {
        let items = collect(&provider, conversation("hi", turns)).await.unwrap();
        assert_eq!(text(&items), MOCK_NOT_CONFIGURED_TEXT);
        assert!(calls(&items).is_empty());
    }
    for flag in ["--mock", "--mock-script", "--provider"] {
        assert!(MOCK_NOT_CONFIGURED_TEXT.contains(flag));
    }
}

// On a paused clock: time moves only when every task waits, so a delay that was not
// honoured shows as less elapsed time, and one that cancellation did not cut short
// shows as its full 30 s.
#[tokio::test(start_paused = true)]
async fn delays_are_honoured_and_cancellable() {
    let provider = MockProvider::scripted(parse(r#"{"turns": [{"text": "slow", "delay_ms": 60}]}"#).unwrap());
    let started = Instant::now();
    let items = collect(&provider, conversation("hi", 0)).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(60));
    assert_eq!(text(&items), "slow");

    let provider =
        MockProvider::scripted(parse(r#"{"turns": [{"text": "never", "delay_ms": 30000}]}"#).unwrap());
    let cancel = CancellationToken::new();
    let mut stream = provider
        .stream(conversation("hi", 0), cancel.clone())
        .await
        .unwrap();
    let started = Instant::now();
    let canceller = cancel.clone();
    tokio::spawn(async move { canceller.cancel() });
    let rest: Vec<_> = tokio::time::timeout(Duration::from_secs(5), async {
        let mut rest = Vec::new();
        while let Some(item) = stream.next().await {
            rest.push(item);
        }
        rest
    })
    .await
    .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the delay ran out instead of being cancelled: {:?}",
        started.elapsed()
    );
    assert_eq!(rest, vec![Err(LlmError::Cancelled)]);
}

const SCRIPT_WITH_CHILDREN: &str = r#"{
  "turns": [{"text": "main 1"}, {"text": "main 2"}, {"text": "main 3"}],
  "children": [
    {"match": "Summarize the conversation", "turns": [{"text": "summary 1"}, {"text": "summary 2"}]},
    {"match": "review", "turns": [{"text": "review 1"}]}
  ],
  "default_child": {"turns": [{"text": "default 1"}]}
}"#;

/// A side request whose first prompt is `prompt`, after `assistant_turns` answers.
fn side_request(prompt: &str, assistant_turns: usize) -> LlmRequest {
    LlmRequest {
        purpose: RequestPurpose::Compaction,
        ..conversation(prompt, assistant_turns)
    }
}

#[test]
fn children_and_the_default_child_parse() {
    let script = parse(SCRIPT_WITH_CHILDREN).unwrap();
    assert_eq!(script.turns().len(), 3);
    assert_eq!(script.children().len(), 2);
    assert_eq!(script.children()[0].match_text, "Summarize the conversation");
    assert_eq!(script.children()[0].turns[1].text, "summary 2");
    assert_eq!(script.default_child().unwrap()[0].text, "default 1");
    assert_eq!(
        script.child_turns("please review this").unwrap()[0].text,
        "review 1"
    );
    assert_eq!(script.child_turns("anything").unwrap()[0].text, "default 1");
    assert!(parse(OVERVIEW_SCRIPT).unwrap().child_turns("anything").is_none());
}

#[test]
fn child_errors_name_the_child_and_turn() {
    let (text, error) = error_of(
        r#"{"turns": [{"text": "a"}], "children": [{"match": "x", "turns": [{"text": "b"}]}, {"match": "y", "turns": [{"text": "c"}, {}]}]}"#,
    );
    assert!(
        text.contains("children[1], turn 2") && text.contains("empty"),
        "{text}"
    );
    assert_eq!((error.child(), error.turn()), (Some("children[1]"), Some(2)));

    let (text, error) =
        error_of(r#"{"turns": [{"text": "a"}], "children": [{"match": "", "turns": [{"text": "b"}]}]}"#);
    assert!(
        text.contains("children[0]") && text.contains("`match` is empty"),
        "{text}"
    );
    assert_eq!(error.turn(), None);

    let (text, _) = error_of(
        r#"{"turns": [{"text": "a"}], "children": [{"match": "x", "turns": [{"text": "b"}], "model": "big"}]}"#,
    );
    assert!(
        text.contains("children[0]") && text.contains("unknown field `model`"),
        "{text}"
    );

    let (text, _) = error_of(r#"{"turns": [{"text": "a"}], "children": [{"turns": [{"text": "b"}]}]}"#);
    assert!(
        text.contains("children[0]") && text.contains("missing field `match`"),
        "{text}"
    );

    let (text, error) = error_of(r#"{"turns": [{"text": "a"}], "default_child": {"turns": []}}"#);
    assert!(
        text.contains("default_child") && text.contains("`turns` is empty"),
        "{text}"
    );
    assert_eq!(error.child(), Some("default_child"));

    let (text, _) =
        error_of(r#"{"turns": [{"text": "a"}], "default_child": {"turns": [{"text": "b"}], "match": "z"}}"#);
    assert!(
        text.contains("default_child") && text.contains("unknown field `match`"),
        "{text}"
    );

    let (text, _) = error_of(r#"{"turns": [{"text": "a"}], "kids": []}"#);
    assert!(text.contains("unknown field `kids`"), "{text}");
}

#[tokio::test]
async fn side_requests_play_the_matching_child_from_its_own_first_turn() {
    let provider = MockProvider::scripted(parse(SCRIPT_WITH_CHILDREN).unwrap());
    let summary = collect(&provider, side_request("Summarize the conversation below", 0))
        .await
        .unwrap();
    assert_eq!(text(&summary), "summary 1");
    // Each side conversation plays its own copy: the next one starts over.
    let again = collect(&provider, side_request("Summarize the conversation again", 0))
        .await
        .unwrap();
    assert_eq!(text(&again), "summary 1");
    let second_turn = collect(&provider, side_request("Summarize the conversation below", 1))
        .await
        .unwrap();
    assert_eq!(text(&second_turn), "summary 2");
    let exhausted = collect(&provider, side_request("Summarize the conversation below", 2))
        .await
        .unwrap();
    assert_eq!(text(&exhausted), MOCK_SCRIPT_EXHAUSTED_TEXT);
    let review = collect(&provider, side_request("a review of main.rs", 0))
        .await
        .unwrap();
    assert_eq!(text(&review), "review 1");
    let other = collect(&provider, side_request("something else", 0))
        .await
        .unwrap();
    assert_eq!(text(&other), "default 1");
    // The main conversation is untouched by side requests.
    let main = collect(&provider, conversation("Summarize the conversation", 1))
        .await
        .unwrap();
    assert_eq!(text(&main), "main 2");
}

#[tokio::test]
async fn without_a_child_a_side_request_gets_the_canned_answer() {
    let provider = MockProvider::scripted(parse(OVERVIEW_SCRIPT).unwrap());
    let items = collect(&provider, side_request("Summarize the conversation", 0))
        .await
        .unwrap();
    assert_eq!(text(&items), MOCK_NOT_CONFIGURED_TEXT);
}

#[tokio::test]
async fn a_compacted_conversation_goes_on_where_the_summary_left_off() {
    let provider = MockProvider::scripted(parse(SCRIPT_WITH_CHILDREN).unwrap());
    let request = LlmRequest {
        messages: vec![
            Message::Summary {
                text: "two answers happened".to_owned(),
                replaced_turns: 2,
            },
            Message::User {
                text: "go on".to_owned(),
            },
        ]
        .into(),
        ..LlmRequest::default()
    };
    let items = collect(&provider, request).await.unwrap();
    assert_eq!(text(&items), "main 3");
}

#[tokio::test]
async fn a_scripted_turn_reports_the_usage_its_file_gives() {
    let script = parse(
        r#"{"turns": [{"text": "hi", "usage": {"input_tokens": 1200, "output_tokens": 30, "cache_read_tokens": 1000}}]}"#,
    )
    .unwrap();
    let provider = MockProvider::scripted(script);
    let chunks = collect(&provider, conversation("hello", 0)).await.unwrap();
    let usage: Vec<&engine_ports::Usage> = chunks
        .iter()
        .filter_map(|chunk| match chunk {
            Ok(Chunk::Usage(usage)) => Some(usage),
            _ => None,
        })
        .collect();
    assert_eq!(usage, [&engine_ports::Usage::new(1200, 30).with_cache(1000, 0)]);
    let (text, _) = error_of(r#"{"turns": [{"text": "hi", "usage": {"input_tokens": "many"}}]}"#);
    assert!(text.contains("turn 1"), "{text}");
}
