//! The offline model: [`MockProvider`] for `--mock` (one canned answer) and
//! `--mock-script` (a [`MockScript`] replayed per session).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use engine_ports::{
    Capabilities, Chunk, ChunkStream, Conversation, LlmError, LlmProvider, LlmRequest, Message, WeakPrefix,
};
use futures::StreamExt as _;
use tokio_util::sync::CancellationToken;

use crate::mock_script::{MockEnding, MockScript, MockTurn, ScriptError};

/// The answer of `--mock`: no real model is configured, and how to pick one.
pub const MOCK_NOT_CONFIGURED_TEXT: &str = "No real model is configured: this answer comes from the built-in \
mock model (--mock). To talk to a real model, pick a provider with --provider openai-chat or --provider \
anthropic (the key comes from OPENAI_API_KEY or ANTHROPIC_API_KEY; --base-url and --model are optional), or \
replay a scripted conversation with --mock-script FILE.";

/// The final answer once a script has run out of turns.
pub const MOCK_SCRIPT_EXHAUSTED_TEXT: &str =
    "The mock script is exhausted: every scripted turn has been played, so this conversation ends here.";

/// Most text deltas one scripted text is streamed in.
const MAX_TEXT_DELTAS: usize = 4;

/// A model that needs no network: a canned answer, or a script.
///
/// Shared by every session: the turn a request gets is the number of model turns
/// already in its conversation (assistant messages, plus those a compaction summary
/// stands for), so each session replays the script from its first turn, compacted or
/// not. A request that is not a turn of a session's own conversation plays its
/// child's turns the same way, from the child's first turn (see [`MockScript`]).
/// Once a script runs out, every further request gets a final text turn
/// ([`MOCK_SCRIPT_EXHAUSTED_TEXT`]).
#[derive(Clone, Debug)]
pub struct MockProvider {
    script: Option<Arc<MockScript>>,
    /// Model turns counted in recent conversations (see [`TurnCounts`]).
    counted: Arc<TurnCounts>,
}

/// Conversations whose model turns were counted most recently, with their counts.
const COUNTS_KEPT: usize = 32;

/// The model turns of the conversations recently asked about, so that the next
/// request of a conversation counts only the messages added since (a session's
/// requests share its messages: see [`Conversation`]). A conversation whose messages
/// were copied or rewritten since is counted again from its start.
#[derive(Debug, Default)]
struct TurnCounts(Mutex<VecDeque<(WeakPrefix, u64)>>);

impl TurnCounts {
    /// The model turns in `messages`.
    fn of(&self, messages: &Conversation) -> u64 {
        let mut counts = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let known = counts
            .iter()
            .enumerate()
            .filter(|(_, (prefix, _))| prefix.is_prefix_of(messages))
            .max_by_key(|(_, (prefix, _))| prefix.len())
            .map(|(at, (prefix, turns))| (at, prefix.len(), *turns));
        let (from, before) = match known {
            Some((at, len, turns)) => {
                counts.remove(at);
                (len, turns)
            }
            None => (0, 0),
        };
        let turns = before + messages.iter().skip(from).map(Message::model_turns).sum::<u64>();
        if counts.len() == COUNTS_KEPT {
            counts.pop_back();
        }
        counts.push_front((messages.downgrade(), turns));
        turns
    }
}

impl MockProvider {
    /// `--mock`: every request gets [`MOCK_NOT_CONFIGURED_TEXT`].
    pub fn canned() -> Self {
        Self {
            script: None,
            counted: Arc::default(),
        }
    }

    /// `--mock-script`: plays `script`.
    pub fn scripted(script: MockScript) -> Self {
        Self {
            script: Some(Arc::new(script)),
            counted: Arc::default(),
        }
    }

    /// Reads, validates and plays the script at `path`.
    ///
    /// # Errors
    /// [`ScriptError`] naming the file and the turn at fault.
    pub fn from_script_file(path: impl AsRef<std::path::Path>) -> Result<Self, ScriptError> {
        MockScript::from_file(path).map(Self::scripted)
    }

    /// The turn a request gets.
    fn turn_for(&self, request: &LlmRequest) -> MockTurn {
        let Some(script) = &self.script else {
            return MockTurn::text(MOCK_NOT_CONFIGURED_TEXT);
        };
        let turns = if request.purpose.is_conversation() {
            script.turns()
        } else {
            let first_prompt = request
                .messages
                .iter()
                .find_map(|m| match m {
                    Message::User { text } => Some(text.as_str()),
                    _ => None,
                })
                .unwrap_or_default();
            match script.child_turns(first_prompt) {
                Some(turns) => turns,
                None => return MockTurn::text(MOCK_NOT_CONFIGURED_TEXT),
            }
        };
        let played = self.counted.of(&request.messages);
        usize::try_from(played)
            .ok()
            .and_then(|index| turns.get(index))
            .cloned()
            .unwrap_or_else(|| MockTurn::text(MOCK_SCRIPT_EXHAUSTED_TEXT))
    }
}

#[async_trait]
impl LlmProvider for MockProvider {
    /// Scripts can hold anything, so every part kind is accepted.
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            image: true,
            audio: true,
            pdf: true,
        }
    }

    async fn stream(&self, request: LlmRequest, cancel: CancellationToken) -> Result<ChunkStream, LlmError> {
        let turn = self.turn_for(&request);
        if let Some(error) = turn.start_error {
            return Err(error);
        }
        Ok(play(turn, cancel))
    }
}

/// Splits `text` into at most [`MAX_TEXT_DELTAS`] pieces at whitespace.
pub(crate) fn text_deltas(text: &str) -> Vec<String> {
    let words: Vec<&str> = text.split_inclusive(char::is_whitespace).collect();
    if words.is_empty() {
        return Vec::new();
    }
    let pieces = words.len().min(MAX_TEXT_DELTAS);
    (0..pieces)
        .map(|piece| {
            let start = piece * words.len() / pieces;
            let end = (piece + 1) * words.len() / pieces;
            words[start..end].concat()
        })
        .collect()
}

struct Player {
    delay: Option<std::time::Duration>,
    items: VecDeque<Chunk>,
    ending: Option<MockEnding>,
    cancel: CancellationToken,
}

impl Player {
    async fn next(&mut self) -> Option<Result<Chunk, LlmError>> {
        if let Some(delay) = self.delay.take().filter(|d| !d.is_zero()) {
            tokio::select! {
                () = self.cancel.cancelled() => return self.cancelled(),
                () = tokio::time::sleep(delay) => {}
            }
        }
        if self.ending.is_some() && self.cancel.is_cancelled() {
            return self.cancelled();
        }
        if let Some(chunk) = self.items.pop_front() {
            return Some(Ok(chunk));
        }
        match self.ending.take()? {
            MockEnding::Done | MockEnding::Truncated => Some(Ok(Chunk::Done)),
            MockEnding::Error(error) => Some(Err(error)),
            MockEnding::Hang => {
                self.cancel.cancelled().await;
                Some(Err(LlmError::Cancelled))
            }
        }
    }

    fn cancelled(&mut self) -> Option<Result<Chunk, LlmError>> {
        self.items.clear();
        self.ending = None;
        Some(Err(LlmError::Cancelled))
    }
}

fn play(turn: MockTurn, cancel: CancellationToken) -> ChunkStream {
    let mut items: VecDeque<Chunk> = text_deltas(&turn.text).into_iter().map(Chunk::Text).collect();
    items.extend(turn.tool_calls.into_iter().map(Chunk::ToolCall));
    items.extend(turn.usage.map(Chunk::Usage));
    if turn.ending == MockEnding::Truncated {
        items.push_back(Chunk::Truncated);
    }
    let player = Player {
        delay: Some(turn.delay),
        items,
        ending: Some(turn.ending),
        cancel,
    };
    futures::stream::unfold(player, |mut player| async move {
        player.next().await.map(|item| (item, player))
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_streams_in_a_few_deltas() {
        assert_eq!(text_deltas(""), Vec::<String>::new());
        assert_eq!(text_deltas("done"), vec!["done"]);
        assert_eq!(text_deltas("hello world"), vec!["hello ", "world"]);
        let long = "one two three four five six seven eight nine";
        let deltas = text_deltas(long);
        assert_eq!(deltas.len(), 4);
        assert_eq!(deltas.concat(), long);
    }

    fn user(text: &str) -> Message {
        Message::User {
            text: text.to_owned(),
        }
    }

    fn assistant(text: &str) -> Message {
        Message::Assistant {
            text: text.to_owned(),
            tool_calls: Vec::new(),
        }
    }

    #[test]
    fn turns_are_counted_from_where_a_conversation_was_last_counted() {
        let counts = TurnCounts::default();
        let mut session = Conversation::new();
        let mut other = Conversation::new();
        for round in 1..=20_u64 {
            session.push(user("go"));
            other.push(user("go"));
            other.push(assistant("a"));
            assert_eq!(counts.of(&other), round);
            assert_eq!(counts.of(&session), round - 1);
            session.push(assistant("b"));
        }
        // Past the counts kept, a conversation is counted again from its start.
        for n in 0..COUNTS_KEPT {
            let mut stranger = Conversation::new();
            stranger.push(user(&n.to_string()));
            assert_eq!(counts.of(&stranger), 0);
        }
        assert_eq!(counts.of(&session), 20);
    }

    #[test]
    fn a_rewritten_conversation_is_counted_as_it_is_now() {
        let counts = TurnCounts::default();
        let mut session = Conversation::new();
        for _ in 0..5 {
            session.push(user("go"));
            session.push(assistant("a"));
        }
        assert_eq!(counts.of(&session), 5);
        // Compaction: the turns give way to a summary standing for them.
        let mut compacted = session.prefix(0);
        compacted.push(Message::Summary {
            text: "summary".to_owned(),
            replaced_turns: 4,
        });
        compacted.push(user("go"));
        assert_eq!(counts.of(&compacted), 4);
        // Rewinding: the same messages' first half, then a different answer.
        let mut rewound = session.prefix(4);
        rewound.push(assistant("other"));
        assert_eq!(counts.of(&rewound), 3);
        assert_eq!(counts.of(&session), 5);
    }

    #[test]
    fn the_canned_text_names_the_three_model_flags() {
        for flag in ["--mock", "--mock-script", "--provider"] {
            assert!(MOCK_NOT_CONFIGURED_TEXT.contains(flag), "{flag}");
        }
    }
}
