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
use std::time::{Duration, Instant};

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

/// Times `write` and queues the fact `fact` makes of it: from when it started, how
/// long it took, and its error as text when it failed.
async fn timed<T, E: ToString>(
    observer: &Observer,
    write: impl Future<Output = Result<T, E>>,
    fact: impl FnOnce(Instant, Duration, Option<String>) -> Fact,
) -> Result<T, E> {
    let start = Instant::now();
    let outcome = write.await;
    let took = start.elapsed();
    observer.observe(fact(start, took, outcome.as_ref().err().map(ToString::to_string)));
    outcome
}

/// The fact of a store write that is a span of its own.
fn store_span(
    session: &SessionId,
    operation: &'static str,
) -> impl FnOnce(Instant, Duration, Option<String>) -> Fact {
    move |start, took, failed| {
        Fact::StoreWrite(StoreWrite {
            session: session.clone(),
            operation,
            start,
            took,
            failed,
            call: None,
        })
    }
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
        timed(
            &self.observer,
            self.inner.record(record),
            |start, took, failed| Fact::record(record, start, took, failed),
        )
        .await
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
        let observer = &self.observer;
        timed(observer, self.inner.append(session, event), |start, took, _| {
            let end = start + took;
            Fact::event(
                session,
                event,
                observer.content(),
                &observer.names,
                end,
                Some(took),
            )
            // An event the observer does not use is measured only.
            .unwrap_or(Fact::Measured {
                operation: "append",
                took,
            })
        })
        .await
    }

    async fn read(&self, session: &SessionId) -> Result<Vec<Event>, StoreError> {
        self.inner.read(session).await
    }

    async fn flush(&self, session: &SessionId) -> Result<(), StoreError> {
        timed(
            &self.observer,
            self.inner.flush(session),
            store_span(session, "flush"),
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
            self.inner.create(snapshot),
            store_span(&snapshot.id, "create"),
        )
        .await
    }

    async fn load(&self, id: &SessionId) -> Result<SessionSnapshot, StoreError> {
        self.inner.load(id).await
    }

    async fn save(&self, snapshot: &SessionSnapshot) -> Result<(), StoreError> {
        timed(
            &self.observer,
            self.inner.save(snapshot),
            store_span(&snapshot.id, "save"),
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
