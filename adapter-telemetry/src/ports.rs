//! The port implementations through which the telemetry observes: an extra
//! [`EventSink`], and decorators of the audit recorder, the event log and the session
//! store that time each write and pass it on unchanged (the same result, the same
//! error), so turning telemetry off changes nothing else. Each only takes the time
//! and queues a [`Fact`] for the telemetry thread.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use engine_ports::{
    Event, EventLog, EventSink, RecorderError, RunLease, SessionId, SessionListing, SessionSnapshot,
    SessionStore, StoreError, ToolCallRecord, ToolCallRecorder,
};

use crate::facts::{Fact, StoreWrite};
use crate::observer::Observer;

/// The live sink: the facts of each event the observer uses, queued with the time
/// it was seen.
pub(crate) struct TelemetrySink(pub(crate) Arc<Observer>);

impl EventSink for TelemetrySink {
    fn emit(&self, session: &SessionId, event: &Event) {
        if let Some(fact) = Fact::event(session, event, self.0.content()) {
            self.0.observe(fact);
        }
    }
}

/// Times a write and reports it to the observer.
async fn timed<T, E: ToString>(
    observer: &Observer,
    session: &SessionId,
    operation: &'static str,
    call: Option<&engine_ports::ToolCallId>,
    span: bool,
    write: impl Future<Output = Result<T, E>>,
) -> Result<T, E> {
    let start = Instant::now();
    let outcome = write.await;
    let took = start.elapsed();
    observer.observe(if span {
        Fact::StoreWrite(StoreWrite {
            session: session.clone(),
            operation,
            start,
            took,
            failed: outcome.as_ref().err().map(ToString::to_string),
            call: call.cloned(),
        })
    } else {
        Fact::Measured { operation, took }
    });
    outcome
}

/// The audit recorder, timed; each record also gives its call's span who decided,
/// the queue and run times.
pub(crate) struct ObservedRecorder {
    pub(crate) inner: Arc<dyn ToolCallRecorder>,
    pub(crate) observer: Arc<Observer>,
}

#[async_trait]
impl ToolCallRecorder for ObservedRecorder {
    async fn record(&self, record: &ToolCallRecord) -> Result<(), RecorderError> {
        self.observer.observe(Fact::record(record));
        let write = self.inner.record(record);
        timed(
            &self.observer,
            &record.session_id,
            "record",
            Some(&record.call_id),
            true,
            write,
        )
        .await
    }

    async fn flush(&self, session: &SessionId) -> Result<(), RecorderError> {
        self.inner.flush(session).await
    }
}

/// The event log, timed (appends are measured, flushes are also spans).
pub(crate) struct ObservedEventLog {
    pub(crate) inner: Arc<dyn EventLog>,
    pub(crate) observer: Arc<Observer>,
}

#[async_trait]
impl EventLog for ObservedEventLog {
    async fn append(&self, session: &SessionId, event: &Event) -> Result<(), StoreError> {
        timed(
            &self.observer,
            session,
            "append",
            None,
            false,
            self.inner.append(session, event),
        )
        .await
    }

    async fn read(&self, session: &SessionId) -> Result<Vec<Event>, StoreError> {
        self.inner.read(session).await
    }

    async fn flush(&self, session: &SessionId) -> Result<(), StoreError> {
        timed(
            &self.observer,
            session,
            "flush",
            None,
            true,
            self.inner.flush(session),
        )
        .await
    }
}

/// The session store, timed on its writes (`create`, `save`).
pub(crate) struct ObservedSessionStore {
    pub(crate) inner: Arc<dyn SessionStore>,
    pub(crate) observer: Arc<Observer>,
}

#[async_trait]
impl SessionStore for ObservedSessionStore {
    async fn create(&self, snapshot: &SessionSnapshot) -> Result<(), StoreError> {
        timed(
            &self.observer,
            &snapshot.id,
            "create",
            None,
            true,
            self.inner.create(snapshot),
        )
        .await
    }

    async fn load(&self, id: &SessionId) -> Result<SessionSnapshot, StoreError> {
        self.inner.load(id).await
    }

    async fn save(&self, snapshot: &SessionSnapshot) -> Result<(), StoreError> {
        timed(
            &self.observer,
            &snapshot.id,
            "save",
            None,
            true,
            self.inner.save(snapshot),
        )
        .await
    }

    async fn list(&self) -> Result<Vec<SessionListing>, StoreError> {
        self.inner.list().await
    }

    async fn listing(&self, id: &SessionId) -> Result<SessionListing, StoreError> {
        self.inner.listing(id).await
    }

    async fn delete(&self, id: &SessionId) -> Result<(), StoreError> {
        self.inner.delete(id).await
    }

    async fn acquire_run(&self, id: &SessionId) -> Result<RunLease, StoreError> {
        self.inner.acquire_run(id).await
    }

    async fn probe(&self) -> Result<(), StoreError> {
        self.inner.probe().await
    }
}
