//! Local OTLP receivers for the tests: HTTP/protobuf (axum) and gRPC (tonic with the
//! collector services), both keeping what they receive; and a listener that accepts
//! connections and never answers.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::common::v1::{AnyValue as AnyValueMessage, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as PointValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// What a receiver got.
#[derive(Default)]
pub(crate) struct Received {
    traces: Mutex<Vec<ExportTraceServiceRequest>>,
    metrics: Mutex<Vec<ExportMetricsServiceRequest>>,
    changed: Notify,
}

/// One received span, flattened.
#[derive(Clone, Debug)]
pub(crate) struct SpanView {
    pub(crate) name: String,
    pub(crate) trace_id: Vec<u8>,
    pub(crate) span_id: Vec<u8>,
    pub(crate) parent_span_id: Vec<u8>,
    pub(crate) attributes: BTreeMap<String, String>,
    pub(crate) events: Vec<String>,
    pub(crate) status_code: i32,
    pub(crate) resource: BTreeMap<String, String>,
}

impl SpanView {
    pub(crate) fn attr(&self, key: &str) -> &str {
        self.attributes
            .get(key)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("span {} has no attribute {key}: {:?}", self.name, self.attributes))
    }
}

fn text(value: Option<&AnyValueMessage>) -> String {
    match value.and_then(|v| v.value.as_ref()) {
        Some(AnyValue::StringValue(s)) => s.clone(),
        Some(AnyValue::IntValue(i)) => i.to_string(),
        Some(AnyValue::DoubleValue(d)) => d.to_string(),
        Some(AnyValue::BoolValue(b)) => b.to_string(),
        Some(AnyValue::ArrayValue(array)) => {
            let items: Vec<String> = array.values.iter().map(|v| text(Some(v))).collect();
            format!("[{}]", items.join(","))
        }
        other => format!("{other:?}"),
    }
}

fn attributes(list: &[KeyValue]) -> BTreeMap<String, String> {
    list.iter()
        .map(|kv| (kv.key.clone(), text(kv.value.as_ref())))
        .collect()
}

impl Received {
    /// Every span received so far.
    pub(crate) fn spans(&self) -> Vec<SpanView> {
        let mut out = Vec::new();
        for request in self.traces.lock().unwrap().iter() {
            for resource_spans in &request.resource_spans {
                let resource = resource_spans
                    .resource
                    .as_ref()
                    .map(|r| attributes(&r.attributes))
                    .unwrap_or_default();
                for scope in &resource_spans.scope_spans {
                    for span in &scope.spans {
                        out.push(view(span, &resource));
                    }
                }
            }
        }
        out
    }

    /// The sum points of metric `name`: (attributes, value).
    pub(crate) fn sums(&self, name: &str) -> Vec<(BTreeMap<String, String>, f64)> {
        let mut out = Vec::new();
        for metric in self.metrics(name) {
            if let Some(Data::Sum(sum)) = &metric.data {
                for point in &sum.data_points {
                    let value = match point.value {
                        Some(PointValue::AsInt(i)) => i as f64,
                        Some(PointValue::AsDouble(d)) => d,
                        None => f64::NAN,
                    };
                    out.push((attributes(&point.attributes), value));
                }
            }
        }
        out
    }

    /// The histogram points of metric `name`: (attributes, count, sum).
    pub(crate) fn histograms(&self, name: &str) -> Vec<(BTreeMap<String, String>, u64, f64)> {
        let mut out = Vec::new();
        for metric in self.metrics(name) {
            if let Some(Data::Histogram(histogram)) = &metric.data {
                for point in &histogram.data_points {
                    out.push((
                        attributes(&point.attributes),
                        point.count,
                        point.sum.unwrap_or_default(),
                    ));
                }
            }
        }
        out
    }

    fn metrics(&self, name: &str) -> Vec<opentelemetry_proto::tonic::metrics::v1::Metric> {
        let mut out = Vec::new();
        for request in self.metrics.lock().unwrap().iter() {
            for resource in &request.resource_metrics {
                for scope in &resource.scope_metrics {
                    out.extend(scope.metrics.iter().filter(|m| m.name == name).cloned());
                }
            }
        }
        out
    }

    /// Every attribute value of every span and span event, for content checks.
    pub(crate) fn all_span_text(&self) -> String {
        let mut out = String::new();
        for request in self.traces.lock().unwrap().iter() {
            out.push_str(&format!("{request:?}"));
        }
        out
    }

    /// Waits (bounded) until `condition` holds over what was received.
    pub(crate) async fn wait_for(&self, what: &str, condition: impl Fn(&Self) -> bool) {
        let wait = async {
            loop {
                let changed = self.changed.notified();
                if condition(self) {
                    return;
                }
                changed.await;
            }
        };
        tokio::time::timeout(Duration::from_secs(20), wait)
            .await
            .unwrap_or_else(|_| panic!("the receiver never got {what}"));
    }

    fn push_traces(&self, request: ExportTraceServiceRequest) {
        self.traces.lock().unwrap().push(request);
        self.changed.notify_waiters();
    }

    fn push_metrics(&self, request: ExportMetricsServiceRequest) {
        self.metrics.lock().unwrap().push(request);
        self.changed.notify_waiters();
    }
}

fn view(span: &Span, resource: &BTreeMap<String, String>) -> SpanView {
    SpanView {
        name: span.name.clone(),
        trace_id: span.trace_id.clone(),
        span_id: span.span_id.clone(),
        parent_span_id: span.parent_span_id.clone(),
        attributes: attributes(&span.attributes),
        events: span.events.iter().map(|e| e.name.clone()).collect(),
        status_code: span.status.as_ref().map_or(0, |s| s.code),
        resource: resource.clone(),
    }
}

/// An HTTP/protobuf receiver on a loopback port: `POST /v1/traces`, `/v1/metrics`.
pub(crate) async fn http_receiver() -> (SocketAddr, Arc<Received>) {
    let received = Arc::new(Received::default());
    let app = axum::Router::new()
        .route("/v1/traces", post(http_traces))
        .route("/v1/metrics", post(http_metrics))
        .with_state(Arc::clone(&received));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, received)
}

async fn http_traces(State(received): State<Arc<Received>>, body: Bytes) -> impl IntoResponse {
    let request = ExportTraceServiceRequest::decode(body).expect("a protobuf trace request");
    received.push_traces(request);
    (
        [(CONTENT_TYPE, "application/x-protobuf")],
        ExportTraceServiceResponse::default().encode_to_vec(),
    )
}

async fn http_metrics(State(received): State<Arc<Received>>, body: Bytes) -> impl IntoResponse {
    let request = ExportMetricsServiceRequest::decode(body).expect("a protobuf metrics request");
    received.push_metrics(request);
    (
        [(CONTENT_TYPE, "application/x-protobuf")],
        ExportMetricsServiceResponse::default().encode_to_vec(),
    )
}

struct Grpc(Arc<Received>);

#[tonic::async_trait]
impl TraceService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.0.push_traces(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl MetricsService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        self.0.push_metrics(request.into_inner());
        Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
    }
}

/// A gRPC receiver with the collector's trace and metrics services.
pub(crate) async fn grpc_receiver() -> (SocketAddr, Arc<Received>) {
    let received = Arc::new(Received::default());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tonic::transport::Server::builder()
        .add_service(TraceServiceServer::new(Grpc(Arc::clone(&received))))
        .add_service(MetricsServiceServer::new(Grpc(Arc::clone(&received))));
    tokio::spawn(async move {
        let _ = server
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
            .await;
    });
    (addr, received)
}

/// A listener that accepts every connection and never answers (the connections are
/// held open until the test ends).
pub(crate) async fn silent_receiver() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    addr
}
