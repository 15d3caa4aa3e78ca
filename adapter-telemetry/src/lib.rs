//! OpenTelemetry traces and metrics of Mecatl runs, and the Prometheus text format of
//! the same metrics.
//!
//! The telemetry observes through the ports only — decorators of the audit
//! recorder, the event log and the session store ([`Telemetry::recorder`],
//! [`Telemetry::event_log`], [`Telemetry::session_store`]), and an [`EventSink`]
//! for engines without an event log ([`Telemetry::sink`]) — so a process without it
//! behaves exactly the same. The observed event log is also where the events are
//! observed: an engine gets the observed log or the sink, not both.
//! It is off unless the standard `OTEL_*` variables ask for it ([`TelemetryEnv`]);
//! a host may keep metrics for a Prometheus page without any exporter.
//!
//! Observing costs a run little and exporting never slows or fails it. A run only
//! queues small facts (the time, names, sizes; no text unless content capture is
//! on) into a bounded inbox, dropped and counted when full. The telemetry's own
//! thread, with a runtime of its own, turns them into spans and metric points a few
//! times a second and runs the exporters: ended spans go to a bounded queue
//! (dropped and counted when full) that one task exports under a time limit, and
//! the SDK reads the metrics periodically. The Prometheus page and
//! [`Telemetry::shutdown`] apply what waits first; shutdown flushes both exports
//! within a time limit.

mod config;
mod facts;
mod metrics;
mod observer;
mod ports;
mod queue;
mod thread;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use engine_ports::{EventLog, EventSink, SessionStore, ToolCallRecorder};
use opentelemetry::KeyValue;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;

pub use config::{
    ConfigError, DEFAULT_EXPORT_TIMEOUT, DEFAULT_SERVICE_NAME, ENDPOINT, METRICS_ENDPOINT, OtlpConfig,
    PROTOCOL, Protocol, RESOURCE_ATTRIBUTES, ResourceConfig, SDK_DISABLED, SERVICE_NAME, TIMEOUT,
    TRACES_ENDPOINT, TelemetryEnv,
};
pub use facts::INBOX_CAPACITY;
pub use metrics::ReconnectCounts;
pub use observer::CONTENT_CAP;
pub use queue::QUEUE_CAPACITY;

use crate::metrics::Instruments;
use crate::observer::Observer;
use crate::ports::{ObservedEventLog, ObservedRecorder, ObservedSessionStore, TelemetrySink};
use crate::queue::{DropCounter, ExportTask, QueueProcessor};

/// The instrumentation scope of every span and metric.
pub const SCOPE: &str = "mecatl";

/// What [`Telemetry::start`] starts.
#[derive(Clone, Debug)]
pub struct TelemetryOptions {
    /// What the `OTEL_*` variables ask for.
    pub env: TelemetryEnv,
    /// Keep the metrics for a Prometheus page ([`Telemetry::prometheus_text`]), even
    /// without an OTLP exporter.
    pub prometheus: bool,
    /// Export prompt, argument, result and answer text (`--otel-content=true`);
    /// off, spans carry names, sizes, counts and times only.
    pub content: bool,
    /// `gen_ai.provider.name` of the model requests (`openai`, `anthropic`), when
    /// known.
    pub provider: Option<String>,
}

/// The telemetry could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// An OTLP exporter could not be built.
    #[error("cannot export {signal} to {endpoint}: {reason}")]
    Exporter {
        /// `traces` or `metrics`.
        signal: &'static str,
        /// The endpoint.
        endpoint: String,
        /// Why.
        reason: String,
    },
    /// The Prometheus registry refused the exporter.
    #[error("cannot keep metrics for /metrics: {0}")]
    Prometheus(String),
    /// Started outside a tokio runtime (shutdown needs one).
    #[error("telemetry must start inside a tokio runtime")]
    NoRuntime,
    /// The telemetry's thread could not start.
    #[error("cannot start the telemetry thread: {0}")]
    Thread(String),
}

/// The running telemetry of one process. Cheap to clone.
#[derive(Clone)]
pub struct Telemetry {
    inner: Arc<Inner>,
}

struct Inner {
    observer: Arc<Observer>,
    tracer_provider: Option<SdkTracerProvider>,
    export: Mutex<Option<ExportTask>>,
    meter_provider: SdkMeterProvider,
    registry: Option<prometheus::Registry>,
    export_timeout: Duration,
    exports_metrics: bool,
    shut: AtomicBool,
    /// Last, so that the thread outlives the providers' own shutdown on drop.
    thread: Mutex<thread::Stopper>,
}

impl Telemetry {
    /// Starts what `options` ask for, on the current tokio runtime: `None` when
    /// nothing is asked (no endpoint and no Prometheus page, or `OTEL_SDK_DISABLED`).
    ///
    /// # Errors
    /// [`TelemetryError`] when an exporter cannot be built (naming the signal and
    /// endpoint), or outside a tokio runtime.
    pub fn start(options: TelemetryOptions) -> Result<Option<Self>, TelemetryError> {
        let env = &options.env;
        if env.disabled || (env.otlp.is_none() && !options.prometheus) {
            return Ok(None);
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(TelemetryError::NoRuntime);
        }
        let started = thread::start().map_err(|error| TelemetryError::Thread(error.to_string()))?;
        // The exporters' tasks (span export, metric reading, connections) live on
        // the telemetry thread.
        let built = {
            let _on_the_thread = started.runtime.enter();
            Pipelines::build(&options)?
        };
        let observer = Arc::new(Observer::new(
            built.tracer,
            built.instruments,
            options.content,
            options.provider,
            built.drops,
        ));
        let thread = started.run(Arc::clone(&observer));
        Ok(Some(Self {
            inner: Arc::new(Inner {
                observer,
                tracer_provider: built.tracer_provider,
                export: Mutex::new(built.export),
                meter_provider: built.meter_provider,
                registry: built.registry,
                export_timeout: built.export_timeout,
                exports_metrics: built.exports_metrics,
                shut: AtomicBool::new(false),
                thread: Mutex::new(thread),
            }),
        }))
    }

    /// The live sink of an engine that has no event log (with one, the observed
    /// log of [`Telemetry::event_log`] observes the events: do not add this sink,
    /// or each event is observed twice).
    pub fn sink(&self) -> Arc<dyn EventSink> {
        Arc::new(TelemetrySink(Arc::clone(&self.inner.observer)))
    }

    /// `inner`, with each record timed and given to its call's span.
    pub fn recorder(&self, inner: Arc<dyn ToolCallRecorder>) -> Arc<dyn ToolCallRecorder> {
        Arc::new(ObservedRecorder {
            inner,
            observer: Arc::clone(&self.inner.observer),
        })
    }

    /// `inner`, with appends and flushes timed; each appended event is observed
    /// as it is appended (the engine appends every event before its sink sees it).
    pub fn event_log(&self, inner: Arc<dyn EventLog>) -> Arc<dyn EventLog> {
        Arc::new(ObservedEventLog {
            inner,
            observer: Arc::clone(&self.inner.observer),
        })
    }

    /// `inner`, with snapshot writes timed.
    pub fn session_store(&self, inner: Arc<dyn SessionStore>) -> Arc<dyn SessionStore> {
        Arc::new(ObservedSessionStore {
            inner,
            observer: Arc::clone(&self.inner.observer),
        })
    }

    /// The family of each catalog tool (`mecatl.tool.family`); a name not given
    /// here is `mcp-client` when it is an MCP name, else `unknown`.
    pub fn set_families(&self, families: impl IntoIterator<Item = (String, String)>) {
        let families: HashMap<String, String> = families.into_iter().collect();
        *self
            .inner
            .observer
            .families
            .write()
            .unwrap_or_else(PoisonError::into_inner) = families;
    }

    /// Where `mecatl.mcp.reconnects` reads its counts from.
    pub fn set_reconnect_counts(&self, counts: ReconnectCounts) {
        *self
            .inner
            .observer
            .instruments
            .reconnects
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(counts);
    }

    /// Whether spans are exported.
    pub fn exports_traces(&self) -> bool {
        self.inner.tracer_provider.is_some()
    }

    /// Whether metrics are exported over OTLP.
    pub fn exports_metrics(&self) -> bool {
        self.inner.exports_metrics
    }

    /// Whether metrics are kept for a Prometheus page.
    pub fn keeps_prometheus(&self) -> bool {
        self.inner.registry.is_some()
    }

    /// The metrics in the Prometheus text exposition format (0.0.4), `None` when
    /// the telemetry keeps none for a page.
    pub fn prometheus_text(&self) -> Option<String> {
        let registry = self.inner.registry.as_ref()?;
        // The page shows every run observed so far, not only those the thread has
        // applied.
        self.inner.observer.drain();
        let families = registry.gather();
        match prometheus::TextEncoder::new().encode_to_string(&families) {
            Ok(text) => Some(text),
            Err(error) => {
                tracing::warn!(%error, "rendering the metrics failed");
                Some(String::new())
            }
        }
    }

    /// Ends every open span, then exports what is queued and the last metrics at
    /// once, both within `timeout`; idempotent. What does not go out in time is lost
    /// (a WARN).
    pub async fn shutdown(&self, timeout: Duration) {
        if self.inner.shut.swap(true, Ordering::SeqCst) {
            return;
        }
        self.inner.observer.end_all(SystemTime::now());
        let export = self
            .inner
            .export
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let spans = async {
            if let Some(export) = export
                && !export.shutdown(timeout).await
            {
                tracing::warn!(?timeout, "not every span was exported before shutdown");
            }
        };
        let meters = self.inner.meter_provider.clone();
        let limit = timeout.max(self.inner.export_timeout);
        let exports_metrics = self.inner.exports_metrics;
        let metrics = async move {
            let closing = tokio::task::spawn_blocking(move || meters.shutdown_with_timeout(limit));
            match tokio::time::timeout(timeout, closing).await {
                Ok(Ok(Err(error))) if exports_metrics => {
                    tracing::warn!(%error, "exporting the last metrics failed");
                }
                Ok(_) => {}
                Err(_) => tracing::warn!(?timeout, "the last metrics were not exported before shutdown"),
            }
        };
        // Both within the one time limit.
        tokio::join!(spans, metrics);
        self.inner
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .stop();
    }
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("traces", &self.exports_traces())
            .field("metrics", &self.exports_metrics())
            .field("prometheus", &self.inner.registry.is_some())
            .field("content", &self.inner.observer.content)
            .finish_non_exhaustive()
    }
}

/// The providers and exporters [`Telemetry::start`] builds.
struct Pipelines {
    tracer: Option<opentelemetry_sdk::trace::SdkTracer>,
    tracer_provider: Option<SdkTracerProvider>,
    export: Option<ExportTask>,
    meter_provider: SdkMeterProvider,
    instruments: Instruments,
    registry: Option<prometheus::Registry>,
    export_timeout: Duration,
    exports_metrics: bool,
    drops: Arc<DropCounter>,
}

impl Pipelines {
    /// Builds what `options` ask for; the exporters' tasks are spawned on the
    /// current runtime.
    fn build(options: &TelemetryOptions) -> Result<Self, TelemetryError> {
        let env = &options.env;
        let resource = resource(&env.resource);
        let drops = Arc::new(DropCounter::default());
        let export_timeout = env
            .otlp
            .as_ref()
            .map_or(DEFAULT_EXPORT_TIMEOUT, |otlp| otlp.timeout);

        let mut tracer_provider = None;
        let mut export = None;
        if let Some(otlp) = &env.otlp
            && let Some(endpoint) = &otlp.traces_endpoint
        {
            let mut exporter = span_exporter(otlp, endpoint)?;
            opentelemetry_sdk::trace::SpanExporter::set_resource(&mut exporter, &resource);
            let (processor, task) = QueueProcessor::start(exporter, otlp.timeout, Arc::clone(&drops));
            tracer_provider = Some(
                SdkTracerProvider::builder()
                    .with_resource(resource.clone())
                    .with_span_processor(processor)
                    .build(),
            );
            export = Some(task);
        }

        let mut meters = SdkMeterProvider::builder().with_resource(resource);
        let mut exports_metrics = false;
        if let Some(otlp) = &env.otlp
            && let Some(endpoint) = &otlp.metrics_endpoint
        {
            let exporter = metric_exporter(otlp, endpoint)?;
            let reader =
                opentelemetry_sdk::metrics::periodic_reader_with_async_runtime::PeriodicReader::builder(
                    exporter,
                    opentelemetry_sdk::runtime::Tokio,
                )
                .build();
            meters = meters.with_reader(reader);
            exports_metrics = true;
        }
        let mut registry = None;
        if options.prometheus {
            let kept = prometheus::Registry::new();
            let reader = opentelemetry_prometheus::exporter()
                .with_registry(kept.clone())
                .scope_info_enabled(false)
                .build()
                .map_err(|error| TelemetryError::Prometheus(error.to_string()))?;
            meters = meters.with_reader(reader);
            registry = Some(kept);
        }
        let meter_provider = meters.build();
        let meter = meter_provider.meter(SCOPE);
        let instruments = Instruments::new(&meter, Arc::clone(&drops));
        let tracer = tracer_provider.as_ref().map(|provider| provider.tracer(SCOPE));
        Ok(Self {
            tracer,
            tracer_provider,
            export,
            meter_provider,
            instruments,
            registry,
            export_timeout,
            exports_metrics,
            drops,
        })
    }
}

fn resource(config: &ResourceConfig) -> Resource {
    Resource::builder_empty()
        .with_service_name(config.service_name.clone())
        .with_attributes(
            config
                .attributes
                .iter()
                .map(|(key, value)| KeyValue::new(key.clone(), value.clone())),
        )
        .build()
}

fn exporter_error(signal: &'static str, endpoint: &str, error: &impl std::fmt::Display) -> TelemetryError {
    TelemetryError::Exporter {
        signal,
        endpoint: endpoint.to_owned(),
        reason: error.to_string(),
    }
}

fn span_exporter(
    otlp: &OtlpConfig,
    endpoint: &str,
) -> Result<opentelemetry_otlp::SpanExporter, TelemetryError> {
    let built = match otlp.protocol {
        Protocol::HttpProtobuf => opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(endpoint)
            .with_timeout(otlp.timeout)
            .build(),
        Protocol::Grpc => opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(endpoint)
            .with_timeout(otlp.timeout)
            .build(),
    };
    built.map_err(|error| exporter_error("traces", endpoint, &error))
}

fn metric_exporter(
    otlp: &OtlpConfig,
    endpoint: &str,
) -> Result<opentelemetry_otlp::MetricExporter, TelemetryError> {
    let built = match otlp.protocol {
        Protocol::HttpProtobuf => opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(endpoint)
            .with_timeout(otlp.timeout)
            .build(),
        Protocol::Grpc => opentelemetry_otlp::MetricExporter::builder()
            .with_tonic()
            .with_endpoint(endpoint)
            .with_timeout(otlp.timeout)
            .build(),
    };
    built.map_err(|error| exporter_error("metrics", endpoint, &error))
}
