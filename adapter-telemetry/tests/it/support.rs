//! An engine observed by the telemetry: a scripted model, a read-only `Echo` tool and
//! a mutating `Poke` tool (refused by the headless policy), the in-memory store
//! behind the telemetry's decorators.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use adapter_telemetry::{OtlpConfig, Protocol, ResourceConfig, Telemetry, TelemetryEnv, TelemetryOptions};
use async_trait::async_trait;
use engine_core::{Catalog, Deps, Engine, Environment, InMemoryStore, Tool, ToolError};
use engine_ports::testkit::{ScriptedLlm, ScriptedTurn};
use engine_ports::{
    CancellationToken, Event, EventKind, SessionId, StopReason, ToolCall, ToolResult, ToolSpec,
};
use futures::StreamExt as _;

/// The text of the prompt, the arguments and the answer: never exported by default.
pub(crate) const SECRET_PROMPT: &str = "PROMPT-SECRET-7f3a";
pub(crate) const SECRET_ARG: &str = "ARG-SECRET-91bc";
pub(crate) const SECRET_ANSWER: &str = "ANSWER-SECRET-c04d";
pub(crate) const SECRET_RESULT: &str = "RESULT-SECRET-55e1";

struct Echo {
    name: &'static str,
    read_only: bool,
}

#[async_trait]
impl Tool for Echo {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(self.name, "echoes").with_schema(serde_json::json!({"type": "object"}))
    }

    fn read_only(&self) -> bool {
        self.read_only
    }

    async fn execute(
        &self,
        _cancel: &CancellationToken,
        call: &ToolCall,
        _env: &Environment,
    ) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::text(
            call.id().clone(),
            format!("echo {SECRET_RESULT}"),
        ))
    }
}

/// Options for an exporter at `addr` over `protocol` (traces and metrics).
pub(crate) fn options(addr: SocketAddr, protocol: Protocol, content: bool) -> TelemetryOptions {
    let url = format!("http://{addr}");
    let (traces, metrics) = match protocol {
        Protocol::HttpProtobuf => (format!("{url}/v1/traces"), format!("{url}/v1/metrics")),
        Protocol::Grpc => (url.clone(), url),
    };
    TelemetryOptions {
        env: TelemetryEnv {
            disabled: false,
            otlp: Some(OtlpConfig {
                protocol,
                traces_endpoint: Some(traces),
                metrics_endpoint: Some(metrics),
                timeout: Duration::from_secs(30),
            }),
            resource: ResourceConfig {
                service_name: "mecated-test".to_owned(),
                attributes: vec![("deployment.environment".to_owned(), "test".to_owned())],
            },
        },
        prometheus: true,
        content,
        provider: Some("mock".to_owned()),
    }
}

/// An engine whose every port the telemetry observes: the model calls `Echo` (with
/// a secret argument) and `Poke`, then answers.
pub(crate) fn observed_engine(telemetry: &Telemetry) -> Engine {
    let llm = Arc::new(ScriptedLlm::new([
        ScriptedTurn::new()
            .with_text("calling")
            .with_call("c1", "Echo", &format!(r#"{{"text":"{SECRET_ARG}"}}"#))
            .with_call("c2", "Poke", "{}")
            .with_usage(120, 30),
        ScriptedTurn::text(SECRET_ANSWER).with_usage(200, 12),
    ]));
    let mut catalog = Catalog::new();
    catalog.must_register(Arc::new(Echo {
        name: "Echo",
        read_only: true,
    }));
    catalog.must_register(Arc::new(Echo {
        name: "Poke",
        read_only: false,
    }));
    telemetry.set_families([
        ("Echo".to_owned(), "core".to_owned()),
        ("Poke".to_owned(), "core".to_owned()),
    ]);
    let store = Arc::new(InMemoryStore::new());
    let environment = Environment::new(std::env::temp_dir()).unwrap();
    let mut deps = Deps::new(llm, Arc::new(catalog), environment);
    deps.store = Some(telemetry.session_store(store.clone()));
    deps.event_log = Some(telemetry.event_log(store.clone()));
    deps.recorder = Some(telemetry.recorder(store));
    // The observed log is where the events are observed: no sink besides.
    deps.clock = Some(Arc::new(engine_ports::SystemClock));
    deps.config.model = "mock".to_owned();
    Engine::new(deps).unwrap()
}

/// Runs `prompt` in `session` to its end and returns the events.
pub(crate) async fn run(engine: &Engine, session: &str, prompt: &str) -> Vec<Event> {
    let run = engine.run(&SessionId::from(session), prompt).unwrap();
    tokio::time::timeout(Duration::from_secs(20), run.collect::<Vec<_>>())
        .await
        .expect("the run ended within 20 s")
}

/// The stop reason of a run's events.
pub(crate) fn stop(events: &[Event]) -> StopReason {
    match &events.last().expect("events").kind {
        EventKind::Result { stop, .. } => *stop,
        other => panic!("the last event is {other:?}"),
    }
}
