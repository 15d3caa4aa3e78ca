//! [`Instruments`]: the metrics, one set per process, read by the OTLP exporter and
//! the Prometheus page alike.
//!
//! | instrument | kind, unit | attributes |
//! |---|---|---|
//! | `mecatl.tool.calls` | counter | `gen_ai.tool.name`, `mecatl.tool.outcome` |
//! | `mecatl.tool.duration` | histogram, s | `gen_ai.tool.name`, `mecatl.tool.outcome` |
//! | `gen_ai.client.token.usage` | histogram, `{token}` | `gen_ai.token.type`, `gen_ai.request.model`, `gen_ai.operation.name` |
//! | `gen_ai.client.operation.duration` | histogram, s | `gen_ai.request.model`, `gen_ai.operation.name` |
//! | `mecatl.runs` | counter | `mecatl.run.stop` |
//! | `mecatl.store.duration` | histogram, s | `mecatl.store.operation` |
//! | `mecatl.mcp.reconnects` | observable counter | `mcp.server.name` |
//! | `mecatl.telemetry.dropped_spans` | observable counter | `reason` |
//! | `mecatl.telemetry.dropped_facts` | observable counter | |

use std::sync::{Arc, PoisonError, RwLock};

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter, ObservableCounter};

use crate::queue::DropCounter;

/// Reads how often each MCP server reconnected (server name, count since start).
pub type ReconnectCounts = Arc<dyn Fn() -> Vec<(String, u64)> + Send + Sync>;

/// Buckets of durations in seconds: tool calls and model requests.
const SECONDS: &[f64] = &[
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];
/// Buckets of store writes in seconds (a buffered append takes microseconds).
const STORE_SECONDS: &[f64] = &[
    0.000_01, 0.000_05, 0.000_1, 0.000_5, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0,
];
/// Buckets of token counts (the GenAI conventions' advice).
const TOKENS: &[f64] = &[
    1.0,
    4.0,
    16.0,
    64.0,
    256.0,
    1024.0,
    4096.0,
    16384.0,
    65536.0,
    262_144.0,
    1_048_576.0,
    4_194_304.0,
];

/// The instruments.
pub(crate) struct Instruments {
    pub(crate) tool_calls: Counter<u64>,
    pub(crate) tool_duration: Histogram<f64>,
    pub(crate) tokens: Histogram<u64>,
    pub(crate) model_duration: Histogram<f64>,
    pub(crate) runs: Counter<u64>,
    pub(crate) store_duration: Histogram<f64>,
    /// Where the reconnect counts come from (set by the host once its MCP servers
    /// are connected).
    pub(crate) reconnects: Arc<RwLock<Option<ReconnectCounts>>>,
    _observers: [ObservableCounter<u64>; 3],
}

impl Instruments {
    pub(crate) fn new(meter: &Meter, drops: Arc<DropCounter>) -> Self {
        let reconnects: Arc<RwLock<Option<ReconnectCounts>>> = Arc::default();
        let source = Arc::clone(&reconnects);
        let reconnect_counter = meter
            .u64_observable_counter("mecatl.mcp.reconnects")
            .with_description("Sessions of MCP servers dialled again after the previous one was lost.")
            .with_callback(move |observer| {
                let counts = source.read().unwrap_or_else(PoisonError::into_inner).clone();
                if let Some(counts) = counts {
                    for (server, count) in counts() {
                        observer.observe(count, &[KeyValue::new("mcp.server.name", server)]);
                    }
                }
            })
            .build();
        let facts = Arc::clone(&drops);
        let dropped_facts = meter
            .u64_observable_counter("mecatl.telemetry.dropped_facts")
            .with_description(
                "Observations of runs dropped before they became spans or metric points: the telemetry was behind.",
            )
            .with_callback(move |observer| observer.observe(facts.facts(), &[]))
            .build();
        let dropped = meter
            .u64_observable_counter("mecatl.telemetry.dropped_spans")
            .with_description("Spans that were not exported: the queue was full, or the export failed.")
            .with_callback(move |observer| {
                observer.observe(drops.queue_full(), &[KeyValue::new("reason", "queue_full")]);
                observer.observe(drops.export_failed(), &[KeyValue::new("reason", "export_failed")]);
            })
            .build();
        Self {
            tool_calls: meter
                .u64_counter("mecatl.tool.calls")
                .with_description("Tool calls decided, by tool and outcome (ok, error, denied).")
                .build(),
            tool_duration: meter
                .f64_histogram("mecatl.tool.duration")
                .with_unit("s")
                .with_description("How long tool calls ran (calls that never ran are not measured).")
                .with_boundaries(SECONDS.to_vec())
                .build(),
            tokens: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Tokens of each model request, input and output.")
                .with_boundaries(TOKENS.to_vec())
                .build(),
            model_duration: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_unit("s")
                .with_description("How long each model request took, retries included.")
                .with_boundaries(SECONDS.to_vec())
                .build(),
            runs: meter
                .u64_counter("mecatl.runs")
                .with_description("Runs ended, by why they stopped.")
                .build(),
            store_duration: meter
                .f64_histogram("mecatl.store.duration")
                .with_unit("s")
                .with_description(
                    "How long store writes took: event appends, audit records, snapshot saves, flushes.",
                )
                .with_boundaries(STORE_SECONDS.to_vec())
                .build(),
            reconnects,
            _observers: [reconnect_counter, dropped, dropped_facts],
        }
    }
}
