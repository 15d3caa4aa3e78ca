//! `tools/call`: one served call through the engine ([`Engine::call_tool`]), its
//! asks and a tool's questions put to the client as form elicitations, the client's
//! `notifications/cancelled` and the call timeout forwarded as cancellation.
//!
//! [`Engine::call_tool`]: engine_core::Engine::call_tool

use std::sync::atomic::Ordering;
use std::time::Duration;

use engine_core::host::args_summary;
use engine_core::{DEFAULT_ELICITATION_TIMEOUT, ElicitationResponse, ServedAnswers, ServedCall};
use engine_ports::{EventKind, ToolCall, Verdict};
use futures::StreamExt as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationSchema,
};
use rmcp::service::{ElicitationMode, Peer, RequestContext, RoleServer};
use serde_json::{Value, json};

use crate::content::call_tool_result;
use crate::handler::{Connection, client_name};

/// Runs one `tools/call`; every failure is an error result the client reads.
pub(crate) async fn call(
    connection: &Connection,
    request: CallToolRequestParams,
    context: RequestContext<RoleServer>,
) -> CallToolResult {
    let shared = &connection.shared;
    let number = connection.state.calls.fetch_add(1, Ordering::SeqCst) + 1;
    let id = format!("mcp-{number}");
    let name = request.name.to_string();
    let args = request
        .arguments
        .map_or_else(|| "{}".to_owned(), |map| Value::Object(map).to_string());
    let peer = &context.peer;
    let can_ask = peer
        .supported_elicitation_modes()
        .contains(&ElicitationMode::Form);
    let no_person = (!can_ask).then(|| {
        let client = client_name(peer).unwrap_or_else(|| "the MCP client".to_owned());
        format!(
            "the MCP client ({client}) cannot be asked: it did not declare the elicitation capability \
             (form mode)"
        )
    });
    let served = ServedCall {
        session: connection.state.session.clone(),
        mode: shared.options.mode,
        call: ToolCall::new(id.as_str(), name.as_str(), args),
        caller: Some(connection.caller(peer)),
        no_person,
    };
    let mut run = match shared.engine().call_tool(served) {
        Ok(run) => run,
        Err(error) => return CallToolResult::error(vec![rmcp::model::ContentBlock::text(error.to_string())]),
    };
    let answers = run.answers();
    let deadline = tokio::time::sleep(shared.options.call_timeout);
    tokio::pin!(deadline);
    let mut timed_out = false;
    loop {
        let event = tokio::select! {
            () = context.ct.cancelled(), if !run.cancel_token().is_cancelled() => {
                tracing::debug!(call_id = %id, "the client cancelled the call");
                run.cancel();
                continue;
            }
            () = &mut deadline, if !timed_out => {
                timed_out = true;
                tracing::warn!(call_id = %id, tool = %name, "the call passed its time limit; cancelling it");
                run.cancel();
                continue;
            }
            event = run.next() => event,
        };
        let Some(event) = event else { break };
        match event.kind {
            EventKind::PermissionAsk {
                ask_id,
                name,
                args,
                reason,
                ..
            } => {
                let verdict = ask_approval(peer, &name, &args, &reason, &context.ct).await;
                answers.approve(&ask_id, verdict);
            }
            EventKind::ElicitationRequest {
                elicitation_id,
                name,
                message,
                requested_schema,
                ..
            } => {
                let response = relay_question(peer, &name, message, requested_schema, &context.ct).await;
                answer_question(&answers, &elicitation_id, response);
            }
            _ => {}
        }
    }
    let outcome = run.outcome().await;
    if connection.hydrate(outcome.hydrated.clone()) && peer.notify_tool_list_changed().await.is_err() {
        tracing::debug!("the client left before the tool list change could be sent");
    }
    let mut result = call_tool_result(&outcome.result);
    if timed_out {
        result = CallToolResult::error(vec![rmcp::model::ContentBlock::text(format!(
            "call to {name} did not finish within {} s and was cancelled",
            shared.options.call_timeout.as_secs()
        ))]);
    }
    if let Some(failure) = outcome.audit_failure {
        result.is_error = Some(true);
        result.content.push(rmcp::model::ContentBlock::text(format!(
            "the call's audit record could not be written ({failure}); audit is required"
        )));
    }
    result
}

/// Asks the client whether the call may run: a form with no field, accepted to run
/// it once; declined, cancelled, failed or unanswered (within the elicitation
/// timeout) is a refusal.
async fn ask_approval(
    peer: &Peer<RoleServer>,
    tool: &str,
    args: &Value,
    reason: &str,
    cancel: &tokio_util::sync::CancellationToken,
) -> Verdict {
    let message = format!(
        "Allow {tool}({})? {reason}. Accept to run this call once; decline to refuse it.",
        args_summary(args, 300)
    );
    let schema = json!({"type": "object", "properties": {}});
    match elicit(peer, message, schema, cancel).await {
        Ok(result) if result.action == ElicitationAction::Accept => Verdict::AllowOnce,
        Ok(_) => Verdict::Deny,
        Err(error) => {
            tracing::warn!(tool, %error, "asking the MCP client for approval failed; the call is refused");
            Verdict::Deny
        }
    }
}

/// Relays a tool's question (an upstream server's form) to the client.
async fn relay_question(
    peer: &Peer<RoleServer>,
    tool: &str,
    message: String,
    schema: Value,
    cancel: &tokio_util::sync::CancellationToken,
) -> ElicitationResponse {
    let message = format!("{tool} asks: {message}");
    match elicit(peer, message, schema, cancel).await {
        Ok(result) => match result.action {
            ElicitationAction::Accept => match result.content {
                Some(Value::Object(content)) => ElicitationResponse::accept(content),
                None => ElicitationResponse::accept(serde_json::Map::new()),
                Some(_) => ElicitationResponse::declined_because("the MCP client's answer is not an object"),
            },
            ElicitationAction::Decline => ElicitationResponse::decline(),
            _ => ElicitationResponse::cancel(),
        },
        Err(error) => {
            ElicitationResponse::declined_because(format!("the MCP client could not be asked: {error}"))
        }
    }
}

/// Hands a question's answer to the engine; an answer that does not fit the form
/// becomes a decline saying so.
fn answer_question(answers: &ServedAnswers, id: &str, response: ElicitationResponse) {
    if let Err(engine_core::ElicitationAnswerError::InvalidContent(problem)) =
        answers.answer_elicitation(id, response)
    {
        let _ = answers.answer_elicitation(
            id,
            ElicitationResponse::declined_because(format!(
                "the MCP client's answer does not fit the form: {problem}"
            )),
        );
    }
}

/// One form elicitation to the client, bounded by the elicitation timeout and
/// given up when the call is cancelled.
async fn elicit(
    peer: &Peer<RoleServer>,
    message: String,
    schema: Value,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<ElicitResult, String> {
    let requested_schema: ElicitationSchema =
        serde_json::from_value(schema).map_err(|error| format!("the form cannot be sent: {error}"))?;
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema,
    };
    let timeout: Option<Duration> = Some(DEFAULT_ELICITATION_TIMEOUT);
    tokio::select! {
        () = cancel.cancelled() => Err("the call was cancelled".to_owned()),
        result = peer.create_elicitation_with_timeout(params, timeout) => result.map_err(|error| error.to_string()),
    }
}
