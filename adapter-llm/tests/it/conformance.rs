//! The `llm_stream` conformance suite, run against the mock provider.

use std::sync::Arc;

use adapter_llm::{MockEnding, MockProvider, MockScript, MockTurn};
use engine_ports::testkit::{ScriptedTurn, TurnEnding, llm_stream};
use engine_ports::{Chunk, LlmProvider, Usage};

/// Maps a suite turn onto the mock's own turn.
fn mock_turn(turn: ScriptedTurn) -> MockTurn {
    let mut mock = MockTurn {
        delay: turn.delay,
        start_error: turn.start_error,
        ending: match turn.ending {
            TurnEnding::Done => MockEnding::Done,
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
            Chunk::Reasoning(_) | Chunk::Done => {}
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
