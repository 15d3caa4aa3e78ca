//! The `--mock-script` file: [`MockScript`], its turns ([`MockTurn`]), the scripted
//! side conversations ([`MockChild`]) and [`ScriptError`].

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use engine_ports::{LlmError, ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;

/// Largest `delay_ms` a script may ask for.
pub const MAX_DELAY_MS: u64 = 30_000;

/// A scripted conversation: one [`MockTurn`] per model response, played in order.
///
/// Requests that are not turns of a session's own conversation (a compaction summary
/// and any later side request, told apart by
/// [`LlmRequest::purpose`](engine_ports::LlmRequest::purpose)) play the turns of the
/// first [`MockChild`] whose `match` occurs in their first prompt, else the
/// `default_child` turns, else the canned `--mock` answer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MockScript {
    turns: Vec<MockTurn>,
    children: Vec<MockChild>,
    default_child: Option<Vec<MockTurn>>,
}

/// The script of side conversations whose first prompt contains `match_text`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MockChild {
    /// A substring of the side conversation's first prompt (not empty).
    pub match_text: String,
    /// Its turns, played from the first for each such conversation.
    pub turns: Vec<MockTurn>,
}

/// How a scripted turn ends after its chunks.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum MockEnding {
    /// The turn completes.
    #[default]
    Done,
    /// The output limit cuts the turn off: `Truncated`, then `Done` (file format:
    /// `"stop": "max_tokens"`).
    Truncated,
    /// The stream fails with this error after the chunks.
    Error(LlmError),
    /// The stream waits until the request is cancelled.
    Hang,
}

/// One scripted model response.
///
/// The file format sets `text`, `tool_calls`, `delay`, the ending and `usage`; the
/// other fields let programs script failures (tests, the conformance suite).
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
            ..Self::default()
        }
    }

    /// The same script with one more child, tried after the earlier ones.
    #[must_use]
    pub fn with_child(
        mut self,
        match_text: impl Into<String>,
        turns: impl IntoIterator<Item = MockTurn>,
    ) -> Self {
        self.children.push(MockChild {
            match_text: match_text.into(),
            turns: turns.into_iter().collect(),
        });
        self
    }

    /// The same script with `turns` for side conversations no child matches.
    #[must_use]
    pub fn with_default_child(mut self, turns: impl IntoIterator<Item = MockTurn>) -> Self {
        self.default_child = Some(turns.into_iter().collect());
        self
    }

    /// The turns, in order.
    pub fn turns(&self) -> &[MockTurn] {
        &self.turns
    }

    /// The children, in the order they are tried.
    pub fn children(&self) -> &[MockChild] {
        &self.children
    }

    /// The turns of side conversations no child matches, if any.
    pub fn default_child(&self) -> Option<&[MockTurn]> {
        self.default_child.as_deref()
    }

    /// The turns a side conversation whose first prompt is `first_prompt` plays: the
    /// first child whose `match` occurs in it, else the default child; `None` when
    /// neither applies.
    pub fn child_turns(&self, first_prompt: &str) -> Option<&[MockTurn]> {
        self.children
            .iter()
            .find(|child| first_prompt.contains(&child.match_text))
            .map(|child| child.turns.as_slice())
            .or_else(|| self.default_child())
    }

    /// Reads and validates a script file.
    ///
    /// # Errors
    /// [`ScriptError`] naming the file, and the turn when one is at fault.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ScriptError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|error| ScriptError {
            path: path.to_path_buf(),
            child: None,
            turn: None,
            problem: format!("cannot read it: {error}"),
        })?;
        Self::from_json(&text, path)
    }

    /// Parses and validates script JSON; `origin` names it in errors (a path, or a
    /// label such as `embedded demo script`).
    ///
    /// The format: `{"turns": [{"text", "tool_calls": [{"id", "name", "args"}],
    /// "delay_ms", "stop", "usage"}], "children": [{"match", "turns"}], "default_child": {"turns"}}`.
    /// `usage` is the token counts the turn reports (`input_tokens`, `output_tokens`,
    /// and optionally `cache_read_tokens`, `cache_write_tokens`).
    /// Each turn needs `text` and/or `tool_calls`; `delay_ms` is 0–30000; `stop` is
    /// `end_turn` (the default) or `max_tokens` (the output limit cut the turn off); unknown
    /// fields are errors; `turns` and every child's `turns` hold at least one turn; a
    /// child's `match` is not empty. A call without `id` gets `call_<turn>_<index>`
    /// (both 1-based). `args` defaults to `{}`; a JSON string is taken as the raw
    /// argument text (so a script can send invalid arguments), any other value is
    /// sent as its compact JSON.
    ///
    /// # Errors
    /// [`ScriptError`] naming `origin`, and the child and turn when one is at fault.
    pub fn from_json(json: &str, origin: impl AsRef<Path>) -> Result<Self, ScriptError> {
        let origin = origin.as_ref();
        let fail = |child: Option<String>, turn: Option<usize>, problem: String| ScriptError {
            path: origin.to_path_buf(),
            child,
            turn,
            problem,
        };
        let file: FileScript = serde_json::from_str::<Value>(json)
            .map_err(|error| fail(None, None, format!("invalid JSON: {error}")))
            .and_then(|value| {
                serde_json::from_value(value).map_err(|error| fail(None, None, format!("{error}")))
            })?;
        let turns = parse_turns(file.turns, &|turn, problem| fail(None, turn, problem))?;
        let mut children = Vec::with_capacity(file.children.len());
        for (position, value) in file.children.into_iter().enumerate() {
            let label = format!("children[{position}]");
            let child: FileChild = serde_json::from_value(value)
                .map_err(|error| fail(Some(label.clone()), None, error.to_string()))?;
            if child.match_text.is_empty() {
                return Err(fail(
                    Some(label),
                    None,
                    "`match` is empty, which would match every prompt: give a substring of the child's first prompt, or use `default_child`".to_owned(),
                ));
            }
            let turns = parse_turns(child.turns, &|turn, problem| {
                fail(Some(label.clone()), turn, problem)
            })?;
            children.push(MockChild {
                match_text: child.match_text,
                turns,
            });
        }
        let default_child = match file.default_child {
            None => None,
            Some(value) => {
                let label = "default_child".to_owned();
                let child: FileDefaultChild = serde_json::from_value(value)
                    .map_err(|error| fail(Some(label.clone()), None, error.to_string()))?;
                Some(parse_turns(child.turns, &|turn, problem| {
                    fail(Some(label.clone()), turn, problem)
                })?)
            }
        };
        Ok(Self {
            turns,
            children,
            default_child,
        })
    }
}

/// Validates one list of turns (not empty, each turn well-formed); `fail` builds the
/// error for a turn (1-based) or the list.
fn parse_turns(
    values: Vec<Value>,
    fail: &dyn Fn(Option<usize>, String) -> ScriptError,
) -> Result<Vec<MockTurn>, ScriptError> {
    if values.is_empty() {
        return Err(fail(
            None,
            "`turns` is empty: there are no turns to play".to_owned(),
        ));
    }
    let mut turns = Vec::with_capacity(values.len());
    for (position, value) in values.into_iter().enumerate() {
        let number = position + 1;
        let turn: FileTurn =
            serde_json::from_value(value).map_err(|error| fail(Some(number), error.to_string()))?;
        turns.push(
            turn.into_turn(number)
                .map_err(|problem| fail(Some(number), problem))?,
        );
    }
    Ok(turns)
}

/// A mock script that cannot be used. Its message names the file and, when one is at
/// fault, the child (`children[i]`, `default_child`) and the turn (1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptError {
    path: PathBuf,
    child: Option<String>,
    turn: Option<usize>,
    problem: String,
}

impl ScriptError {
    /// The script file (or label).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The child at fault (`children[i]`, 0-based, or `default_child`), if any.
    pub fn child(&self) -> Option<&str> {
        self.child.as_deref()
    }

    /// The 1-based turn at fault (of the child, when one is named), if any.
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
        if let Some(child) = &self.child {
            write!(f, ", {child}")?;
        }
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
    #[serde(default)]
    children: Vec<Value>,
    #[serde(default)]
    default_child: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename = "child")]
struct FileChild {
    #[serde(rename = "match")]
    match_text: String,
    turns: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename = "default child")]
struct FileDefaultChild {
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
    #[serde(default)]
    stop: Option<FileStop>,
    #[serde(default)]
    usage: Option<Usage>,
}

/// How a scripted turn ends.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum FileStop {
    EndTurn,
    MaxTokens,
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
            ending: match self.stop {
                None | Some(FileStop::EndTurn) => MockEnding::Done,
                Some(FileStop::MaxTokens) => MockEnding::Truncated,
            },
            usage: self.usage,
            ..MockTurn::default()
        })
    }
}
