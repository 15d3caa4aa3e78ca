//! MCP structured output: a tool's `outputSchema` is compiled once, when the tool
//! list is read, and every successful result's `structuredContent` is checked
//! against it.
//!
//! A schema that does not compile (or is larger than [`MAX_OUTPUT_SCHEMA_BYTES`])
//! leaves the tool usable without the check, with one WARN per listing. Patterns run
//! on the linear-time `regex` engine (a hostile schema cannot make a check
//! backtrack for long; a pattern it cannot express makes the schema uncompilable),
//! and no `$ref` is ever fetched: the crate is built without retrieval.

use std::sync::Arc;

use jsonschema::{PatternOptions, Validator};
use serde_json::Value;

/// Largest `outputSchema` compiled, in bytes of its compact JSON.
pub(crate) const MAX_OUTPUT_SCHEMA_BYTES: usize = 256 * 1024;

/// Most mismatches named in one error.
const NAMED_ERRORS: usize = 3;

/// Longest description of one mismatch, in characters.
const ERROR_CHARS: usize = 200;

/// The validator of `schema` (the `outputSchema` of `tool` on `server`), or `None`
/// with one WARN when it cannot be used.
pub(crate) fn compile(server: &str, tool: &str, schema: &Value) -> Option<Arc<Validator>> {
    let size = serde_json::to_vec(schema).map_or(usize::MAX, |bytes| bytes.len());
    let problem = if size > MAX_OUTPUT_SCHEMA_BYTES {
        format!("it is {size} bytes, over the {MAX_OUTPUT_SCHEMA_BYTES}-byte limit")
    } else {
        match jsonschema::options()
            .with_pattern_options(PatternOptions::regex())
            .build(schema)
        {
            Ok(validator) => return Some(Arc::new(validator)),
            Err(error) => clip(&error.to_string()),
        }
    };
    tracing::warn!(
        server,
        tool,
        error = %problem,
        "MCP server {server:?}: the outputSchema of tool {tool:?} cannot be used ({problem}); \
         the tool stays usable, its structured results are not checked"
    );
    None
}

/// Checks a successful result's `structuredContent` (`None` or `null`: missing);
/// the error says what is wrong, naming each failing JSON path (`/a/0/b`, or the
/// top level).
pub(crate) fn check(validator: &Validator, structured: Option<&Value>) -> Result<(), String> {
    let Some(value) = structured.filter(|value| !value.is_null()) else {
        return Err("declares an outputSchema but its result has no structuredContent".to_owned());
    };
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|error| {
            let path = error.instance_path().as_str();
            let at = if path.is_empty() {
                "at the top level".to_owned()
            } else {
                format!("at {path}")
            };
            format!("{at}: {}", clip(&error.to_string()))
        })
        .collect();
    if errors.is_empty() {
        return Ok(());
    }
    let mut text = format!(
        "returned structuredContent that does not match its outputSchema: {}",
        errors
            .iter()
            .take(NAMED_ERRORS)
            .cloned()
            .collect::<Vec<_>>()
            .join("; ")
    );
    if errors.len() > NAMED_ERRORS {
        text.push_str(&format!(" (and {} more)", errors.len() - NAMED_ERRORS));
    }
    Err(text)
}

fn clip(text: &str) -> String {
    if text.chars().count() <= ERROR_CHARS {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(ERROR_CHARS - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "answer": {"type": "integer"},
                "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}
            },
            "required": ["answer"]
        })
    }

    #[test]
    fn matching_content_passes() {
        let validator = compile("s", "t", &schema()).unwrap();
        assert!(check(&validator, Some(&json!({"answer": 42, "items": [{"name": "a"}]}))).is_ok());
    }

    #[test]
    fn a_mismatch_names_the_failing_paths() {
        let validator = compile("s", "t", &schema()).unwrap();
        let error = check(
            &validator,
            Some(&json!({"answer": "forty-two", "items": [{"name": "a"}, {"nom": "b"}]})),
        )
        .unwrap_err();
        assert!(
            error.starts_with("returned structuredContent that does not match its outputSchema: "),
            "{error}"
        );
        assert!(
            error.contains(r#"at /answer: "forty-two" is not of type "integer""#),
            "{error}"
        );
        assert!(error.contains("at /items/1: "), "{error}");
        assert!(error.contains("\"name\" is a required property"), "{error}");
        let top = check(&validator, Some(&json!([1, 2]))).unwrap_err();
        assert!(top.contains("at the top level: "), "{top}");
    }

    #[test]
    fn missing_structured_content_is_an_error() {
        let validator = compile("s", "t", &schema()).unwrap();
        for missing in [None, Some(&Value::Null)] {
            assert_eq!(
                check(&validator, missing).unwrap_err(),
                "declares an outputSchema but its result has no structuredContent"
            );
        }
    }

    #[test]
    fn an_unusable_schema_skips_the_check() {
        assert!(compile("s", "t", &json!({"type": "no-such-type"})).is_none());
        assert!(compile("s", "t", &json!({"type": "string", "pattern": "(?=lookahead)"})).is_none());
        let huge = json!({"description": "x".repeat(MAX_OUTPUT_SCHEMA_BYTES)});
        assert!(compile("s", "t", &huge).is_none());
    }

    #[test]
    fn many_mismatches_are_counted_and_long_values_clipped() {
        let validator = compile(
            "s",
            "t",
            &json!({"type": "object", "additionalProperties": {"type": "integer"}}),
        )
        .unwrap();
        let long = "y".repeat(10_000);
        let error = check(
            &validator,
            Some(&json!({"a": long, "b": "x", "c": "x", "d": "x", "e": "x"})),
        )
        .unwrap_err();
        assert!(error.ends_with("(and 2 more)"), "{error}");
        assert!(error.len() < 1_500, "{} bytes", error.len());
    }
}
