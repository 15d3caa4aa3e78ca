//! One MCP session: the connect handshake over either transport (`dial`), requests with
//! caller cancellation and their time limits (`requests`), the typed drop
//! classification (`failure`), the client handler that routes a server's questions
//! during a tool call to that call (`handler`), and close.

mod dial;
mod failure;
mod handler;
mod requests;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use rmcp::model::ProtocolVersion;
use rmcp::service::{Peer, RoleClient, RunningService};

pub(crate) use dial::{DialContext, DialError, dial};
pub(crate) use failure::{Failure, error_chain};
use handler::Handler;
pub(crate) use handler::{DirtyFlags, ListKind};

use crate::calls::InFlightCalls;
use crate::stdio::ChildProcess;

/// How long closing a stdio session's service (and so the child's stdin) may take
/// before the exit → TERM → KILL sequence starts.
const STDIN_CLOSE_LIMIT: Duration = Duration::from_millis(500);

/// What the server's `initialize` result advertised.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Advertised {
    pub(crate) resources: bool,
    pub(crate) prompts: bool,
}

impl Advertised {
    /// Whether the server has the `kind` list (every server has tools).
    pub(crate) fn lists(self, kind: ListKind) -> bool {
        match kind {
            ListKind::Tools => true,
            ListKind::Resources => self.resources,
            ListKind::Prompts => self.prompts,
        }
    }
}

/// One live (or dead) MCP session.
pub(crate) struct Session {
    pub(crate) generation: u64,
    /// The server's name (for diagnostics).
    server: Arc<str>,
    /// The protocol revision the connect negotiated (`2026-07-28`, `2025-11-25`, …).
    pub(crate) protocol: ProtocolVersion,
    /// The `subscriptions/listen` task of a 2026-07-28 session.
    listener: Option<tokio::task::AbortHandle>,
    peer: Peer<RoleClient>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    dropped: AtomicBool,
    /// Set by the HTTP client when the server said the session is gone.
    lost: Option<Arc<AtomicBool>>,
    child: Option<Arc<ChildProcess>>,
    limits: RequestLimits,
    /// Requests awaiting their reply, and a wake-up when that drops to zero.
    in_flight: AtomicUsize,
    idle: tokio::sync::Notify,
    /// The requests awaiting their reply, by id: for progress and elicitation routing.
    calls: Arc<InFlightCalls>,
    pub(crate) advertised: Advertised,
}

/// How long one request may wait for its reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestLimits {
    /// Without a reply (or a progress notification for the request) for this long,
    /// the request is given up: the server is sent `notifications/cancelled` and the
    /// caller gets "did not answer within N s; request outcome is unknown". Each
    /// progress notification starts the wait again.
    pub idle: Duration,
    /// The longest a request may take, progress or not.
    pub total: Duration,
}

/// Default of [`RequestLimits::idle`]: 60 s.
pub(crate) const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Default of [`RequestLimits::total`]: 600 s.
pub(crate) const DEFAULT_MAX_CALL: Duration = Duration::from_secs(600);

impl Default for RequestLimits {
    fn default() -> Self {
        Self {
            idle: DEFAULT_REQUEST_TIMEOUT,
            total: DEFAULT_MAX_CALL,
        }
    }
}

impl Session {
    /// Whether the session is known dead: marked dropped, transport closed, or its
    /// stdio child exited.
    pub(crate) fn is_dead(&self) -> bool {
        self.dropped.load(Ordering::SeqCst)
            || self.lost.as_ref().is_some_and(|lost| lost.load(Ordering::SeqCst))
            || self.peer.is_transport_closed()
            || self.child.as_ref().is_some_and(|c| c.has_exited())
    }

    /// Whether the transport itself reports closed (or the child exited).
    pub(crate) fn transport_closed(&self) -> bool {
        self.peer.is_transport_closed() || self.child.as_ref().is_some_and(|c| c.has_exited())
    }

    pub(crate) fn mark_dropped(&self) {
        self.dropped.store(true, Ordering::SeqCst);
    }

    /// The stdio child's pid, if any.
    pub(crate) fn child_pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.pid())
    }

    /// Closes the session: the rmcp service within `limit` (HTTP: session
    /// DELETE), or for stdio its stdin (briefly), then the child's exit → TERM →
    /// KILL sequence.
    pub(crate) async fn close(&self, limit: Duration) {
        self.mark_dropped();
        if let Some(listener) = &self.listener {
            listener.abort();
        }
        let service = self.service.lock().await.take();
        if let Some(mut service) = service {
            let limit = if self.child.is_some() {
                STDIN_CLOSE_LIMIT
            } else {
                limit
            };
            let _ = service.close_with_timeout(limit).await;
        }
        if let Some(child) = &self.child {
            child.shut_down().await;
        }
    }

    /// Kills a stdio child's process group at once (a close that ran out of time).
    pub(crate) fn kill(&self) {
        if let Some(listener) = &self.listener {
            listener.abort();
        }
        if let Some(child) = &self.child {
            child.kill();
        }
    }
}
