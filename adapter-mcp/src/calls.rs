//! The requests of one MCP session that await their reply: what a progress
//! notification or a server's question (elicitation) belongs to.
//!
//! **Routing a question to its call.** Servers are shared: a global server's session
//! carries the tool calls of every harness session at once, so a question must reach
//! the user of the call that caused it, never another. On streamable HTTP a server
//! asks on the response stream of the request it is serving, and rmcp marks the
//! question with that request's id: the question goes to that call (and is declined
//! when the call has ended). Without that mark — stdio, or a question sent on the
//! session's standalone stream — the transport cannot tell, so the question goes to
//! the one tool call in flight on that session, and is declined when there is none
//! or more than one: a guess could show one person another session's question.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use engine_core::Elicitor;
use rmcp::model::{ProgressToken, RequestId};
use rmcp::service::InboundStreamOrigin;
use tokio::sync::Notify;

/// The in-flight requests of one session.
#[derive(Default)]
pub(crate) struct InFlightCalls {
    entries: Mutex<HashMap<RequestId, Arc<CallEntry>>>,
}

/// One request awaiting its reply.
pub(crate) struct CallEntry {
    progress_token: ProgressToken,
    /// Where the request's questions go (tool calls only).
    pub(crate) elicitor: Option<Arc<dyn Elicitor>>,
    /// Progress arrived, or a question was answered: the idle time restarts.
    activity: Notify,
    /// Questions of this request waiting for the user.
    asking: AtomicUsize,
    /// The size limit its reply went over, once the transport saw that.
    too_large: OnceLock<usize>,
    too_large_seen: Notify,
}

impl CallEntry {
    /// Whether a question of this request waits for the user.
    pub(crate) fn is_asking(&self) -> bool {
        self.asking.load(Ordering::SeqCst) > 0
    }

    /// Resolves at the next sign of life (progress, an answered question).
    pub(crate) async fn activity(&self) {
        self.activity.notified().await;
    }

    /// Resolves once the reply to this request went over the size limit of one
    /// message (the limit).
    pub(crate) async fn too_large(&self) -> usize {
        loop {
            if let Some(limit) = self.too_large.get() {
                return *limit;
            }
            // One waiter (the request itself): a wake-up before it waits is kept.
            self.too_large_seen.notified().await;
        }
    }

    /// Marks a question as waiting for the user until the guard drops.
    pub(crate) fn asking(self: &Arc<Self>) -> Asking {
        self.asking.fetch_add(1, Ordering::SeqCst);
        Asking(Arc::clone(self))
    }
}

/// A question waiting for the user; dropping it restarts the request's idle time.
pub(crate) struct Asking(Arc<CallEntry>);

impl Drop for Asking {
    fn drop(&mut self) {
        self.0.asking.fetch_sub(1, Ordering::SeqCst);
        self.0.activity.notify_one();
    }
}

impl InFlightCalls {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Arc<CallEntry>>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Registers a request sent with `id` and `progress_token`.
    pub(crate) fn register(
        &self,
        id: RequestId,
        progress_token: ProgressToken,
        elicitor: Option<Arc<dyn Elicitor>>,
    ) -> Arc<CallEntry> {
        let entry = Arc::new(CallEntry {
            progress_token,
            elicitor,
            activity: Notify::new(),
            asking: AtomicUsize::new(0),
            too_large: OnceLock::new(),
            too_large_seen: Notify::new(),
        });
        self.lock().insert(id, Arc::clone(&entry));
        entry
    }

    /// Forgets a request that got its reply (or was given up).
    pub(crate) fn remove(&self, id: &RequestId) {
        self.lock().remove(id);
    }

    /// A progress notification: the request it names is alive.
    pub(crate) fn progress(&self, token: &ProgressToken) {
        let entry = self
            .lock()
            .values()
            .find(|entry| entry.progress_token == *token)
            .cloned();
        if let Some(entry) = entry {
            entry.activity.notify_one();
        }
    }

    /// A reply went over the size limit of one message (`limit` bytes): the request
    /// named `id` fails with that, or without an id the one request in flight.
    /// Returns whether a request was told: with several in flight and no id, none
    /// is (each ends by its own time limits).
    pub(crate) fn too_large(&self, id: Option<&RequestId>, limit: usize) -> bool {
        let entry = {
            let entries = self.lock();
            match id {
                Some(id) => entries.get(id).cloned(),
                None if entries.len() == 1 => entries.values().next().cloned(),
                None => None,
            }
        };
        let Some(entry) = entry else {
            return false;
        };
        let _ = entry.too_large.set(limit);
        entry.too_large_seen.notify_one();
        true
    }

    /// The request a question belongs to (see the module documentation); the error
    /// says why none can be told.
    pub(crate) fn route(&self, origin: Option<&InboundStreamOrigin>) -> Result<Arc<CallEntry>, String> {
        let entries = self.lock();
        if let Some(InboundStreamOrigin::OutboundRequest(id)) = origin {
            return entries
                .get(id)
                .cloned()
                .ok_or_else(|| "the request it answers to has ended".to_owned());
        }
        let mut calls = entries.values().filter(|entry| entry.elicitor.is_some());
        match (calls.next(), calls.next()) {
            (Some(entry), None) => Ok(Arc::clone(entry)),
            (None, _) => Err("no tool call is in progress".to_owned()),
            (Some(_), Some(_)) => Err(format!(
                "{} tool calls are in progress and the transport does not say which one it belongs to",
                2 + calls.count()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use async_trait::async_trait;
    use engine_core::{ElicitationRequest, ElicitationResponse};
    use tokio_util::sync::CancellationToken;

    use super::*;

    struct Never;

    #[async_trait]
    impl Elicitor for Never {
        async fn elicit(&self, _: ElicitationRequest, _: &CancellationToken) -> ElicitationResponse {
            ElicitationResponse::decline()
        }
    }

    fn token(n: i64) -> ProgressToken {
        ProgressToken(rmcp::model::NumberOrString::Number(n))
    }

    #[test]
    fn a_marked_question_goes_to_its_request_and_an_unmarked_one_only_to_a_lone_call() {
        let calls = InFlightCalls::default();
        let a = calls.register(RequestId::Number(1), token(1), Some(Arc::new(Never)));
        let mark = |id| InboundStreamOrigin::OutboundRequest(RequestId::Number(id));
        assert!(Arc::ptr_eq(&calls.route(Some(&mark(1))).unwrap(), &a));
        assert!(Arc::ptr_eq(&calls.route(None).unwrap(), &a));
        assert!(Arc::ptr_eq(
            &calls.route(Some(&InboundStreamOrigin::Unassociated)).unwrap(),
            &a
        ));
        // A listing in flight asks nobody and does not count as a call.
        calls.register(RequestId::Number(2), token(2), None);
        assert!(Arc::ptr_eq(&calls.route(None).unwrap(), &a));

        let b = calls.register(RequestId::Number(3), token(3), Some(Arc::new(Never)));
        assert!(Arc::ptr_eq(&calls.route(Some(&mark(3))).unwrap(), &b));
        assert_eq!(
            calls.route(None).err().unwrap(),
            "2 tool calls are in progress and the transport does not say which one it belongs to"
        );
        calls.remove(&RequestId::Number(1));
        calls.remove(&RequestId::Number(3));
        assert_eq!(
            calls.route(Some(&mark(1))).err().unwrap(),
            "the request it answers to has ended"
        );
        assert_eq!(calls.route(None).err().unwrap(), "no tool call is in progress");
    }

    #[tokio::test]
    async fn an_oversized_reply_fails_the_request_it_names_or_else_a_lone_one() {
        let calls = InFlightCalls::default();
        let first = calls.register(RequestId::Number(1), token(1), None);
        assert!(calls.too_large(None, 16));
        assert_eq!(first.too_large().await, 16);
        let second = calls.register(RequestId::Number(2), token(2), None);
        assert!(
            !calls.too_large(None, 32),
            "two in flight and no id: nobody is told"
        );
        assert!(!calls.too_large(Some(&RequestId::Number(9)), 32));
        assert!(calls.too_large(Some(&RequestId::Number(2)), 32));
        assert_eq!(second.too_large().await, 32);
    }

    #[tokio::test]
    async fn progress_and_answered_questions_are_signs_of_life() {
        let calls = InFlightCalls::default();
        let entry = calls.register(RequestId::Number(1), token(7), None);
        calls.progress(&token(7));
        entry.activity().await;
        let asking = entry.asking();
        assert!(entry.is_asking());
        drop(asking);
        assert!(!entry.is_asking());
        entry.activity().await;
    }
}
