//! [`LiveRun`]: what the engine knows about a session's run in progress.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::delegation::RunDelegation;
use crate::dispatch::AskRegistry;

/// The cancel token, open asks and delegation state of one run in progress.
pub(super) struct LiveRun {
    pub(super) cancel: CancellationToken,
    pub(super) asks: Arc<AskRegistry>,
    /// Present when the engine can start child engines.
    pub(super) delegation: Option<Arc<RunDelegation>>,
}

impl LiveRun {
    pub(super) fn new(delegates: bool) -> Self {
        let cancel = CancellationToken::new();
        let delegation = delegates.then(|| Arc::new(RunDelegation::new(cancel.clone())));
        Self {
            cancel,
            asks: Arc::new(AskRegistry::new()),
            delegation,
        }
    }
}
