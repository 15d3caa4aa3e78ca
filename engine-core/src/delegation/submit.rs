//! `output_schema`: a child must finish through a [`SubmitResultTool`] whose
//! arguments are validated against the schema ([`OutputSchema`], the `jsonschema`
//! crate), with at most [`SUBMIT_ATTEMPTS`] attempts.

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use engine_ports::{ToolCall, ToolResult, ToolSpec, clip_chars};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::refusal;
use crate::environment::Environment;
use crate::tool::{Tool, ToolError};

/// The name of the tool a child with an `output_schema` finishes through.
pub const SUBMIT_RESULT_TOOL_NAME: &str = "SubmitResult";

/// Attempts a child gets to submit a valid result: invalid `SubmitResult` calls and
/// reminders after it ended without submitting both count.
pub const SUBMIT_ATTEMPTS: u32 = 3;

/// Largest `output_schema`, serialized.
pub const MAX_OUTPUT_SCHEMA_BYTES: usize = 64 * 1024;

/// Longest validation failure quoted, in characters.
const FAILURE_CHARS: usize = 600;

/// A compiled `output_schema`.
#[derive(Debug)]
pub(crate) struct OutputSchema {
    validator: jsonschema::Validator,
    /// The schema does not describe an object, so `SubmitResult` takes it under
    /// `result` (tool arguments are always an object).
    wrapped: bool,
    /// The parameters of `SubmitResult`.
    parameters: Value,
}

impl OutputSchema {
    /// Compiles `schema`; patterns use the linear-time `regex` engine, and no `$ref`
    /// is fetched.
    ///
    /// # Errors
    /// A text saying why the schema is unusable.
    pub(crate) fn compile(schema: &Value) -> Result<Self, String> {
        let size = serde_json::to_vec(schema).map_or(usize::MAX, |bytes| bytes.len());
        if size > MAX_OUTPUT_SCHEMA_BYTES {
            return Err(format!(
                "it is {size} bytes, over the limit of {MAX_OUTPUT_SCHEMA_BYTES} bytes"
            ));
        }
        if !schema.is_object() {
            return Err("it must be a JSON Schema object".to_owned());
        }
        let validator = jsonschema::options()
            .with_pattern_options(jsonschema::PatternOptions::regex().size_limit(1 << 20))
            .build(schema)
            .map_err(|error| {
                format!(
                    "it is not a valid JSON Schema: {}",
                    clip_chars(&error.to_string(), FAILURE_CHARS)
                )
            })?;
        let wrapped = schema.get("type").and_then(Value::as_str) != Some("object");
        let parameters = if wrapped {
            json!({
                "type": "object",
                "properties": {"result": schema},
                "required": ["result"],
            })
        } else {
            schema.clone()
        };
        Ok(Self {
            validator,
            wrapped,
            parameters,
        })
    }

    /// The submitted value of `args`, or why it does not match.
    fn check(&self, args: &Value) -> Result<Value, String> {
        let value = if self.wrapped {
            match args.get("result") {
                Some(value) => value,
                None => return Err("the arguments have no `result`".to_owned()),
            }
        } else {
            args
        };
        let failures: Vec<String> = self
            .validator
            .iter_errors(value)
            .take(3)
            .map(|error| {
                let path = error.instance_path().to_string();
                let at = if path.is_empty() {
                    "at the top level".to_owned()
                } else {
                    format!("at {path}")
                };
                format!("{at}: {error}")
            })
            .collect();
        if failures.is_empty() {
            Ok(value.clone())
        } else {
            Err(clip_chars(&failures.join("; "), FAILURE_CHARS).into_owned())
        }
    }
}

/// What a child submitted so far.
#[derive(Default)]
pub(crate) struct Submission {
    state: Mutex<SubmitState>,
}

#[derive(Default)]
struct SubmitState {
    attempts: u32,
    last_failure: Option<String>,
    accepted: Option<Value>,
}

impl Submission {
    fn lock(&self) -> std::sync::MutexGuard<'_, SubmitState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The accepted value, if any.
    pub(crate) fn accepted(&self) -> Option<Value> {
        self.lock().accepted.clone()
    }

    /// Attempts used.
    pub(crate) fn attempts(&self) -> u32 {
        self.lock().attempts
    }

    /// Counts a reminder as an attempt.
    pub(crate) fn count_reminder(&self) {
        self.lock().attempts += 1;
    }

    /// The last validation failure, if any.
    pub(crate) fn last_failure(&self) -> Option<String> {
        self.lock().last_failure.clone()
    }
}

/// `SubmitResult`: the tool a child with an `output_schema` finishes through. Its
/// parameters are the schema (or `{result: schema}` for a schema that is not an
/// object's); a call that does not match is an error naming the failure and counts as
/// an attempt. Read-only: it only records the value for the delegating call.
pub(crate) struct SubmitResultTool {
    schema: Arc<OutputSchema>,
    submission: Arc<Submission>,
}

impl SubmitResultTool {
    pub(crate) fn new(schema: Arc<OutputSchema>, submission: Arc<Submission>) -> Self {
        Self { schema, submission }
    }
}

#[async_trait]
impl Tool for SubmitResultTool {
    fn spec(&self) -> ToolSpec {
        let what = if self.schema.wrapped {
            "Give it under `result`."
        } else {
            "Its arguments are the result."
        };
        ToolSpec::new(
            SUBMIT_RESULT_TOOL_NAME,
            format!(
                "Submits your final result to the agent that delegated this task. The arguments must match the \
                 schema it requires (this tool's parameters): a call that does not match is refused with the \
                 reason, and you have {SUBMIT_ATTEMPTS} attempts in all. {what} After a result is accepted, \
                 end your turn."
            ),
        )
        .with_schema(self.schema.parameters.clone())
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn execute(
        &self,
        _cancel: &CancellationToken,
        call: &ToolCall,
        _env: &Environment,
    ) -> Result<ToolResult, ToolError> {
        let id = call.id().clone();
        let mut state = self.submission.lock();
        if state.accepted.is_some() {
            return Ok(ToolResult::text(
                id,
                "A result was already accepted; end your turn now.",
            ));
        }
        if state.attempts >= SUBMIT_ATTEMPTS {
            return Ok(refusal(
                call,
                SUBMIT_RESULT_TOOL_NAME,
                format!("no attempts left ({SUBMIT_ATTEMPTS} were used); end your turn."),
            ));
        }
        let checked = serde_json::from_str::<Value>(call.args())
            .map_err(|error| format!("the arguments are not valid JSON: {error}"))
            .and_then(|args| self.schema.check(&args));
        match checked {
            Ok(value) => {
                state.accepted = Some(value);
                Ok(ToolResult::text(
                    id,
                    "Result accepted. End your turn now without calling more tools.",
                ))
            }
            Err(failure) => {
                state.attempts += 1;
                let left = SUBMIT_ATTEMPTS - state.attempts;
                let message = format!(
                    "the result does not match the required schema: {failure}. {left} attempt(s) left."
                );
                state.last_failure = Some(failure);
                Ok(refusal(call, SUBMIT_RESULT_TOOL_NAME, message))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Environment {
        Environment::new("/tmp").unwrap()
    }

    async fn submit(tool: &SubmitResultTool, args: &str) -> ToolResult {
        tool.execute(
            &CancellationToken::new(),
            &ToolCall::new("s1", SUBMIT_RESULT_TOOL_NAME, args),
            &env(),
        )
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn a_matching_result_is_accepted_once_and_failures_count() {
        let schema =
            json!({"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]});
        let schema = Arc::new(OutputSchema::compile(&schema).unwrap());
        let submission = Arc::new(Submission::default());
        let tool = SubmitResultTool::new(Arc::clone(&schema), Arc::clone(&submission));
        assert_eq!(tool.spec().schema().unwrap()["required"], json!(["count"]));
        let refused = submit(&tool, r#"{"count": "three"}"#).await;
        assert!(refused.is_error());
        assert_eq!(
            refused.content(),
            "SubmitResult: the result does not match the required schema: at /count: \"three\" is not of type \
             \"integer\". 2 attempt(s) left."
        );
        assert_eq!(submission.attempts(), 1);
        let accepted = submit(&tool, r#"{"count": 3}"#).await;
        assert!(!accepted.is_error());
        assert_eq!(submission.accepted(), Some(json!({"count": 3})));
        assert!(
            submit(&tool, r#"{"count": 4}"#)
                .await
                .content()
                .contains("already accepted")
        );
        assert_eq!(submission.accepted(), Some(json!({"count": 3})));
    }

    #[tokio::test]
    async fn a_schema_that_is_not_an_objects_is_taken_under_result() {
        let schema =
            Arc::new(OutputSchema::compile(&json!({"type": "array", "items": {"type": "string"}})).unwrap());
        let submission = Arc::new(Submission::default());
        let tool = SubmitResultTool::new(schema, Arc::clone(&submission));
        assert_eq!(tool.spec().schema().unwrap()["required"], json!(["result"]));
        assert!(
            submit(&tool, r#"{"items": []}"#)
                .await
                .content()
                .contains("no `result`")
        );
        assert!(!submit(&tool, r#"{"result": ["a"]}"#).await.is_error());
        assert_eq!(submission.accepted(), Some(json!(["a"])));
    }

    #[tokio::test]
    async fn after_three_failures_no_attempt_is_left() {
        let schema = Arc::new(OutputSchema::compile(&json!({"type": "object", "required": ["x"]})).unwrap());
        let submission = Arc::new(Submission::default());
        let tool = SubmitResultTool::new(schema, Arc::clone(&submission));
        for _ in 0..3 {
            assert!(submit(&tool, "{}").await.is_error());
        }
        let last = submit(&tool, r#"{"x": 1}"#).await;
        assert!(last.content().contains("no attempts left"), "{}", last.content());
        assert_eq!(submission.accepted(), None);
        assert!(
            submission
                .last_failure()
                .unwrap()
                .contains("\"x\" is a required property")
        );
    }

    #[test]
    fn unusable_schemas_are_refused_with_the_reason() {
        assert!(
            OutputSchema::compile(&json!(true))
                .unwrap_err()
                .contains("JSON Schema object")
        );
        assert!(
            OutputSchema::compile(&json!({"type": "nonsense"}))
                .unwrap_err()
                .contains("not a valid JSON Schema")
        );
        let huge = json!({"description": "x".repeat(MAX_OUTPUT_SCHEMA_BYTES)});
        assert!(
            OutputSchema::compile(&huge)
                .unwrap_err()
                .contains("over the limit")
        );
    }
}
