//! Entry points for the coverage-guided fuzzing harness (`fuzz/`), behind the
//! `fuzzing` feature: the request-body decoding of the HTTP API exactly as the
//! handlers run it, from raw body bytes to the parsed fields or the error answer.

use super::body::{approval, create_body, decode_json_body, elicitation_answer, prompt_text};
use super::error::ApiError;

/// An error answer as the status code and the message.
pub type Rejection = (u16, String);

fn rejection(error: ApiError) -> Rejection {
    (error.status().as_u16(), error.message().to_owned())
}

/// `POST /v1/sessions`: the body bytes through the JSON-object check and the create
/// fields; `Ok` holds the `mcp_servers` value, which the host parses next.
///
/// # Errors
/// The 4xx answer the handler would send.
pub fn create_session_body(bytes: &[u8]) -> Result<Option<serde_json::Value>, Rejection> {
    let body = create_body(decode_json_body(bytes).map_err(rejection)?).map_err(rejection)?;
    Ok(body.mcp_servers)
}

/// `POST /v1/sessions/{id}/prompt`: the body bytes to the prompt text.
///
/// # Errors
/// The 4xx answer the handler would send.
pub fn prompt_body(bytes: &[u8]) -> Result<String, Rejection> {
    prompt_text(decode_json_body(bytes).map_err(rejection)?).map_err(rejection)
}

/// `POST /v1/sessions/{id}/approve`: the body bytes to the ask id (the verdict is
/// checked, not returned).
///
/// # Errors
/// The 4xx answer the handler would send.
pub fn approve_body(bytes: &[u8]) -> Result<String, Rejection> {
    approval(decode_json_body(bytes).map_err(rejection)?)
        .map(|(ask_id, _verdict)| ask_id)
        .map_err(rejection)
}

/// `POST /v1/sessions/{id}/elicit`: the body bytes to the elicitation id, and an
/// accept's content checked against a fixed form (a string `name` required, an
/// integer `age`, a choice `color`) as the engine checks it.
///
/// # Errors
/// The 4xx answer the handler would send (a content that does not fit is a 400).
pub fn elicit_body(bytes: &[u8]) -> Result<String, Rejection> {
    let (id, response) =
        elicitation_answer(decode_json_body(bytes).map_err(rejection)?).map_err(rejection)?;
    if let Some(content) = &response.content {
        let form = serde_json::json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "maxLength": 40},
                "age": {"type": "integer", "minimum": 0},
                "color": {"type": "string", "enum": ["red", "green"]}
            },
            "required": ["name"]
        });
        engine_core::check_content(&form, content).map_err(|problem| (400, problem))?;
    }
    Ok(id)
}
