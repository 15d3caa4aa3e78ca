//! The port implementations through which the telemetry observes: decorators of
//! the audit recorder, the event log and the session store that time each write and
//! pass it on unchanged (the same result, the same error), so turning telemetry off
//! changes nothing else, and an [`EventSink`] for a host without an event log. Each
//! only takes the time and queues a [`Fact`] for the telemetry thread.
//!
//! The engine appends every event to its log before it hands the event to its live
//! sink, so the timed append is also where an event is observed: one fact per event
//! carries both (its time is the append's end, when a sink would have seen it).

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use engine_ports::{
    Event, EventLog, EventSink, RecorderError, RunLease, SessionId, SessionListing, SessionSnapshot,
    SessionStore, StoreError, ToolCallRecord, ToolCallRecorder,
};

use crate::facts::{Fact, StoreWrite};
use crate::observer::Observer;

/// The live sink, for a host whose engines have no event log: the facts of each
/// event the observer uses, queued with the time it was seen.
pub(crate) struct TelemetrySink(pub(crate) Arc<Observer>);

impl EventSink for TelemetrySink {
    fn emit(&self, session: &SessionId, event: &Event) {
        if let Some(fact) = Fact::event(
            session,
            event,
            self.0.content(),
            &self.0.names,
            Instant::now(),
            None,
        ) {
            self.0.observe(fact);
        }
    }
}

/// Times a write and reports it to the observer (a span of its own).
async fn timed<T, E: ToString>(
    observer: &Observer,
    session: &SessionId,
    operation: &'static str,
    write: impl Future<Output = Result<T, E>>,
) -> Result<T, E> {
    let start = Instant::now();
    let outcome = write.await;
    let took = start.elapsed();
    observer.observe(Fact::StoreWrite(StoreWrite {
        session: session.clone(),
        operation,
        start,
        took,
        failed: outcome.as_ref().err().map(ToString::to_string),
        call: None,
    }));
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
        let start = Instant::now();
        let outcome = self.inner.record(record).await;
        let took = start.elapsed();
        let failed = outcome.as_ref().err().map(ToString::to_string);
        self.observer.observe(Fact::record(record, start, took, failed));
        outcome
    }

    async fn flush(&self, session: &SessionId) -> Result<(), RecorderError> {
        self.inner.flush(session).await
    }
}

/// The event log, timed (appends are measured, flushes are also spans); each append
/// is also its event's observation (see the module doc).
pub(crate) struct ObservedEventLog {
    pub(crate) inner: Arc<dyn EventLog>,
    pub(crate) observer: Arc<Observer>,
}

#[async_trait]
impl EventLog for ObservedEventLog {
    async fn append(&self, session: &SessionId, event: &Event) -> Result<(), StoreError> {
        let start = Instant::now();
        let outcome = self.inner.append(session, event).await;
        let end = Instant::now();
        let took = end.saturating_duration_since(start);
        // An event the observer does not use is measured only.
        self.observer.observe(
            match Fact::event(
                session,
                event,
                self.observer.content(),
                &self.observer.names,
                end,
                Some(took),
            ) {
                Some(fact) => fact,
                None => Fact::Measured {
                    operation: "append",
                    took,
                },
            },
        );
        outcome
    }

    async fn read(&self, session: &SessionId) -> Result<Vec<Event>, StoreError> {
        self.inner.read(session).await
    }

    async fn flush(&self, session: &SessionId) -> Result<(), StoreError> {
        timed(&self.observer, session, "flush", self.inner.flush(session)).await
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
            self.inner.create(snapshot),
        )
        .await
    }

    async fn load(&self, id: &SessionId) -> Result<SessionSnapshot, StoreError> {
        self.inner.load(id).await
    }

    async fn save(&self, snapshot: &SessionSnapshot) -> Result<(), StoreError> {
        timed(&self.observer, &snapshot.id, "save", self.inner.save(snapshot)).await
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
