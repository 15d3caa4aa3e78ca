//! A session's requests: sent with caller cancellation, tracked while in flight (for
//! progress and elicitation routing, and for closing a replaced session only when
//! idle), and bounded by the [`RequestLimits`]; `notifications/cancelled` on expiry
//! or cancellation.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use engine_core::Elicitor;
use rmcp::model::{
    CancelledNotification, CancelledNotificationParam, ClientNotification, ClientRequest, RequestId,
    ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use tokio_util::sync::CancellationToken;

use super::failure::{Failure, Stage, classify};
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
    /// (a tool call): its questions go to `elicitor`.
    ///
    /// The limits are kept here rather than by rmcp: the idle time restarts with
    /// every progress notification for the request and stops while a question of the
    /// request waits for the user (the server is waiting for us, not hung); the total
    /// time always applies.
    pub(crate) async fn request_asking(
        &self,
        request: ClientRequest,
        cancel: &CancellationToken,
        elicitor: Option<Arc<dyn Elicitor>>,
    ) -> Result<ServerResult, Failure> {
        if cancel.is_cancelled() {
            return Err(Failure::Cancelled);
        }
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let _in_flight = InFlight(self);
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
            result = handle.await_response() => result,
            after = expiry(&entry, self.limits) => {
                guard.reason = "request timeout";
                return Err(Failure::TimedOut(after));
            }
        };
        guard.id = None;
        result.map_err(|e| classify(e, Stage::Await))
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
/// while it waits for the user) or its total time, whichever ends first; returns
/// that limit.
async fn expiry(entry: &CallEntry, limits: RequestLimits) -> Duration {
    let total = tokio::time::sleep(limits.total);
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
