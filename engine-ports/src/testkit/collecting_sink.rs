//! [`CollectingSink`]: an event sink that keeps everything.

use std::sync::Mutex;

use crate::event::{Event, EventSink};
use crate::ids::SessionId;

/// Keeps every emitted event with its session, in emission order.
#[derive(Debug, Default)]
pub struct CollectingSink {
    events: Mutex<Vec<(SessionId, Event)>>,
}

impl CollectingSink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every event emitted so far, with its session.
    pub fn all(&self) -> Vec<(SessionId, Event)> {
        self.events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The events of one session.
    pub fn events(&self, session: &SessionId) -> Vec<Event> {
        self.all()
            .into_iter()
            .filter(|(id, _)| id == session)
            .map(|(_, event)| event)
            .collect()
    }
}

impl EventSink for CollectingSink {
    fn emit(&self, session: &SessionId, event: &Event) {
        self.events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((session.clone(), event.clone()));
    }
}
