//! [`Run`]: the event stream of one run.

use std::pin::Pin;
use std::task::{Context, Poll};

use engine_ports::{Event, SessionId};
use futures::Stream;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

/// The events of one run, ending right after `result`. Dropping it cancels the run
/// (which still finishes its bookkeeping: every call paired, the session saved).
pub struct Run {
    session: SessionId,
    events: mpsc::Receiver<Event>,
    cancel: CancellationToken,
    _cancel_on_drop: DropGuard,
}

impl Run {
    pub(super) fn new(session: SessionId, events: mpsc::Receiver<Event>, cancel: CancellationToken) -> Self {
        Self {
            session,
            events,
            _cancel_on_drop: cancel.clone().drop_guard(),
            cancel,
        }
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
        self.events.poll_recv(cx)
    }
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}
