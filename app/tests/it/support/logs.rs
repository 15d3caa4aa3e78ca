//! Captures `tracing` events of the current thread (tests run on a current-thread
//! runtime, so every task of the test logs here).

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt as _};

/// One captured event: its level and its message with the structured fields.
#[derive(Clone, Debug)]
pub struct Captured {
    pub level: Level,
    pub text: String,
}

/// The events captured while the guard lives.
pub struct Capture {
    events: Arc<Mutex<Vec<Captured>>>,
    _guard: tracing::subscriber::DefaultGuard,
}

impl Capture {
    /// Starts capturing on this thread.
    pub fn start() -> Self {
        let events = Arc::new(Mutex::new(Vec::new()));
        let subscriber = tracing_subscriber::registry().with(Collector {
            events: Arc::clone(&events),
        });
        Self {
            events,
            _guard: tracing::subscriber::set_default(subscriber),
        }
    }

    /// The WARN events whose text contains every one of `needles`.
    pub fn warns_with(&self, needles: &[&str]) -> Vec<Captured> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.level == Level::WARN && needles.iter().all(|n| e.text.contains(n)))
            .cloned()
            .collect()
    }

    /// Every captured event.
    pub fn all(&self) -> Vec<Captured> {
        self.events.lock().unwrap().clone()
    }
}

struct Collector {
    events: Arc<Mutex<Vec<Captured>>>,
}

struct Text(String);

impl Visit for Text {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        } else {
            let _ = write!(self.0, " {}={value}", field.name());
        }
    }
}

impl<S: Subscriber> Layer<S> for Collector {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut text = Text(String::new());
        event.record(&mut text);
        self.events.lock().unwrap().push(Captured {
            level: *event.metadata().level(),
            text: text.0,
        });
    }
}
