//! A tool's question to the user (an `elicitation.request` event) as ACP's
//! `elicitation/create` (form mode, scoped to the session and the tool call), and
//! the client's answer back to the engine. A client that did not advertise form
//! elicitation, a form ACP cannot carry, a failed request and an answer that does
//! not fit the form all decline the question, saying why.

use std::sync::Arc;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CreateElicitationRequest, CreateElicitationResponse, ElicitationAction as AcpAction, ElicitationFormMode,
    ElicitationSchema, ElicitationSessionScope, ToolCallId,
};
use engine_core::{ElicitationAnswerError, ElicitationResponse};
use serde_json::Value;

use super::session::Session;

/// What the event said.
pub(crate) struct Question {
    pub(crate) elicitation_id: String,
    pub(crate) call_id: String,
    pub(crate) message: String,
    pub(crate) requested_schema: Value,
}

/// Asks the client (in a task of its own) or declines at once.
pub(crate) fn forward(
    session: &Arc<Session>,
    question: Question,
    client_can_answer: bool,
    cx: &ConnectionTo<Client>,
) {
    if !client_can_answer {
        answer(
            session,
            &question.elicitation_id,
            ElicitationResponse::declined_because(
                "the editor cannot show the server's question (its ACP client did not advertise \
                 clientCapabilities.elicitation.form)",
            ),
        );
        return;
    }
    let schema: ElicitationSchema = match serde_json::from_value(question.requested_schema) {
        Ok(schema) => schema,
        Err(error) => {
            answer(
                session,
                &question.elicitation_id,
                ElicitationResponse::declined_because(format!(
                    "the server's form cannot be sent to the ACP client: {error}"
                )),
            );
            return;
        }
    };
    let scope = ElicitationSessionScope::new(session.id.as_str().to_owned())
        .tool_call_id(ToolCallId::new(question.call_id));
    let request = CreateElicitationRequest::new(ElicitationFormMode::new(scope, schema), question.message);
    let sent = cx.send_request(request);
    let asking = Arc::clone(session);
    let session = Arc::clone(session);
    let id = question.elicitation_id;
    let asked = id.clone();
    let spawned = cx.spawn(async move {
        let response = match sent.block_task().await {
            Ok(response) => from_client(response),
            Err(error) => {
                tracing::warn!(session_id = %session.id, %error, "the elicitation request failed; declining the question");
                ElicitationResponse::declined_because(format!("the ACP client's elicitation failed: {error}"))
            }
        };
        answer(&session, &id, response);
        Ok(())
    });
    if let Err(error) = spawned {
        // The connection ended: nobody can answer, so the question is declined.
        tracing::warn!(%error, "the elicitation could not be followed; the connection is closing");
        let declined = ElicitationResponse::declined_because("the ACP client is gone".to_owned());
        answer(&asking, &asked, declined);
    }
}

/// The client's answer as the engine takes it.
fn from_client(response: CreateElicitationResponse) -> ElicitationResponse {
    match response.action {
        AcpAction::Accept(accept) => {
            let content = accept
                .content
                .map(|content| serde_json::to_value(content).unwrap_or_default());
            match content {
                None => ElicitationResponse::accept(serde_json::Map::new()),
                Some(Value::Object(content)) => ElicitationResponse::accept(content),
                Some(_) => ElicitationResponse::declined_because("the ACP client's content is not an object"),
            }
        }
        AcpAction::Decline => ElicitationResponse::decline(),
        AcpAction::Cancel => ElicitationResponse::cancel(),
        _ => ElicitationResponse::declined_because(
            "the ACP client answered with an action this agent does not know",
        ),
    }
}

/// Hands the answer to the engine; an answer that does not fit the form becomes a
/// decline saying so.
fn answer(session: &Session, id: &str, response: ElicitationResponse) {
    match session.engine.answer_elicitation(&session.id, id, response) {
        Ok(()) => {}
        Err(ElicitationAnswerError::InvalidContent(problem)) => {
            tracing::warn!(session_id = %session.id, elicitation_id = id, %problem, "the ACP client's answer does not fit the form; declining");
            let _ = session.engine.answer_elicitation(
                &session.id,
                id,
                ElicitationResponse::declined_because(format!(
                    "the editor's answer does not fit the server's form: {problem}"
                )),
            );
        }
        Err(error) => {
            tracing::debug!(session_id = %session.id, elicitation_id = id, %error, "the question ended before its answer");
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn client_answers_map_to_engine_answers() {
        let accept: CreateElicitationResponse =
            serde_json::from_value(json!({"action": "accept", "content": {"name": "Ada", "age": 36}}))
                .unwrap();
        let mapped = from_client(accept);
        assert_eq!(mapped.action, engine_ports::ElicitationAction::Accept);
        assert_eq!(
            Value::Object(mapped.content.unwrap()),
            json!({"name": "Ada", "age": 36})
        );
        let decline: CreateElicitationResponse =
            serde_json::from_value(json!({"action": "decline"})).unwrap();
        assert_eq!(from_client(decline), ElicitationResponse::decline());
        let cancel: CreateElicitationResponse = serde_json::from_value(json!({"action": "cancel"})).unwrap();
        assert_eq!(from_client(cancel), ElicitationResponse::cancel());
        let other: CreateElicitationResponse = serde_json::from_value(json!({"action": "_snooze"})).unwrap();
        assert!(from_client(other).reason.unwrap().contains("does not know"));
    }
}
