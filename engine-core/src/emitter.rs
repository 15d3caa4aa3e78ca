//! [`EventEmitter`]: numbers a session's events and fans them out to the event log,
//! the live sink and the run's stream.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use engine_ports::{Clock, Event, EventKind, EventLog, EventSink, SessionId, format_rfc3339_micros};
use tokio::sync::mpsc;

/// What the run's stream channel carries: one event, or several numbered together
/// (deltas the model had already streamed), so a burst of events costs the consumer
/// one wake-up rather than one per event.
#[derive(Debug)]
pub(crate) enum Delivery {
    /// One event.
    One(Event),
    /// Consecutive events, in `seq` order.
    Many(Vec<Event>),
}

/// The receiving end of a stream's channel, read one event at a time: the rest of
/// a delivery of several events first, then the next delivery. [`Run`] and
/// [`ServedRun`] are streams of it.
///
/// [`Run`]: crate::Run
/// [`ServedRun`]: crate::ServedRun
#[derive(Debug)]
pub(crate) struct Deliveries {
    channel: mpsc::Receiver<Delivery>,
    /// The rest of the last delivery of several events.
    batch: std::vec::IntoIter<Event>,
}

impl Deliveries {
    pub(crate) fn new(channel: mpsc::Receiver<Delivery>) -> Self {
        Self {
            channel,
            batch: Vec::new().into_iter(),
        }
    }

    /// The next event; `None` once the channel is closed and drained.
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        if let Some(event) = self.batch.next() {
            return Poll::Ready(Some(event));
        }
        loop {
            match std::task::ready!(self.channel.poll_recv(cx)) {
                None => return Poll::Ready(None),
                Some(Delivery::One(event)) => return Poll::Ready(Some(event)),
                Some(Delivery::Many(events)) => {
                    self.batch = events.into_iter();
                    if let Some(event) = self.batch.next() {
                        return Poll::Ready(Some(event));
                    }
                }
            }
        }
    }

    /// Closes the channel: the sender's next delivery fails.
    pub(crate) fn close(&mut self) {
        self.channel.close();
    }
}

/// Assigns `seq` (strictly increasing) and `time` (with a clock), then delivers each
/// event to the durable log (a failed append is a WARN), the live sink and the run's
/// stream, in that order.
///
/// One emitter serves one run. Events may come from several tasks at once (the
/// dispatcher, and delegation tools reporting their children's progress from
/// theirs): [`EventEmitter::emit`] numbers and delivers each event under one lock, so
/// every output sees the events in `seq` order.
pub struct EventEmitter {
    session: SessionId,
    next_seq: AtomicU64,
    /// Held from numbering to delivery by [`EventEmitter::emit`].
    order: tokio::sync::Mutex<()>,
    clock: Option<Arc<dyn Clock>>,
    log: Option<Arc<dyn EventLog>>,
    sink: Option<Arc<dyn EventSink>>,
    channel: Option<mpsc::Sender<Delivery>>,
    /// The first audit record (event or tool-call record) that could not be written.
    audit_failure: Mutex<Option<String>>,
}

impl EventEmitter {
    /// An emitter for `session` whose first event gets `first_seq`; with no output
    /// it only counts.
    pub fn new(session: SessionId, first_seq: u64) -> Self {
        Self {
            session,
            next_seq: AtomicU64::new(first_seq),
            order: tokio::sync::Mutex::new(()),
            clock: None,
            log: None,
            sink: None,
            channel: None,
            audit_failure: Mutex::new(None),
        }
    }

    /// Notes that an audit record could not be written (the first one is kept).
    pub fn note_audit_failure(&self, what: String) {
        let mut slot = self.audit_failure.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(what);
        }
    }

    /// The first audit record of this run that could not be written, if any.
    pub fn audit_failure(&self) -> Option<String> {
        self.audit_failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Stamps events with this clock's time.
    #[must_use]
    pub fn with_clock(mut self, clock: Option<Arc<dyn Clock>>) -> Self {
        self.clock = clock;
        self
    }

    /// Appends events to this log.
    #[must_use]
    pub fn with_log(mut self, log: Option<Arc<dyn EventLog>>) -> Self {
        self.log = log;
        self
    }

    /// Emits events to this live sink.
    #[must_use]
    pub fn with_sink(mut self, sink: Option<Arc<dyn EventSink>>) -> Self {
        self.sink = sink;
        self
    }

    /// Sends events to this channel (a closed channel is ignored).
    #[must_use]
    pub(crate) fn with_channel(mut self, channel: mpsc::Sender<Delivery>) -> Self {
        self.channel = Some(channel);
        self
    }

    /// Whether any output exists (callers skip building events otherwise).
    pub fn is_active(&self) -> bool {
        self.log.is_some() || self.sink.is_some() || self.channel.is_some()
    }

    /// The `seq` the next event will get.
    pub fn next_seq(&self) -> u64 {
        self.next_seq.load(Ordering::SeqCst)
    }

    /// Reserves the next `seq` without emitting (used to save the session before its
    /// last event goes out).
    pub fn reserve_seq(&self) -> u64 {
        self.next_seq.fetch_add(1, Ordering::SeqCst)
    }

    /// Emits one event and returns its `seq`; concurrent callers are served one at a
    /// time, in `seq` order.
    pub async fn emit(&self, kind: EventKind) -> u64 {
        let _order = self.order.lock().await;
        let seq = self.reserve_seq();
        self.emit_with_seq(seq, kind).await;
        seq
    }

    /// Emits `kinds` as consecutive events (numbered together, under one hold of the
    /// order lock) and hands them to the run's stream in one delivery.
    pub async fn emit_all(&self, kinds: Vec<EventKind>) {
        let _order = self.order.lock().await;
        let first = self.next_seq.fetch_add(kinds.len() as u64, Ordering::SeqCst);
        if !self.is_active() || kinds.is_empty() {
            return;
        }
        let mut events: Vec<Event> = (first..)
            .zip(kinds)
            .map(|(seq, kind)| self.stamp(seq, kind))
            .collect();
        for event in &events {
            self.append_to_log(event).await;
        }
        if let Some(sink) = &self.sink {
            for event in &events {
                sink.emit(&self.session, event);
            }
        }
        if let Some(channel) = &self.channel {
            let delivery = if events.len() == 1 {
                events.pop().map_or(Delivery::Many(Vec::new()), Delivery::One)
            } else {
                Delivery::Many(events)
            };
            send(channel, delivery).await;
        }
    }

    /// Emits one event under a `seq` taken from [`EventEmitter::reserve_seq`].
    pub async fn emit_with_seq(&self, seq: u64, kind: EventKind) {
        // Not through `log_with_seq`: one future less in the state of every emit.
        if self.is_active() {
            let event = self.stamp(seq, kind);
            self.append_to_log(&event).await;
            self.deliver(event).await;
        }
    }

    /// The first half of [`EventEmitter::emit_with_seq`]: builds the event and
    /// appends it to the log; `None` when there is no output. The caller hands the
    /// event to [`EventEmitter::deliver`].
    pub async fn log_with_seq(&self, seq: u64, kind: EventKind) -> Option<Event> {
        if !self.is_active() {
            return None;
        }
        let event = self.stamp(seq, kind);
        self.append_to_log(&event).await;
        Some(event)
    }

    /// The event `seq`, timed by the clock (if any).
    fn stamp(&self, seq: u64, kind: EventKind) -> Event {
        Event {
            seq,
            time: self.clock.as_ref().map(|c| format_rfc3339_micros(c.now())),
            kind,
        }
    }

    /// Appends `event` to the durable log, if any (a failure is a WARN and an audit
    /// failure).
    async fn append_to_log(&self, event: &Event) {
        if let Some(log) = &self.log
            && let Err(error) = log.append(&self.session, event).await
        {
            let seq = event.seq;
            tracing::warn!(session_id = %self.session, seq, %error, "event log append failed");
            self.note_audit_failure(format!("event {seq} was not logged: {error}"));
        }
    }

    /// The second half of [`EventEmitter::emit_with_seq`]: the live sink, then the
    /// run's stream.
    pub async fn deliver(&self, event: Event) {
        if let Some(sink) = &self.sink {
            sink.emit(&self.session, &event);
        }
        if let Some(channel) = &self.channel {
            send(channel, Delivery::One(event)).await;
        }
    }
}

/// Hands `delivery` to the run's stream, in order: every sender holds the emitter's
/// order lock, or sends the run's last event once nothing else emits. A closed
/// channel means the consumer dropped the run (which cancels it): ignored.
///
/// A channel with room, the usual case, takes it at once; only waiting for room
/// (a consumer that fell behind) is a future, boxed, so that the state of every
/// emit, which every tool call's future carries, stays small.
async fn send(channel: &mpsc::Sender<Delivery>, delivery: Delivery) {
    if let Err(mpsc::error::TrySendError::Full(delivery)) = channel.try_send(delivery) {
        let _ = Box::pin(channel.send(delivery)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn added(name: &str) -> EventKind {
        EventKind::CatalogChanged {
            added: vec![name.to_owned()],
            removed: Vec::new(),
        }
    }

    fn name_of(event: &Event) -> &str {
        match &event.kind {
            EventKind::CatalogChanged { added, .. } => &added[0],
            other => panic!("unexpected event {other:?}"),
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_consumer_that_falls_behind_holds_the_emitter_and_gets_every_event_in_order() {
        let (sender, receiver) = mpsc::channel(1);
        // The producer owns the emitter: once it is done, the channel closes, so a
        // lost event ends the reading below short instead of hanging it.
        let emitter = EventEmitter::new(SessionId::from("s"), 7).with_channel(sender);
        let producer = tokio::spawn(async move {
            for name in ["a", "b", "c", "d"] {
                emitter.emit(added(name)).await;
            }
            emitter.emit_all(vec![added("e"), added("f")]).await;
        });
        // Nothing read yet: the producer fills the channel's one place, then waits.
        tokio::task::yield_now().await;
        assert!(!producer.is_finished());

        let mut deliveries = Deliveries::new(receiver);
        let mut seen = Vec::new();
        while let Some(event) = std::future::poll_fn(|cx| deliveries.poll_next(cx)).await {
            seen.push((event.seq, name_of(&event).to_owned()));
        }
        producer.await.unwrap();
        let expected: Vec<(u64, String)> = (7..)
            .zip(["a", "b", "c", "d", "e", "f"].map(String::from))
            .collect();
        assert_eq!(seen, expected);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_dropped_consumer_does_not_hold_the_emitter() {
        let (sender, receiver) = mpsc::channel(1);
        let emitter = EventEmitter::new(SessionId::from("s"), 0).with_channel(sender);
        drop(receiver);
        for name in ["a", "b", "c"] {
            emitter.emit(added(name)).await;
        }
        assert_eq!(emitter.next_seq(), 3);
    }
}
