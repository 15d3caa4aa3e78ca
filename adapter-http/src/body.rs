//! Request bodies: [`JsonBody`] (at most 1 MiB, cut off at the cap while a chunked
//! body is read, and 408 when it does not arrive within the server's body read
//! timeout; a JSON object or nothing) and the parsing of each endpoint's fields,
//! every error naming the field and the value.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use engine_core::{AskAnswer, ElicitationResponse};
use engine_ports::{ElicitationAction, Keyword, PermissionMode, Verdict};
use serde_json::{Map, Value};

use super::error::ApiError;
use super::guard::refused;
use super::server::ServerState;

/// A request body: `None` when empty, else a JSON object.
#[derive(Debug)]
pub(crate) struct JsonBody(pub(crate) Option<Map<String, Value>>);

impl FromRequest<Arc<ServerState>> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &Arc<ServerState>) -> Result<Self, Self::Rejection> {
        let limit = state.body_read_timeout;
        let read = tokio::time::timeout(limit, Bytes::from_request(request, state))
            .await
            .map_err(|_| {
                ApiError::new(
                    StatusCode::REQUEST_TIMEOUT,
                    format!(
                        "the request body did not arrive within {} ms: send the whole body at once",
                        limit.as_millis()
                    ),
                )
            })?;
        let bytes = read.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                refused(state.policy.body_too_large())
            } else {
                ApiError::new(rejection.status(), rejection.body_text())
            }
        })?;
        decode_json_body(&bytes).map(Self)
    }
}

/// The bytes of a request body: `None` when empty or only whitespace, else a JSON
/// object (anything else is a 400).
pub(crate) fn decode_json_body(bytes: &[u8]) -> Result<Option<Map<String, Value>>, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(_) => Err(ApiError::bad_request("the request body must be a JSON object")),
        Err(error) => Err(ApiError::bad_request(format!(
            "the request body is not valid JSON: {error}"
        ))),
    }
}

/// `POST /v1/sessions`: `{mode?, model?, mcp_servers?}`.
#[derive(Debug, Default)]
pub(crate) struct CreateBody {
    /// The session's mode (`None`: the engine's default).
    pub(crate) mode: Option<PermissionMode>,
    /// The session's model (`None`: the host's); the handler checks it is offered.
    pub(crate) model: Option<String>,
    /// Client-provided MCP servers, in their wire form (the host parses them).
    pub(crate) mcp_servers: Option<Value>,
}

/// Parses a create body (empty means defaults).
pub(crate) fn create_body(body: Option<Map<String, Value>>) -> Result<CreateBody, ApiError> {
    let Some(map) = body else {
        return Ok(CreateBody::default());
    };
    only_fields(&map, &["mode", "model", "mcp_servers"])?;
    let mode = match map.get("mode") {
        None | Some(Value::Null) => None,
        Some(Value::String(value)) => Some(mode_value("mode", value)?),
        Some(other) => {
            return Err(invalid("mode", other, &expected_one_of::<PermissionMode>()));
        }
    };
    let model = match map.get("model") {
        None | Some(Value::Null) => None,
        Some(Value::String(value)) => Some(value.clone()),
        Some(other) => return Err(invalid("model", other, "expected a model name (a string)")),
    };
    let mcp_servers = match map.get("mcp_servers") {
        None | Some(Value::Null) => None,
        Some(value) => Some(value.clone()),
    };
    Ok(CreateBody {
        mode,
        model,
        mcp_servers,
    })
}

/// `PATCH /v1/sessions/{id}`: `{mode?, model?}`, at least one.
#[derive(Debug, Default)]
pub(crate) struct UpdateBody {
    /// The new mode.
    pub(crate) mode: Option<PermissionMode>,
    /// The new model: `Some(None)` (`null`) goes back to the server's.
    pub(crate) model: Option<Option<String>>,
}

/// Parses an update body.
pub(crate) fn update_body(body: Option<Map<String, Value>>) -> Result<UpdateBody, ApiError> {
    let map = body.unwrap_or_default();
    only_fields(&map, &["mode", "model"])?;
    if map.is_empty() {
        return Err(ApiError::bad_request(
            "nothing to change: send {\"mode\": \"plan\"} and/or {\"model\": \"<name>\"}",
        ));
    }
    let mode = match map.get("mode") {
        None => None,
        Some(Value::String(value)) => Some(mode_value("mode", value)?),
        Some(other) => return Err(invalid("mode", other, &expected_one_of::<PermissionMode>())),
    };
    let model = match map.get("model") {
        None => None,
        Some(Value::Null) => Some(None),
        Some(Value::String(value)) => Some(Some(value.clone())),
        Some(other) => {
            return Err(invalid(
                "model",
                other,
                "expected a model name (a string), or null for the server's model",
            ));
        }
    };
    Ok(UpdateBody { mode, model })
}

/// `POST /v1/sessions/{id}/prompt`: `{text}`, a non-empty string.
pub(crate) fn prompt_text(body: Option<Map<String, Value>>) -> Result<String, ApiError> {
    let map = body.unwrap_or_default();
    only_fields(&map, &["text"])?;
    match map.get("text") {
        Some(Value::String(text)) if !text.trim().is_empty() => Ok(text.clone()),
        Some(Value::String(_)) => Err(ApiError::bad_request(
            "field \"text\" is empty: send the prompt text",
        )),
        None | Some(Value::Null) => Err(ApiError::bad_request(
            "missing field \"text\": send {\"text\": \"<prompt>\"}",
        )),
        Some(other) => Err(invalid("text", other, "expected a string")),
    }
}

/// `POST /v1/sessions/{id}/approve`: `{ask_id, verdict, save_rule?, reason?}`;
/// `save_rule: true` (only with `allow_always`) also saves the ask's
/// `suggested_rule` in the project's settings; `reason` (only with `deny`) is what
/// the model reads about the denial.
pub(crate) fn approval(body: Option<Map<String, Value>>) -> Result<(String, AskAnswer), ApiError> {
    let map = body.unwrap_or_default();
    only_fields(&map, &["ask_id", "verdict", "save_rule", "reason"])?;
    let ask_id = event_id(&map, "ask_id", "a permission.ask event")?;
    let verdict = one_of::<Verdict>(&map, "verdict")?;
    let save_rule = match map.get("save_rule") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(save)) => *save,
        Some(other) => return Err(invalid("save_rule", other, "expected true or false")),
    };
    if save_rule && verdict != Verdict::AllowAlways {
        return Err(ApiError::bad_request(format!(
            "field \"save_rule\" is true with verdict {:?}: a rule is saved only with \"allow_always\"",
            verdict.as_str()
        )));
    }
    let reason = match map.get("reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(_)) if verdict != Verdict::Deny => {
            return Err(ApiError::bad_request(format!(
                "field \"reason\" is given with verdict {:?}: a reason goes with \"deny\" only",
                verdict.as_str()
            )));
        }
        Some(Value::String(reason)) => Some(reason),
        Some(other) => return Err(invalid("reason", other, "expected a string")),
    };
    if let Some(reason) = reason {
        return Ok((ask_id, AskAnswer::deny_because(reason)));
    }
    Ok((
        ask_id,
        AskAnswer {
            verdict,
            save_rule,
            reason: None,
        },
    ))
}

/// `POST /v1/sessions/{id}/elicit`: `{elicitation_id, action, content?}`; `content`
/// (a JSON object) only with `accept`. Whether the content fits the form is the
/// engine's check.
pub(crate) fn elicitation_answer(
    body: Option<Map<String, Value>>,
) -> Result<(String, ElicitationResponse), ApiError> {
    let map = body.unwrap_or_default();
    only_fields(&map, &["elicitation_id", "action", "content"])?;
    let id = event_id(&map, "elicitation_id", "an elicitation.request event")?;
    let action = one_of::<ElicitationAction>(&map, "action")?;
    let content = match map.get("content") {
        None | Some(Value::Null) => None,
        Some(Value::Object(content)) if action == ElicitationAction::Accept => Some(content.clone()),
        Some(Value::Object(_)) => {
            return Err(ApiError::bad_request(format!(
                "field \"content\" is sent only with action accept, not {}",
                action.as_str()
            )));
        }
        Some(other) => {
            return Err(invalid(
                "content",
                other,
                "expected a JSON object with the form's fields",
            ));
        }
    };
    let response = match action {
        ElicitationAction::Accept => ElicitationResponse::accept(content.unwrap_or_default()),
        ElicitationAction::Decline => ElicitationResponse::decline(),
        ElicitationAction::Cancel => ElicitationResponse::cancel(),
    };
    Ok((id, response))
}

/// `POST /v1/sessions/{id}/cancel-child`: `{child_id}`, a non-empty string.
pub(crate) fn child_id(body: Option<Map<String, Value>>) -> Result<String, ApiError> {
    let map = body.unwrap_or_default();
    only_fields(&map, &["child_id"])?;
    match map.get("child_id") {
        Some(Value::String(id)) if !id.trim().is_empty() => Ok(id.trim().to_owned()),
        None | Some(Value::Null) => Err(ApiError::bad_request(
            "missing field \"child_id\": send the child_id of a subagent, parallel or team event",
        )),
        Some(other) => Err(invalid(
            "child_id",
            other,
            "expected the child_id of a subagent, parallel or team event",
        )),
    }
}

/// A mode name from `field`, or 400 naming the field, the value and the three modes.
pub(crate) fn mode_value(field: &str, value: &str) -> Result<PermissionMode, ApiError> {
    value.parse::<PermissionMode>().map_err(|_| {
        invalid(
            field,
            &Value::String(value.to_owned()),
            &expected_one_of::<PermissionMode>(),
        )
    })
}

/// What a bad value of a `K` field is told (`expected one of default, plan, acceptEdits`).
fn expected_one_of<K: Keyword>() -> String {
    format!("expected one of {}", K::expected())
}

/// The `field` of `map`: a non-empty string, the id `event` carried; else 400 saying
/// to send that id.
fn event_id(map: &Map<String, Value>, field: &str, event: &str) -> Result<String, ApiError> {
    match map.get(field) {
        Some(Value::String(id)) if !id.is_empty() => Ok(id.clone()),
        None | Some(Value::Null) => Err(ApiError::bad_request(format!(
            "missing field {field:?}: send the {field} of {event}"
        ))),
        Some(other) => Err(invalid(field, other, &format!("expected the {field} of {event}"))),
    }
}

/// The `field` of `map`: one of the words of `K`, as its value; else 400 listing them.
fn one_of<K: Keyword>(map: &Map<String, Value>, field: &str) -> Result<K, ApiError> {
    let expected = expected_one_of::<K>();
    match map.get(field) {
        Some(Value::String(value)) => {
            K::from_word(value).ok_or_else(|| invalid(field, &Value::String(value.clone()), &expected))
        }
        None | Some(Value::Null) => Err(ApiError::bad_request(format!(
            "missing field {field:?}: {expected}"
        ))),
        Some(other) => Err(invalid(field, other, &expected)),
    }
}

/// 400: `invalid value <value> for field "<field>": <expected>`.
pub(crate) fn invalid(field: &str, value: &Value, expected: &str) -> ApiError {
    ApiError::bad_request(format!("invalid value {value} for field {field:?}: {expected}"))
}

/// 400 for the first field not in `allowed`.
fn only_fields(map: &Map<String, Value>, allowed: &[&str]) -> Result<(), ApiError> {
    match map.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(key) => Err(ApiError::bad_request(format!(
            "unknown field {key:?}: expected {}",
            allowed.join(", ")
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(json: &str) -> Option<Map<String, Value>> {
        match serde_json::from_str(json).unwrap() {
            Value::Object(map) => Some(map),
            _ => unreachable!("tests pass objects"),
        }
    }

    #[test]
    fn create_bodies_default_and_name_bad_fields() {
        let empty = create_body(None).unwrap();
        assert!(empty.mode.is_none() && empty.mcp_servers.is_none());
        assert_eq!(
            create_body(object(r#"{"mode":"plan"}"#)).unwrap().mode,
            Some(PermissionMode::Plan)
        );
        let error = create_body(object(r#"{"mode":"sideways"}"#)).unwrap_err();
        assert_eq!(error.status(), StatusCode::BAD_REQUEST);
        for part in ["\"mode\"", "sideways", "default, plan, acceptEdits"] {
            assert!(error.message().contains(part), "{}", error.message());
        }
        let error = create_body(object(r#"{"mcpServers":[]}"#)).unwrap_err();
        assert!(error.message().contains("mcpServers"), "{}", error.message());
    }

    #[test]
    fn prompts_need_text_and_approvals_a_known_verdict() {
        assert_eq!(prompt_text(object(r#"{"text":"hi"}"#)).unwrap(), "hi");
        assert!(prompt_text(None).unwrap_err().message().contains("text"));
        assert!(
            prompt_text(object(r#"{"text":7}"#))
                .unwrap_err()
                .message()
                .contains('7')
        );
        assert_eq!(
            approval(object(r#"{"ask_id":"a1","verdict":"allow_once"}"#)).unwrap(),
            ("a1".to_owned(), AskAnswer::from(Verdict::AllowOnce))
        );
        let error = approval(object(r#"{"ask_id":"a1","verdict":"maybe"}"#)).unwrap_err();
        assert!(error.message().contains("maybe") && error.message().contains("verdict"));
    }

    #[test]
    fn a_denial_may_carry_a_reason_for_the_model_and_nothing_else_may() {
        assert_eq!(
            approval(object(
                r#"{"ask_id":"a1","verdict":"deny","reason":"  use notes.md instead "}"#
            ))
            .unwrap(),
            ("a1".to_owned(), AskAnswer::deny_because("use notes.md instead"))
        );
        assert_eq!(
            approval(object(r#"{"ask_id":"a1","verdict":"deny","reason":"   "}"#))
                .unwrap()
                .1,
            AskAnswer::from(Verdict::Deny),
            "a blank reason is no reason"
        );
        let error = approval(object(
            r#"{"ask_id":"a1","verdict":"allow_once","reason":"why not"}"#,
        ))
        .unwrap_err();
        assert!(
            error.message().contains("reason") && error.message().contains("deny"),
            "{}",
            error.message()
        );
        let error = approval(object(r#"{"ask_id":"a1","verdict":"deny","reason":7}"#)).unwrap_err();
        assert!(error.message().contains("reason"), "{}", error.message());
    }

    #[test]
    fn save_rule_asks_to_save_an_allow_always_and_nothing_else() {
        assert_eq!(
            approval(object(
                r#"{"ask_id":"a1","verdict":"allow_always","save_rule":true}"#
            ))
            .unwrap(),
            ("a1".to_owned(), AskAnswer::ALLOW_ALWAYS_AND_SAVE)
        );
        assert_eq!(
            approval(object(r#"{"ask_id":"a1","verdict":"allow_always"}"#))
                .unwrap()
                .1,
            AskAnswer::from(Verdict::AllowAlways)
        );
        let error = approval(object(
            r#"{"ask_id":"a1","verdict":"allow_once","save_rule":true}"#,
        ))
        .unwrap_err();
        assert!(
            error.message().contains("save_rule") && error.message().contains("allow_always"),
            "{}",
            error.message()
        );
        let error = approval(object(
            r#"{"ask_id":"a1","verdict":"allow_always","save_rule":"yes"}"#,
        ))
        .unwrap_err();
        assert!(error.message().contains("save_rule"), "{}", error.message());
    }

    #[test]
    fn elicitation_answers_name_the_field_and_take_content_only_when_accepting() {
        let (id, response) = elicitation_answer(object(
            r#"{"elicitation_id":"e1","action":"accept","content":{"name":"Ada"}}"#,
        ))
        .unwrap();
        assert_eq!(id, "e1");
        assert_eq!(response.action, ElicitationAction::Accept);
        assert_eq!(response.content.unwrap()["name"], "Ada");
        let (_, declined) =
            elicitation_answer(object(r#"{"elicitation_id":"e1","action":"decline"}"#)).unwrap();
        assert_eq!(declined, ElicitationResponse::decline());
        let cases = [
            (r#"{"action":"accept"}"#, "elicitation_id"),
            (
                r#"{"elicitation_id":"e1","action":"maybe"}"#,
                "accept, decline, cancel",
            ),
            (r#"{"elicitation_id":"e1"}"#, "missing field \"action\""),
            (
                r#"{"elicitation_id":"e1","action":"accept","content":[1]}"#,
                "\"content\"",
            ),
            (
                r#"{"elicitation_id":"e1","action":"decline","content":{}}"#,
                "only with action accept",
            ),
            (
                r#"{"elicitation_id":"e1","action":"accept","extra":1}"#,
                "unknown field \"extra\"",
            ),
        ];
        for (body, needle) in cases {
            let error = elicitation_answer(object(body)).unwrap_err();
            assert_eq!(error.status(), StatusCode::BAD_REQUEST, "{body}");
            assert!(error.message().contains(needle), "{body}: {}", error.message());
        }
    }
}
