//! [`ScriptedLlm`]: a model that plays back scripted turns.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt as _;
use tokio_util::sync::CancellationToken;

use crate::call::ToolCall;
use crate::llm::{Capabilities, Chunk, ChunkStream, LlmError, LlmProvider, LlmRequest};
use crate::usage::Usage;

/// How a scripted turn ends after its chunks.
#[derive(Clone, Debug, PartialEq)]
pub enum TurnEnding {
    /// A [`Chunk::Done`] item.
    Done,
    /// The output limit cut the answer off: [`Chunk::Truncated`], then
    /// [`Chunk::Done`].
    Truncated,
    /// An `Err` item.
    Error(LlmError),
    /// Waits until the request's token is cancelled, then yields
    /// [`LlmError::Cancelled`] (a model that never finishes).
    Hang,
}

/// One scripted model answer.
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptedTurn {
    /// Waited before the first chunk (cancellable).
    pub delay: Duration,
    /// When set, `stream` itself fails with it (the request never started).
    pub start_error: Option<LlmError>,
    /// The chunks, in order.
    pub chunks: Vec<Chunk>,
    /// What follows the chunks.
    pub ending: TurnEnding,
}

impl ScriptedTurn {
    /// A turn with no chunks yet that ends with `Done`.
    pub fn new() -> Self {
        Self {
            delay: Duration::ZERO,
            start_error: None,
            chunks: Vec::new(),
            ending: TurnEnding::Done,
        }
    }

    /// A turn streaming `text`.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new().with_text(text)
    }

    /// A turn that calls one tool.
    pub fn call(id: &str, name: &str, args: &str) -> Self {
        Self::new().with_call(id, name, args)
    }

    /// Appends a text chunk.
    #[must_use]
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.chunks.push(Chunk::Text(text.into()));
        self
    }

    /// Appends a reasoning chunk.
    #[must_use]
    pub fn with_reasoning(mut self, text: impl Into<String>) -> Self {
        self.chunks.push(Chunk::Reasoning(text.into()));
        self
    }

    /// Appends a tool call.
    #[must_use]
    pub fn with_call(mut self, id: &str, name: &str, args: &str) -> Self {
        self.chunks.push(Chunk::ToolCall(ToolCall::new(id, name, args)));
        self
    }

    /// Appends a usage chunk.
    #[must_use]
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.chunks
            .push(Chunk::Usage(Usage::new(input_tokens, output_tokens)));
        self
    }

    /// Waits `delay` before streaming.
    #[must_use]
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Ends the turn with an error item.
    #[must_use]
    pub fn ending_with_error(mut self, error: LlmError) -> Self {
        self.ending = TurnEnding::Error(error);
        self
    }

    /// Never finishes until cancelled.
    #[must_use]
    pub fn hanging(mut self) -> Self {
        self.ending = TurnEnding::Hang;
        self
    }

    /// Fails before starting.
    pub fn start_error(error: LlmError) -> Self {
        Self {
            start_error: Some(error),
            ..Self::new()
        }
    }
}

impl Default for ScriptedTurn {
    fn default() -> Self {
        Self::new()
    }
}

/// Plays back scripted turns, one per request, shared by every session; once the
/// script runs out it answers with a final text turn saying so. Keeps every request
/// for assertions.
#[derive(Debug, Default)]
pub struct ScriptedLlm {
    turns: Mutex<VecDeque<ScriptedTurn>>,
    requests: Mutex<Vec<LlmRequest>>,
}

/// The text of the turn a [`ScriptedLlm`] gives once its script is exhausted.
pub const SCRIPT_EXHAUSTED_TEXT: &str = "script exhausted";

impl ScriptedLlm {
    /// A model playing `turns` in order.
    pub fn new(turns: impl IntoIterator<Item = ScriptedTurn>) -> Self {
        Self {
            turns: Mutex::new(turns.into_iter().collect()),
            requests: Mutex::default(),
        }
    }

    /// Appends turns to the script.
    pub fn push(&self, turn: ScriptedTurn) {
        self.turns
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push_back(turn);
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<LlmRequest> {
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Turns not played yet.
    pub fn remaining(&self) -> usize {
        self.turns
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }
}

#[async_trait]
impl LlmProvider for ScriptedLlm {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            image: true,
            audio: true,
            pdf: true,
        }
    }

    async fn stream(&self, request: LlmRequest, cancel: CancellationToken) -> Result<ChunkStream, LlmError> {
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(request);
        let turn = self
            .turns
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop_front()
            .unwrap_or_else(|| ScriptedTurn::text(SCRIPT_EXHAUSTED_TEXT));
        if let Some(error) = turn.start_error {
            return Err(error);
        }
        Ok(play(turn, cancel))
    }
}

fn play(turn: ScriptedTurn, cancel: CancellationToken) -> ChunkStream {
    let ScriptedTurn {
        delay,
        chunks,
        ending,
        ..
    } = turn;
    let end_cancel = cancel.clone();
    let delayed = futures::stream::once(async move {
        if delay.is_zero() {
            return None;
        }
        tokio::select! {
            () = cancel.cancelled() => Some(Err(LlmError::Cancelled)),
            () = tokio::time::sleep(delay) => None,
        }
    })
    .filter_map(futures::future::ready);
    let body = futures::stream::iter(chunks.into_iter().map(Ok));
    let truncated = (ending == TurnEnding::Truncated).then_some(Ok(Chunk::Truncated));
    let body = body.chain(futures::stream::iter(truncated));
    let end = futures::stream::once(async move {
        match ending {
            TurnEnding::Done | TurnEnding::Truncated => Ok(Chunk::Done),
            TurnEnding::Error(error) => Err(error),
            TurnEnding::Hang => {
                end_cancel.cancelled().await;
                Err(LlmError::Cancelled)
            }
        }
    });
    // Stop right after the first error item (the delay may be cancelled).
    let mut failed = false;
    delayed
        .chain(body)
        .chain(end)
        .take_while(move |item| {
            let keep = !failed;
            failed |= item.is_err();
            futures::future::ready(keep)
        })
        .boxed()
}
