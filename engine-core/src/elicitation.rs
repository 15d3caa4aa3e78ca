//! Elicitation: a tool's server asking the user for input during a call (MCP
//! elicitation, form mode). The tool reaches the user through the [`Elicitor`] its
//! [`Environment`](crate::Environment) carries for the call; the engine turns the
//! question into an `elicitation.request` event and waits for the host's answer
//! ([`Engine::answer_elicitation`](crate::Engine::answer_elicitation)), or declines
//! on the user's behalf when nobody can answer.
//!
//! The forms are the restricted JSON Schema of MCP elicitation: an object of
//! primitive properties (string, number, integer, boolean, an array of enumerated
//! strings). [`check_form`] refuses anything else before it reaches anyone;
//! [`check_content`] checks an answer against its form, naming the failing field.
//! Every bound lives here: a hostile server gets no unbounded question in front of
//! the user, and is never answered without them (never an automatic accept).

use std::time::Duration;

use async_trait::async_trait;
use engine_ports::ElicitationAction;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

/// Longest question, in bytes.
pub const MAX_ELICITATION_MESSAGE_BYTES: usize = 4 * 1024;

/// Largest form, in bytes of its compact JSON.
pub const MAX_ELICITATION_SCHEMA_BYTES: usize = 16 * 1024;

/// Most fields in one form.
pub const MAX_ELICITATION_FIELDS: usize = 32;

/// Most questions one call may ask; later ones are declined without asking.
pub const MAX_ELICITATIONS_PER_CALL: usize = 8;

/// Default of how long a question waits for its answer before it is declined.
pub const DEFAULT_ELICITATION_TIMEOUT: Duration = Duration::from_secs(300);

/// What a tool's server asks.
#[derive(Clone, Debug, PartialEq)]
pub struct ElicitationRequest {
    /// The question, for the user.
    pub message: String,
    /// The form (restricted JSON Schema, see [`check_form`]).
    pub requested_schema: Value,
}

/// The answer a tool passes back to its server.
#[derive(Clone, Debug, PartialEq)]
pub struct ElicitationResponse {
    /// Accept, decline or cancel.
    pub action: ElicitationAction,
    /// The filled-in form (accept only), checked against the form.
    pub content: Option<Map<String, Value>>,
    /// Why the harness declined or cancelled without the user; `None` for the user's
    /// own answers.
    pub reason: Option<String>,
}

impl ElicitationResponse {
    /// The user filled in the form.
    pub fn accept(content: Map<String, Value>) -> Self {
        Self {
            action: ElicitationAction::Accept,
            content: Some(content),
            reason: None,
        }
    }

    /// The user refused to answer.
    pub fn decline() -> Self {
        Self {
            action: ElicitationAction::Decline,
            content: None,
            reason: None,
        }
    }

    /// The user dismissed the question.
    pub fn cancel() -> Self {
        Self {
            action: ElicitationAction::Cancel,
            content: None,
            reason: None,
        }
    }

    /// Declined by the harness: nobody could or may answer, and `reason` says why.
    pub fn declined_because(reason: impl Into<String>) -> Self {
        Self {
            reason: Some(reason.into()),
            ..Self::decline()
        }
    }

    /// Cancelled by the harness (the run or the server gave up), and why.
    pub fn cancelled_because(reason: impl Into<String>) -> Self {
        Self {
            reason: Some(reason.into()),
            ..Self::cancel()
        }
    }
}

/// Where a tool asks its user during one call.
///
/// # Contract
/// `elicit` always returns, within the engine's elicitation timeout at most: a
/// question nobody answers in time, one over the bounds of this module, one asked
/// while the run is headless, and one whose `cancel` fires end as a decline (or a
/// cancel) with a `reason`. It never accepts on the user's behalf; an accept
/// carries content that passed [`check_content`].
#[async_trait]
pub trait Elicitor: Send + Sync {
    /// Asks the user; `cancel` fires when the asker gives up (e.g. the server
    /// withdrew its request).
    async fn elicit(&self, request: ElicitationRequest, cancel: &CancellationToken) -> ElicitationResponse;
}

/// Why an answer to an elicitation was not taken.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ElicitationAnswerError {
    /// No such elicitation waits (unknown, or already answered or ended).
    #[error("elicitation {0:?} is not open (unknown, or already answered)")]
    NotOpen(String),
    /// The content does not fit the form.
    #[error("{0}")]
    InvalidContent(String),
}

/// Checks that `schema` is a form MCP elicitation allows (an object of primitive
/// properties) within this module's bounds; the error says what is wrong.
///
/// # Errors
/// A description naming the offending property.
pub fn check_form(schema: &Value) -> Result<(), String> {
    let size = serde_json::to_vec(schema).map_or(usize::MAX, |bytes| bytes.len());
    if size > MAX_ELICITATION_SCHEMA_BYTES {
        return Err(format!(
            "its form is {size} bytes, over the {MAX_ELICITATION_SCHEMA_BYTES}-byte limit"
        ));
    }
    let Some(object) = schema.as_object() else {
        return Err("its form is not a JSON object".to_owned());
    };
    if object.get("type").is_some_and(|t| t != "object") {
        return Err("its form is not of type \"object\"".to_owned());
    }
    let properties = match object.get("properties") {
        None => return Ok(()),
        Some(Value::Object(properties)) => properties,
        Some(_) => return Err("its form's \"properties\" is not an object".to_owned()),
    };
    if properties.len() > MAX_ELICITATION_FIELDS {
        return Err(format!(
            "its form has {} fields, over the limit of {MAX_ELICITATION_FIELDS}",
            properties.len()
        ));
    }
    for (name, property) in properties {
        let kind = property.get("type").and_then(Value::as_str);
        match kind {
            Some("string" | "number" | "integer" | "boolean") => {}
            Some("array") => {
                let items = property.get("items");
                let enumerated = items.is_some_and(|items| {
                    items.get("enum").is_some_and(Value::is_array)
                        || items.get("anyOf").is_some_and(Value::is_array)
                });
                if !enumerated {
                    return Err(format!(
                        "its form's field {name:?} is an array without enumerated items"
                    ));
                }
            }
            _ => {
                return Err(format!(
                    "its form's field {name:?} is not a string, number, integer, boolean or enumerated array"
                ));
            }
        }
    }
    if let Some(required) = object.get("required") {
        let names = required
            .as_array()
            .ok_or("its form's \"required\" is not an array")?;
        for name in names {
            let known = name.as_str().is_some_and(|name| properties.contains_key(name));
            if !known {
                return Err(format!(
                    "its form requires {name}, which is not one of its fields"
                ));
            }
        }
    }
    Ok(())
}

/// Checks an answer against its form: an object with every required field, no
/// other field, and each value of its field's type, within its bounds and among its
/// choices. Errors name the field as `content.<field>`.
///
/// # Errors
/// A description naming the field, what was expected and what came.
pub fn check_content(schema: &Value, content: &Map<String, Value>) -> Result<(), String> {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if !content.contains_key(name) {
                return Err(format!("content.{name}: missing; the form requires it"));
            }
        }
    }
    for (name, value) in content {
        let Some(property) = properties.get(name) else {
            let fields: Vec<&str> = properties.keys().map(String::as_str).collect();
            return Err(format!(
                "content.{name}: not a field of the form (its fields: {})",
                fields.join(", ")
            ));
        };
        check_value(property, value)
            .map_err(|expected| format!("content.{name}: expected {expected}, got {value}"))?;
    }
    Ok(())
}

/// Checks one value against its property; the error is what was expected.
fn check_value(property: &Value, value: &Value) -> Result<(), String> {
    let number = |key: &str| property.get(key).and_then(Value::as_f64);
    let count = |key: &str| property.get(key).and_then(Value::as_u64);
    match property.get("type").and_then(Value::as_str) {
        Some("string") => {
            let Some(text) = value.as_str() else {
                return Err("a string".to_owned());
            };
            let chars = text.chars().count() as u64;
            if count("minLength").is_some_and(|min| chars < min)
                || count("maxLength").is_some_and(|max| chars > max)
            {
                return Err(format!(
                    "a string of {}..{} characters",
                    count("minLength").unwrap_or(0),
                    count("maxLength").map_or("".to_owned(), |max| max.to_string())
                ));
            }
            let choices = choices(property);
            if !choices.is_empty() && !choices.iter().any(|choice| choice == text) {
                return Err(format!("one of {}", choices.join(", ")));
            }
            Ok(())
        }
        Some(kind @ ("number" | "integer")) => {
            let whole = value.as_i64().is_some() || value.as_u64().is_some();
            let Some(n) = value.as_f64().filter(|_| kind == "number" || whole) else {
                return Err(if kind == "integer" {
                    "an integer"
                } else {
                    "a number"
                }
                .to_owned());
            };
            if number("minimum").is_some_and(|min| n < min) || number("maximum").is_some_and(|max| n > max) {
                return Err(format!(
                    "{} between {} and {}",
                    if kind == "integer" {
                        "an integer"
                    } else {
                        "a number"
                    },
                    number("minimum").map_or("-∞".to_owned(), |v| v.to_string()),
                    number("maximum").map_or("∞".to_owned(), |v| v.to_string())
                ));
            }
            Ok(())
        }
        Some("boolean") if value.is_boolean() => Ok(()),
        Some("boolean") => Err("a boolean".to_owned()),
        Some("array") => {
            let allowed = property.get("items").map(choices).unwrap_or_default();
            let expected = || format!("an array of strings among {}", allowed.join(", "));
            let Some(items) = value.as_array() else {
                return Err(expected());
            };
            let fits = items.iter().all(|item| {
                item.as_str()
                    .is_some_and(|item| allowed.iter().any(|a| a == item))
            });
            let len = items.len() as u64;
            if !fits
                || count("minItems").is_some_and(|min| len < min)
                || count("maxItems").is_some_and(|max| len > max)
            {
                return Err(expected());
            }
            Ok(())
        }
        _ => Err("a value of the field's type".to_owned()),
    }
}

/// The string choices of a property: `enum`, or the `const`s of `oneOf` / `anyOf`.
fn choices(property: &Value) -> Vec<String> {
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        return values
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
    }
    ["oneOf", "anyOf"]
        .iter()
        .filter_map(|key| property.get(*key).and_then(Value::as_array))
        .flatten()
        .filter_map(|option| option.get("const").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn form() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 5},
                "age": {"type": "integer", "minimum": 0, "maximum": 150},
                "ratio": {"type": "number"},
                "ok": {"type": "boolean"},
                "color": {"type": "string", "enum": ["red", "green"]},
                "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 2}
            },
            "required": ["name"]
        })
    }

    fn content(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn a_filled_in_form_passes() {
        assert!(check_form(&form()).is_ok());
        let answer = content(json!({
            "name": "Ada", "age": 36, "ratio": 0.5, "ok": true, "color": "red", "size": "l", "tags": ["a", "b"]
        }));
        assert_eq!(check_content(&form(), &answer), Ok(()));
        assert_eq!(check_content(&form(), &content(json!({"name": "B"}))), Ok(()));
    }

    #[test]
    fn content_errors_name_the_field_what_was_expected_and_what_came() {
        let cases = [
            (json!({}), "content.name: missing; the form requires it"),
            (json!({"name": 7}), "content.name: expected a string, got 7"),
            (
                json!({"name": "toolong"}),
                "content.name: expected a string of 1..5 characters, got \"toolong\"",
            ),
            (
                json!({"name": "a", "age": 1.5}),
                "content.age: expected an integer, got 1.5",
            ),
            (
                json!({"name": "a", "age": 200}),
                "content.age: expected an integer between 0 and 150, got 200",
            ),
            (
                json!({"name": "a", "ok": "yes"}),
                "content.ok: expected a boolean, got \"yes\"",
            ),
            (
                json!({"name": "a", "color": "blue"}),
                "content.color: expected one of red, green, got \"blue\"",
            ),
            (
                json!({"name": "a", "size": "m"}),
                "content.size: expected one of s, l, got \"m\"",
            ),
            (
                json!({"name": "a", "tags": ["c"]}),
                "content.tags: expected an array of strings among a, b, got [\"c\"]",
            ),
        ];
        for (answer, expected) in cases {
            assert_eq!(
                check_content(&form(), &content(answer.clone())).unwrap_err(),
                expected,
                "{answer}"
            );
        }
        let unknown = check_content(&form(), &content(json!({"name": "a", "nick": "x"}))).unwrap_err();
        assert!(
            unknown.starts_with("content.nick: not a field of the form (its fields: "),
            "{unknown}"
        );
    }

    #[test]
    fn forms_outside_the_restricted_shape_or_the_bounds_are_refused() {
        let nested = json!({"type": "object", "properties": {"address": {"type": "object"}}});
        assert!(check_form(&nested).unwrap_err().contains("\"address\""));
        let free_array =
            json!({"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "string"}}}});
        assert!(check_form(&free_array).unwrap_err().contains("enumerated"));
        assert!(check_form(&json!({"type": "string"})).is_err());
        assert!(check_form(&json!([1])).is_err());
        let missing_required = json!({"type": "object", "properties": {}, "required": ["x"]});
        assert!(check_form(&missing_required).unwrap_err().contains("\"x\""));
        let many: Map<String, Value> = (0..=MAX_ELICITATION_FIELDS)
            .map(|i| (format!("f{i}"), json!({"type": "string"})))
            .collect();
        let wide = json!({"type": "object", "properties": many});
        assert!(check_form(&wide).unwrap_err().contains("fields"));
        let huge = json!({"type": "object", "description": "x".repeat(MAX_ELICITATION_SCHEMA_BYTES)});
        assert!(check_form(&huge).unwrap_err().contains("bytes"));
        assert!(check_form(&json!({"type": "object"})).is_ok());
    }
}
