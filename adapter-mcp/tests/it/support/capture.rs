//! Captures the `tracing` events of one test: one global subscriber (set once, so no
//! callsite-interest races between tests) hands each event to the capture of the
//! thread it happens on. Use a current-thread runtime so every task logs on the
//! test's thread.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex, Once};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::{Layer, Registry};

/// One captured event.
#[derive(Clone, Debug)]
pub struct Captured {
    pub level: Level,
    pub target: String,
    pub message: String,
    pub fields: BTreeMap<String, String>,
}

impl Captured {
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

#[derive(Clone, Default)]
struct Store(Arc<Mutex<Vec<Captured>>>);

struct CaptureLayer;

thread_local! {
    static CURRENT: RefCell<Option<Store>> = const { RefCell::new(None) };
}

static INSTALL: Once = Once::new();

struct FieldVisitor<'a>(&'a mut BTreeMap<String, String>);

impl Visit for FieldVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S: Subscriber> Layer<S> for CaptureLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let Some(store) = CURRENT.with(|current| current.borrow().clone()) else {
            return;
        };
        let mut fields = BTreeMap::new();
        event.record(&mut FieldVisitor(&mut fields));
        let message = fields.remove("message").unwrap_or_default();
        let captured = Captured {
            level: *event.metadata().level(),
            target: event.metadata().target().to_owned(),
            message,
            fields,
        };
        store.0.lock().unwrap().push(captured);
    }
}

/// The events of the current thread while it lives.
pub struct Capture {
    store: Store,
    previous: Option<Store>,
}

impl Capture {
    pub fn start() -> Self {
        INSTALL.call_once(|| {
            let _ = tracing::subscriber::set_global_default(Registry::default().with(CaptureLayer));
        });
        let store = Store::default();
        let previous = CURRENT.with(|current| current.replace(Some(store.clone())));
        Self { store, previous }
    }

    pub fn events(&self) -> Vec<Captured> {
        self.store.0.lock().unwrap().clone()
    }

    /// Events whose structured `event` field is `name` (`mcp.reconnect.start`, …).
    pub fn count_event(&self, name: &str) -> usize {
        self.events()
            .iter()
            .filter(|e| e.field("event") == Some(name))
            .count()
    }

    /// `(start, ok, failed)` reconnect events.
    pub fn reconnects(&self) -> (usize, usize, usize) {
        (
            self.count_event("mcp.reconnect.start"),
            self.count_event("mcp.reconnect.ok"),
            self.count_event("mcp.reconnect.failed"),
        )
    }

    /// Our events (this crate and the diagnostics collector) at `level`; rmcp's own
    /// logs are left out.
    pub fn ours(&self, level: Level) -> Vec<Captured> {
        self.events()
            .into_iter()
            .filter(|e| e.level == level)
            .filter(|e| e.target.starts_with("adapter_mcp") || e.target.starts_with("engine_ports"))
            .collect()
    }

    /// Our WARN events whose message contains `needle`.
    pub fn warns_with(&self, needle: &str) -> Vec<Captured> {
        self.ours(Level::WARN)
            .into_iter()
            .filter(|e| e.message.contains(needle))
            .collect()
    }

    /// Our INFO events whose message contains `needle`.
    pub fn infos_with(&self, needle: &str) -> Vec<Captured> {
        self.ours(Level::INFO)
            .into_iter()
            .filter(|e| e.message.contains(needle))
            .collect()
    }

    pub fn clear(&self) {
        self.store.0.lock().unwrap().clear();
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with(|current| *current.borrow_mut() = previous);
    }
}
