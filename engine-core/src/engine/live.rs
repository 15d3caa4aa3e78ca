//! [`LiveRun`]: what the engine knows about a session's run in progress.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::dispatch::AskRegistry;

/// The cancel token and open asks of one run in progress.
pub(super) struct LiveRun {
    pub(super) cancel: CancellationToken,
    pub(super) asks: Arc<AskRegistry>,
}

impl LiveRun {
    pub(super) fn new() -> Self {
        Self {
            cancel: CancellationToken::new(),
            asks: Arc::new(AskRegistry::new()),
        }
    }
}
