//! A session's requests: sent with caller cancellation, tracked while in flight (for
//! progress and elicitation routing, and for closing a replaced session only when
//! idle), and bounded by the [`RequestLimits`]; `notifications/cancelled` on expiry
//! or cancellation.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use engine_core::Elicitor;
use rmcp::model::{
    CancelledNotification, CancelledNotificationParam, ClientNotification, ClientRequest,
    DEFAULT_MRTR_MAX_ROUNDS, ElicitResult, ElicitationAction, InputRequest, InputRequests, InputResponses,
    RequestId, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::failure::{Failure, Stage, classify};
use super::handler::{ask_user, form_question};
use super::{RequestLimits, Session};
use crate::calls::{CallEntry, InFlightCalls};

impl Session {
    /// Sends one request and waits for its reply within the session's
    /// [`RequestLimits`], honouring `cancel`: on cancellation or expiry the server
    /// is sent `notifications/cancelled`.
    pub(crate) async fn request(
        &self,
        request: ClientRequest,
        cancel: &CancellationToken,
    ) -> Result<ServerResult, Failure> {
        self.request_asking(request, cancel, None).await
    }

    /// [`Session::request`] for a request during which the server may ask the user
    /// (a tool call): its questions go to `elicitor`, whether the server sends them
    /// during the request (up to 2025-11-25) or answers `input_required` and expects
    /// the request again with the answers (2026-07-28): both reach the same user.
    ///
    /// The limits are kept here rather than by rmcp: the idle time restarts with
    /// every progress notification for the request and stops while a question of the
    /// request waits for the user (the server is waiting for us, not hung); the total
    /// time always applies, across every round of an `input_required` exchange.
    pub(crate) async fn request_asking(
        &self,
        mut request: ClientRequest,
        cancel: &CancellationToken,
        elicitor: Option<Arc<dyn Elicitor>>,
    ) -> Result<ServerResult, Failure> {
        if cancel.is_cancelled() {
            return Err(Failure::Cancelled);
        }
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let _in_flight = InFlight(self);
        let deadline = Instant::now() + self.limits.total;
        let mut state_only_rounds = 0_u32;
        for _ in 0..DEFAULT_MRTR_MAX_ROUNDS {
            let reply = self
                .round(request.clone(), cancel, elicitor.clone(), deadline)
                .await?;
            let ServerResult::InputRequiredResult(input) = reply else {
                return Ok(reply);
            };
            let asked = input.input_requests.as_ref().is_some_and(|r| !r.is_empty());
            if !asked && input.request_state.is_none() {
                return Err(Failure::Other(
                    "the server answered input_required without a question or request state".to_owned(),
                ));
            }
            let answers = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(Failure::Cancelled),
                () = tokio::time::sleep_until(deadline) => return Err(Failure::TimedOut(self.limits.total)),
                answers = self.answer(input.input_requests.unwrap_or_default(), elicitor.as_ref(), cancel) => answers?,
            };
            if asked {
                state_only_rounds = 0;
            } else {
                // The server is still working and only hands its state back: pace
                // the rounds (50, 100, 200, then 250 ms) rather than spinning.
                let pause = Duration::from_millis((50_u64 << state_only_rounds.min(3)).min(250));
                state_only_rounds += 1;
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => return Err(Failure::Cancelled),
                    () = tokio::time::sleep(pause) => {}
                }
            }
            retry_with(&mut request, answers, input.request_state)?;
        }
        Err(Failure::Other(format!(
            "the server still asked for input after {DEFAULT_MRTR_MAX_ROUNDS} rounds"
        )))
    }

    /// One request and its reply, within the idle limit and before `deadline`.
    async fn round(
        &self,
        request: ClientRequest,
        cancel: &CancellationToken,
        elicitor: Option<Arc<dyn Elicitor>>,
        deadline: Instant,
    ) -> Result<ServerResult, Failure> {
        let handle = self
            .peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| classify(e, Stage::Enqueue))?;
        let entry = self
            .calls
            .register(handle.id.clone(), handle.progress_token.clone(), elicitor);
        let _registered = Registered {
            calls: &self.calls,
            id: handle.id.clone(),
        };
        let mut guard = CancelOnDrop {
            peer: self.peer.clone(),
            id: Some(handle.id.clone()),
            reason: "request cancelled by the caller",
        };
        let result = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(Failure::Cancelled),
            // Before the reply: over HTTP the transport's own error for the same
            // cause follows the mark.
            limit = entry.too_large() => {
                guard.reason = "response too large";
                return Err(Failure::TooLarge(limit));
            }
            result = handle.await_response() => result,
            after = expiry(&entry, self.limits, deadline) => {
                guard.reason = "request timeout";
                return Err(Failure::TimedOut(after));
            }
        };
        guard.id = None;
        result.map_err(|e| classify(e, Stage::Await))
    }

    /// The answers to the questions of an `input_required` result, by key: each
    /// form question asked of the request's user. Sampling and roots, which this
    /// client does not offer, fail the request.
    async fn answer(
        &self,
        requests: InputRequests,
        elicitor: Option<&Arc<dyn Elicitor>>,
        cancel: &CancellationToken,
    ) -> Result<InputResponses, Failure> {
        let mut answers = InputResponses::new();
        for (key, request) in requests {
            let InputRequest::Elicitation(question) = request else {
                return Err(Failure::Other(format!(
                    "the server asked for input this client does not offer (input request {key:?} is not a form question)"
                )));
            };
            let result = match form_question(&self.server, question.params) {
                Some(question) => ask_user(&self.server, question, elicitor, cancel).await,
                None => ElicitResult::new(ElicitationAction::Decline),
            };
            let value = serde_json::to_value(result)
                .map_err(|e| Failure::Other(format!("cannot encode the answer to {key:?}: {e}")))?;
            answers.insert(key, value);
        }
        Ok(answers)
    }

    /// Waits until no request awaits its reply on this session (at most the longest
    /// call allowed). A replaced session is closed only then, so a request still on
    /// it ends by its own classification (a lost session's requests fail at once as
    /// "not delivered" and are resent on the new session) rather than as "closed".
    pub(crate) async fn wait_idle(&self) {
        let wait = async {
            loop {
                let notified = self.idle.notified();
                if self.in_flight.load(Ordering::SeqCst) == 0 {
                    return;
                }
                notified.await;
            }
        };
        let _ = tokio::time::timeout(self.limits.total, wait).await;
    }
}

/// Counts one request out of [`Session::request`], however it ends.
struct InFlight<'a>(&'a Session);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// When a request's time is up: its idle time (restarted by its progress, stopped
/// while it waits for the user) or its total time (ending at `deadline`), whichever
/// ends first; returns that limit.
async fn expiry(entry: &CallEntry, limits: RequestLimits, deadline: Instant) -> Duration {
    let total = tokio::time::sleep_until(deadline);
    tokio::pin!(total);
    loop {
        tokio::select! {
            () = &mut total => return limits.total,
            () = tokio::time::sleep(limits.idle) => {
                if !entry.is_asking() {
                    return limits.idle;
                }
            }
            () = entry.activity() => {}
        }
    }
}

/// `request` again with the answers to its questions and the server's state.
fn retry_with(
    request: &mut ClientRequest,
    answers: InputResponses,
    state: Option<String>,
) -> Result<(), Failure> {
    let answers = (!answers.is_empty()).then_some(answers);
    match request {
        ClientRequest::CallToolRequest(call) => {
            call.params.input_responses = answers;
            call.params.request_state = state;
        }
        ClientRequest::GetPromptRequest(get) => {
            get.params.input_responses = answers;
            get.params.request_state = state;
        }
        ClientRequest::ReadResourceRequest(read) => {
            read.params.input_responses = answers;
            read.params.request_state = state;
        }
        _ => {
            return Err(Failure::Other(
                "the server answered input_required to a request that cannot carry answers".to_owned(),
            ));
        }
    }
    Ok(())
}

/// Takes a request out of the in-flight table however it ends.
struct Registered<'a> {
    calls: &'a InFlightCalls,
    id: RequestId,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.calls.remove(&self.id);
    }
}

/// Sends `notifications/cancelled` for a request whose future was dropped.
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
    reason: &'static str,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        let reason = self.reason;
        runtime.spawn(async move {
            let notification = CancelledNotification::new(CancelledNotificationParam::new(
                Some(id),
                Some(reason.to_owned()),
            ));
            let _ = peer
                .send_notification(ClientNotification::CancelledNotification(notification))
                .await;
        });
    }
}
