//! [`CallElicitor`]: the [`Elicitor`] a tool gets for one call. It bounds what a
//! server may ask, emits `elicitation.request` / `elicitation.result`, waits for the
//! host's answer through the run's [`AskRegistry`] (declining at once when the run
//! is headless, or when nobody answers in time), and keeps a note of every answer
//! the harness gave without the user, which the call's result then carries.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use engine_ports::{ElicitationAction, EventKind, SessionId, ToolCall};
use tokio_util::sync::CancellationToken;

use super::AskRegistry;
use crate::elicitation::{
    ElicitationRequest, ElicitationResponse, Elicitor, MAX_ELICITATION_MESSAGE_BYTES,
    MAX_ELICITATIONS_PER_CALL, check_form,
};
use crate::emitter::EventEmitter;

/// Why a headless run declines every question.
pub(crate) const HEADLESS_DECLINE: &str = "this run is headless (mecated run): nobody can answer \
    the server's question, so it was declined; run the session from an editor over ACP or \
    through the HTTP API to answer such questions";

/// The elicitor of one call.
pub(super) struct CallElicitor {
    pub(super) session_id: SessionId,
    /// The call (the one that runs: a hook's rewrite when there is one); its task
    /// runs it from here.
    pub(super) call: ToolCall,
    /// The session-wide turn number and the call's 1-based position in it: an
    /// elicitation's id is `elicit-<turn>-<position>-<counter>`, unique within the
    /// session.
    pub(super) turn: u64,
    pub(super) position: usize,
    pub(super) events: Arc<EventEmitter>,
    /// `None`: a headless run.
    pub(super) asks: Option<Arc<AskRegistry>>,
    /// The turn's cancellation.
    pub(super) cancel: CancellationToken,
    pub(super) timeout: Duration,
    pub(super) asked: AtomicUsize,
    pub(super) notes: Mutex<Vec<String>>,
}

impl CallElicitor {
    /// The notes of the answers the harness gave without the user, one line each.
    pub(super) fn notes(&self) -> Vec<String> {
        self.notes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    async fn emit_request(&self, id: &str, request: &ElicitationRequest) {
        self.events
            .emit(EventKind::ElicitationRequest {
                elicitation_id: id.to_owned(),
                call_id: self.call.id().clone(),
                name: self.call.name().to_owned(),
                message: request.message.clone(),
                requested_schema: request.requested_schema.clone(),
            })
            .await;
    }

    /// Emits how the elicitation ended; notes an answer given without the user.
    async fn finish(&self, id: &str, response: ElicitationResponse) -> ElicitationResponse {
        self.events
            .emit(EventKind::ElicitationResult {
                elicitation_id: id.to_owned(),
                call_id: self.call.id().clone(),
                action: response.action,
                reason: response.reason.clone(),
            })
            .await;
        if let Some(reason) = &response.reason {
            let verb = match response.action {
                ElicitationAction::Cancel => "cancelled",
                ElicitationAction::Decline | ElicitationAction::Accept => "declined",
            };
            self.notes
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(format!("[the server's question was {verb}: {reason}]"));
        }
        response
    }

    /// Declines a question that breaks the bounds, without showing it to anyone.
    async fn refuse(&self, id: &str, problem: &str) -> ElicitationResponse {
        tracing::warn!(
            session_id = %self.session_id,
            call_id = %self.call.id(),
            tool = self.call.name(),
            problem,
            "a tool's server asked a question outside the limits; declined without asking"
        );
        self.finish(
            id,
            ElicitationResponse::declined_because(format!("it was not shown to the user: {problem}")),
        )
        .await
    }
}

#[async_trait]
impl Elicitor for CallElicitor {
    async fn elicit(&self, request: ElicitationRequest, cancel: &CancellationToken) -> ElicitationResponse {
        let n = self.asked.fetch_add(1, Ordering::SeqCst) + 1;
        let id = format!("elicit-{}-{}-{n}", self.turn, self.position);
        if n > MAX_ELICITATIONS_PER_CALL {
            let problem =
                format!("the server asked more than {MAX_ELICITATIONS_PER_CALL} questions during one call");
            return self.refuse(&id, &problem).await;
        }
        if request.message.len() > MAX_ELICITATION_MESSAGE_BYTES {
            let problem = format!(
                "its question is {} bytes, over the {MAX_ELICITATION_MESSAGE_BYTES}-byte limit",
                request.message.len()
            );
            return self.refuse(&id, &problem).await;
        }
        if let Err(problem) = check_form(&request.requested_schema) {
            return self.refuse(&id, &problem).await;
        }
        let Some(asks) = &self.asks else {
            self.emit_request(&id, &request).await;
            return self
                .finish(&id, ElicitationResponse::declined_because(HEADLESS_DECLINE))
                .await;
        };
        let answer = asks.open_elicitation(&id, request.requested_schema.clone());
        self.emit_request(&id, &request).await;
        let response = tokio::select! {
            biased;
            answer = answer => answer.unwrap_or_else(|_| ElicitationResponse::cancelled_because("the run ended")),
            () = self.cancel.cancelled() => ElicitationResponse::cancelled_because("the run was cancelled"),
            () = cancel.cancelled() => ElicitationResponse::cancelled_because("the server withdrew its question"),
            () = tokio::time::sleep(self.timeout) => ElicitationResponse::declined_because(format!(
                "nobody answered within {} s",
                self.timeout.as_secs_f64()
            )),
        };
        asks.close_elicitation(&id);
        self.finish(&id, response).await
    }
}
