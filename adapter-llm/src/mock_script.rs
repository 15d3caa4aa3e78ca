//! The `--mock-script` file: [`MockScript`], its turns ([`MockTurn`]) and
//! [`ScriptError`].

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use engine_ports::{LlmError, ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;

/// Largest `delay_ms` a script may ask for.
pub const MAX_DELAY_MS: u64 = 30_000;

/// A scripted conversation: one [`MockTurn`] per model response, played in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MockScript {
    turns: Vec<MockTurn>,
}

/// How a scripted turn ends after its chunks.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum MockEnding {
    /// The turn completes.
    #[default]
    Done,
    /// The stream fails with this error after the chunks.
    Error(LlmError),
    /// The stream waits until the request is cancelled.
    Hang,
}

/// One scripted model response.
///
/// The file format sets `text`, `tool_calls` and `delay`; the other fields let
/// programs script usage and failures (tests, the conformance suite).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MockTurn {
    /// Waited (cancellably) before anything streams.
    pub delay: Duration,
    /// Assistant text, streamed in a few deltas.
    pub text: String,
    /// Tool calls, emitted whole and in order after the text.
    pub tool_calls: Vec<ToolCall>,
    /// Usage reported after the calls.
    pub usage: Option<Usage>,
    /// What follows.
    pub ending: MockEnding,
    /// When set, the request fails before starting.
    pub start_error: Option<LlmError>,
}

impl MockTurn {
    /// A turn answering `text`.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }

    /// The same turn with one more tool call.
    #[must_use]
    pub fn with_call(mut self, call: ToolCall) -> Self {
        self.tool_calls.push(call);
        self
    }

    /// The same turn waiting `delay` first.
    #[must_use]
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

impl MockScript {
    /// A script of `turns`.
    pub fn new(turns: impl IntoIterator<Item = MockTurn>) -> Self {
        Self {
            turns: turns.into_iter().collect(),
        }
    }

    /// The turns, in order.
    pub fn turns(&self) -> &[MockTurn] {
        &self.turns
    }

    /// Reads and validates a script file.
    ///
    /// # Errors
    /// [`ScriptError`] naming the file, and the turn when one is at fault.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ScriptError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|error| ScriptError {
            path: path.to_path_buf(),
            turn: None,
            problem: format!("cannot read it: {error}"),
        })?;
        Self::from_json(&text, path)
    }

    /// Parses and validates script JSON; `origin` names it in errors (a path, or a
    /// label such as `embedded demo script`).
    ///
    /// The format: `{"turns": [{"text", "tool_calls": [{"id", "name", "args"}],
    /// "delay_ms"}]}`. Each turn needs `text` and/or `tool_calls`; `delay_ms` is
    /// 0–30000; unknown fields are errors. A call without `id` gets
    /// `call_<turn>_<index>` (both 1-based). `args` defaults to `{}`; a JSON string is
    /// taken as the raw argument text (so a script can send invalid arguments), any
    /// other value is sent as its compact JSON.
    ///
    /// # Errors
    /// [`ScriptError`] naming `origin`, and the turn when one is at fault.
    pub fn from_json(json: &str, origin: impl AsRef<Path>) -> Result<Self, ScriptError> {
        let origin = origin.as_ref();
        let fail = |turn: Option<usize>, problem: String| ScriptError {
            path: origin.to_path_buf(),
            turn,
            problem,
        };
        let file: FileScript = serde_json::from_str::<Value>(json)
            .map_err(|error| fail(None, format!("invalid JSON: {error}")))
            .and_then(|value| {
                serde_json::from_value(value).map_err(|error| fail(None, format!("{error}")))
            })?;
        if file.turns.is_empty() {
            return Err(fail(None, "the script has no turns".to_owned()));
        }
        let mut turns = Vec::with_capacity(file.turns.len());
        for (position, value) in file.turns.into_iter().enumerate() {
            let number = position + 1;
            let turn: FileTurn =
                serde_json::from_value(value).map_err(|error| fail(Some(number), error.to_string()))?;
            turns.push(
                turn.into_turn(number)
                    .map_err(|problem| fail(Some(number), problem))?,
            );
        }
        Ok(Self { turns })
    }
}

/// A mock script that cannot be used. Its message names the file and, when one is at
/// fault, the turn (1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptError {
    path: PathBuf,
    turn: Option<usize>,
    problem: String,
}

impl ScriptError {
    /// The script file (or label).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The 1-based turn at fault, if any.
    pub fn turn(&self) -> Option<usize> {
        self.turn
    }

    /// What is wrong.
    pub fn problem(&self) -> &str {
        &self.problem
    }
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "mock script {}", self.path.display())?;
        if let Some(turn) = self.turn {
            write!(f, ", turn {turn}")?;
        }
        write!(f, ": {}", self.problem)
    }
}

impl std::error::Error for ScriptError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename = "script")]
struct FileScript {
    turns: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename = "turn")]
struct FileTurn {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<FileCall>>,
    #[serde(default)]
    delay_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename = "tool call")]
struct FileCall {
    #[serde(default)]
    id: Option<String>,
    name: String,
    #[serde(default)]
    args: Option<Value>,
}

impl FileTurn {
    fn into_turn(self, number: usize) -> Result<MockTurn, String> {
        let text = self.text.unwrap_or_default();
        let calls = self.tool_calls.unwrap_or_default();
        if text.is_empty() && calls.is_empty() {
            return Err("the turn is empty: give it `text` and/or `tool_calls`".to_owned());
        }
        let delay_ms = self.delay_ms.unwrap_or(0);
        if delay_ms > MAX_DELAY_MS {
            return Err(format!("delay_ms {delay_ms} is out of range (0–{MAX_DELAY_MS})"));
        }
        let mut tool_calls = Vec::with_capacity(calls.len());
        for (position, call) in calls.into_iter().enumerate() {
            let index = position + 1;
            if call.name.is_empty() {
                return Err(format!("tool call {index} has an empty `name`"));
            }
            let id = call
                .id
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| format!("call_{number}_{index}"));
            let args = match call.args {
                None => "{}".to_owned(),
                Some(Value::String(raw)) => raw,
                Some(other) => other.to_string(),
            };
            tool_calls.push(ToolCall::new(id, call.name, args));
        }
        Ok(MockTurn {
            delay: Duration::from_millis(delay_ms),
            text,
            tool_calls,
            ..MockTurn::default()
        })
    }
}
