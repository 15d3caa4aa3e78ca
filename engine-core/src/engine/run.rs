//! [`Run`]: the event stream of one run.

use std::pin::Pin;
use std::task::{Context, Poll};

use engine_ports::{Event, SessionId};
use futures::Stream;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::EngineError;
use crate::emitter::{Deliveries, Delivery};

/// Whether the run took its session's run lease.
pub(super) type StartOutcome = Result<(), EngineError>;

/// The events of one run, ending right after `result`. Dropping it cancels the run
/// (which still finishes its bookkeeping: every call paired, the session saved).
///
/// A run first takes its session's run lease from the store; [`Run::started`] tells
/// whether it got it. A run refused there emits no event at all.
pub struct Run {
    session: SessionId,
    events: Deliveries,
    cancel: CancellationToken,
    start: Option<oneshot::Receiver<StartOutcome>>,
    _cancel_on_drop: DropGuard,
}

impl Run {
    pub(super) fn new(
        session: SessionId,
        events: mpsc::Receiver<Delivery>,
        cancel: CancellationToken,
        start: oneshot::Receiver<StartOutcome>,
    ) -> Self {
        Self {
            session,
            events: Deliveries::new(events),
            _cancel_on_drop: cancel.clone().drop_guard(),
            cancel,
            start: Some(start),
        }
    }

    /// Waits until the run holds its session, before any event, and gives the run
    /// back. Hosts call it before answering that a run started.
    ///
    /// # Errors
    /// [`EngineError::Busy`] when another run holds the session's run lease (in
    /// another process sharing the store, or one that started in between);
    /// [`EngineError::Store`] when the store could not be asked. The run then ends
    /// without an event.
    pub async fn started(mut self) -> Result<Self, EngineError> {
        if let Some(start) = self.start.take()
            && let Ok(Err(error)) = start.await
        {
            return Err(error);
        }
        Ok(self)
    }

    /// The session this run belongs to.
    pub fn session_id(&self) -> &SessionId {
        &self.session
    }

    /// Cancels the run; the stream still delivers the remaining events and `result`.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }
}

impl Stream for Run {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        self.events.poll_next(cx)
    }
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}
