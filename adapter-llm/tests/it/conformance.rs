//! The `llm_stream` conformance suite, run against the mock provider and, over
//! recorded SSE bodies, the OpenAI chat provider. (Anthropic cannot express empty
//! argument text on the wire, one of the suite's cases; its streams are checked with
//! `check_contract` in every fixture test instead.)

use std::sync::Arc;

use adapter_llm::{MockEnding, MockProvider, MockScript, MockTurn, OpenAiChatProvider};
use engine_ports::testkit::{ScriptedTurn, TurnEnding, llm_stream};
use engine_ports::{Chunk, LlmProvider, Usage};
use serde_json::json;

use crate::support::config;
use crate::support::fixture::{FixtureServer, Piece, Reply, data};

/// Maps a suite turn onto the mock's own turn.
fn mock_turn(turn: ScriptedTurn) -> MockTurn {
    let mut mock = MockTurn {
        delay: turn.delay,
        start_error: turn.start_error,
        ending: match turn.ending {
            TurnEnding::Done => MockEnding::Done,
            TurnEnding::Truncated => MockEnding::Truncated,
            TurnEnding::Error(error) => MockEnding::Error(error),
            TurnEnding::Hang => MockEnding::Hang,
        },
        ..MockTurn::default()
    };
    for chunk in turn.chunks {
        match chunk {
            Chunk::Text(text) => mock.text.push_str(&text),
            Chunk::ToolCall(call) => mock.tool_calls.push(call),
            Chunk::Usage(usage) => {
                let mut total = mock.usage.unwrap_or_default();
                total += usage;
                mock.usage = Some(total);
            }
            Chunk::Reasoning(_) | Chunk::Done | Chunk::Truncated | Chunk::Retry(_) => {}
        }
    }
    mock
}

#[tokio::test]
async fn the_mock_passes_the_stream_suite() {
    llm_stream::run(|turn| {
        Arc::new(MockProvider::scripted(MockScript::new([mock_turn(turn)]))) as Arc<dyn LlmProvider>
    })
    .await;
    // The mapping keeps usage whole.
    assert_eq!(
        mock_turn(ScriptedTurn::text("x").with_usage(1, 2)).usage,
        Some(Usage::new(1, 2))
    );
}

/// The SSE body an OpenAI-compatible server would send for a suite turn: text deltas,
/// each call as one fragment, usage, then the ending (a finish marker, a dropped
/// connection, or silence until cancelled). A start error becomes a 401, a context
/// refusal OpenAI's 400 `context_length_exceeded`.
fn openai_reply(turn: ScriptedTurn) -> Reply {
    if let Some(error) = turn.start_error {
        if error.is_context_too_long() {
            return Reply::json(
                400,
                &json!({"error": {"message": error.to_string(), "type": "invalid_request_error",
                    "code": "context_length_exceeded"}}),
            );
        }
        return Reply::json(401, &json!({"error": {"message": error.to_string()}}));
    }
    let mut pieces = Vec::new();
    let mut index = 0u64;
    for chunk in turn.chunks {
        let line = match chunk {
            Chunk::Text(text) => data(&json!({"choices": [{"index": 0, "delta": {"content": text}}]})),
            Chunk::Reasoning(text) => {
                data(&json!({"choices": [{"index": 0, "delta": {"reasoning_content": text}}]}))
            }
            Chunk::ToolCall(call) => {
                index += 1;
                data(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [{
                    "index": index - 1, "id": call.id().as_str(), "type": "function",
                    "function": {"name": call.name(), "arguments": call.args()}}]}}]}))
            }
            Chunk::Usage(usage) => data(&json!({"choices": [], "usage": {
                "prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens}})),
            Chunk::Done | Chunk::Truncated | Chunk::Retry(_) => continue,
        };
        pieces.push(Piece::Data(line.into_bytes()));
    }
    match turn.ending {
        TurnEnding::Done | TurnEnding::Truncated => {
            let reason = if turn.ending == TurnEnding::Done {
                "stop"
            } else {
                "length"
            };
            pieces.push(Piece::Data(
                data(&json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})).into_bytes(),
            ));
            pieces.push(Piece::Data(b"data: [DONE]\n\n".to_vec()));
        }
        TurnEnding::Error(_) => pieces.push(Piece::Cut),
        TurnEnding::Hang => pieces.push(Piece::Hang),
    }
    Reply::sse_pieces(pieces)
}

#[tokio::test]
async fn openai_chat_passes_the_stream_suite_over_recorded_bodies() {
    llm_stream::run(|turn| {
        let server = FixtureServer::start_now(vec![openai_reply(turn)]);
        let provider = OpenAiChatProvider::new(config(format!("{}/v1", server.root()))).unwrap();
        Arc::new(provider) as Arc<dyn LlmProvider>
    })
    .await;
}
