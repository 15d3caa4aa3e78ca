//! The telemetry thread: a thread of its own with a single-threaded tokio runtime,
//! where facts become spans and metric points and where every exporter runs (the
//! span export task, the periodic metric reader, their HTTP and gRPC connections).
//!
//! A run only queues facts ([`crate::facts::Inbox`]). Building spans, recording
//! metric points, encoding and posting them all take CPU; done on the runtime's
//! workers, that work would sit in the run's own path: a task woken from a worker
//! runs on that worker next, before the run goes on. A thread of its own is
//! scheduled by the operating system on whichever core is free.
//!
//! The thread sleeps until a fact arrives, then waits [`DRAIN_DELAY`] (or until
//! [`WAKE_AT`] facts wait) and applies everything waiting at once: a busy process
//! wakes it a few times a second, not once per event.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;

use crate::facts::WAKE_AT;
use crate::observer::Observer;

/// How long the first fact waits for others before the thread applies them.
pub(crate) const DRAIN_DELAY: Duration = Duration::from_millis(100);

/// The started thread: its runtime, where the exporters are built
/// ([`tokio::runtime::Handle::enter`]) so their tasks live there, and the observer
/// it waits for before it applies anything.
pub(crate) struct Started {
    pub(crate) runtime: tokio::runtime::Handle,
    observer: oneshot::Sender<Arc<Observer>>,
    stop: oneshot::Sender<()>,
}

/// Ends the thread when told or dropped, once it has applied what waits; its
/// runtime goes with it (and the exporters' tasks).
#[derive(Debug)]
pub(crate) struct Stopper(Option<oneshot::Sender<()>>);

impl Stopper {
    pub(crate) fn stop(&mut self) {
        if let Some(stop) = self.0.take() {
            let _ = stop.send(());
        }
    }
}

/// Starts the thread and its runtime. Dropping [`Started`] ends it.
pub(crate) fn start() -> std::io::Result<Started> {
    let (observer, observed) = oneshot::channel::<Arc<Observer>>();
    let (stop, stopped) = oneshot::channel();
    let (handle_tx, handle_rx) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("mecatl-telemetry".to_owned())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(runtime) => runtime,
                Err(error) => {
                    let _ = handle_tx.send(Err(error));
                    return;
                }
            };
            let _ = handle_tx.send(Ok(runtime.handle().clone()));
            runtime.block_on(async move {
                if let Ok(observer) = observed.await {
                    apply_loop(observer, stopped).await;
                }
            });
        })?;
    let runtime = handle_rx
        .recv()
        .map_err(|_| std::io::Error::other("the telemetry thread ended at its start"))??;
    Ok(Started {
        runtime,
        observer,
        stop,
    })
}

impl Started {
    /// Gives the thread the observer whose facts it applies.
    pub(crate) fn run(self, observer: Arc<Observer>) -> Stopper {
        let _ = self.observer.send(observer);
        Stopper(Some(self.stop))
    }
}

async fn apply_loop(observer: Arc<Observer>, mut stopped: oneshot::Receiver<()>) {
    let inbox = observer.inbox();
    loop {
        tokio::select! {
            () = inbox.wake.notified() => {}
            _ = &mut stopped => break,
        }
        if inbox.len() < WAKE_AT {
            tokio::select! {
                () = tokio::time::sleep(DRAIN_DELAY) => {}
                () = inbox.wake.notified() => {}
                _ = &mut stopped => break,
            }
        }
        observer.drain();
    }
    observer.drain();
}
