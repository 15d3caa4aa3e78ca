//! Captures WARN and ERROR events process-wide, so tests can find the ones that
//! mention their own session ids (tests run in parallel, so they filter).

use std::fmt::Write as _;
use std::sync::{Mutex, Once};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};

static WARNINGS: Mutex<Vec<String>> = Mutex::new(Vec::new());
static INIT: Once = Once::new();

/// Installs the capturing subscriber once per process.
pub(crate) fn init() {
    INIT.call_once(|| {
        let subscriber = tracing_subscriber::registry().with(Capture);
        tracing::subscriber::set_global_default(subscriber).unwrap();
    });
}

/// Every captured WARN or ERROR (message and fields as `name=value`) containing `marker`.
pub(crate) fn warnings_mentioning(marker: &str) -> Vec<String> {
    WARNINGS
        .lock()
        .unwrap()
        .iter()
        .filter(|w| w.contains(marker))
        .cloned()
        .collect()
}

struct Capture;

impl<S: Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if *event.metadata().level() > Level::WARN {
            return;
        }
        let mut text = Text(String::new());
        event.record(&mut text);
        WARNINGS.lock().unwrap().push(text.0);
    }
}

struct Text(String);

impl Visit for Text {
    fn record_str(&mut self, field: &Field, value: &str) {
        let _ = write!(self.0, "{}={} ", field.name(), value);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, "{}={:?} ", field.name(), value);
    }
}
