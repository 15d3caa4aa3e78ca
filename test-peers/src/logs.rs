//! Capturing `tracing` events in tests, two ways:
//!
//! - [`Capture::start`] collects the events of the current thread while the guard
//!   lives (tests on a current-thread runtime see every task of theirs);
//! - [`init`] installs one process-wide collector, and [`warnings_mentioning`] returns
//!   the WARN and ERROR events containing a marker (tests run in parallel, so each
//!   filters by its own session id or temp dir).
//!
//! An event's text is its message followed by its fields as ` name=value`.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, Once};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt as _};

/// One captured event: its level and its message with the structured fields.
#[derive(Clone, Debug)]
pub struct Captured {
    /// The event's level.
    pub level: Level,
    /// The message, then ` name=value` per field.
    pub text: String,
}

/// The events of this thread captured while the guard lives.
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

static PROCESS: Mutex<Vec<Captured>> = Mutex::new(Vec::new());
static INIT: Once = Once::new();

/// Installs the process-wide collector (once; later calls do nothing).
///
/// # Panics
/// When another global subscriber was installed first.
pub fn init() {
    INIT.call_once(|| {
        let subscriber = tracing_subscriber::registry().with(Global);
        tracing::subscriber::set_global_default(subscriber).unwrap();
    });
}

/// The text of every WARN or ERROR event captured process-wide that contains `marker`.
pub fn warnings_mentioning(marker: &str) -> Vec<String> {
    PROCESS
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e.level <= Level::WARN && e.text.contains(marker))
        .map(|e| e.text.clone())
        .collect()
}

struct Collector {
    events: Arc<Mutex<Vec<Captured>>>,
}

impl<S: Subscriber> Layer<S> for Collector {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        self.events.lock().unwrap().push(captured(event));
    }
}

struct Global;

impl<S: Subscriber> Layer<S> for Global {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if *event.metadata().level() <= Level::WARN {
            PROCESS.lock().unwrap().push(captured(event));
        }
    }
}

fn captured(event: &Event<'_>) -> Captured {
    let mut text = Text(String::new());
    event.record(&mut text);
    Captured {
        level: *event.metadata().level(),
        text: text.0,
    }
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
