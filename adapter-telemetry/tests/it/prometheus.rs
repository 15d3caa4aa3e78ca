//! The Prometheus text of the same instruments, parsed by a Prometheus text parser.

use std::time::Duration;

use adapter_telemetry::{Protocol, Telemetry, TelemetryOptions};
use engine_ports::StopReason;

use crate::support::{observed_engine, options, run, stop};

/// The value of the sample `name` whose labels include `labels` (0 when absent).
pub(crate) fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    let lines = text.lines().map(|line| Ok(line.to_owned()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("the text parses as Prometheus exposition");
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            prometheus_parse::Value::Histogram(ref buckets) => buckets.last().map_or(0.0, |b| b.count),
            ref other => panic!("unexpected sample {other:?}"),
        })
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prometheus_text_parses_and_counts_the_runs_calls() {
    // No exporter at all: metrics are kept for the page only.
    let mut metrics_only: TelemetryOptions =
        options("127.0.0.1:9".parse().unwrap(), Protocol::HttpProtobuf, false);
    metrics_only.env.otlp = None;
    let telemetry = Telemetry::start(metrics_only).unwrap().unwrap();
    assert!(!telemetry.exports_traces());
    let engine = observed_engine(&telemetry);
    let events = run(&engine, "s-prom", "go").await;
    assert_eq!(stop(&events), StopReason::EndTurn);
    let text = telemetry.prometheus_text().unwrap();
    let calls = |tool: &str, outcome: &str| {
        sample(
            &text,
            "mecatl_tool_calls_total",
            &[("gen_ai_tool_name", tool), ("mecatl_tool_outcome", outcome)],
        )
    };
    assert_eq!(calls("Echo", "ok"), 1.0, "{text}");
    assert_eq!(calls("Poke", "denied"), 1.0, "{text}");
    assert_eq!(
        sample(&text, "mecatl_runs_total", &[("mecatl_run_stop", "end_turn")]),
        1.0,
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "mecatl_tool_duration_seconds_count",
            &[("gen_ai_tool_name", "Echo")]
        ),
        1.0,
        "{text}"
    );
    // Every event's append is measured once, whether the observer uses the event
    // or not.
    assert_eq!(
        sample(
            &text,
            "mecatl_store_duration_seconds_count",
            &[("mecatl_store_operation", "append")]
        ),
        events.len() as f64,
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "gen_ai_client_token_usage_sum",
            &[("gen_ai_token_type", "output")]
        ),
        42.0,
        "{text}"
    );
    telemetry.shutdown(Duration::from_secs(2)).await;
}

#[test]
fn nothing_is_started_when_nothing_is_asked_or_the_sdk_is_disabled() {
    let mut nothing = options("127.0.0.1:9".parse().unwrap(), Protocol::HttpProtobuf, false);
    nothing.env.otlp = None;
    nothing.prometheus = false;
    assert!(Telemetry::start(nothing).unwrap().is_none());
    let mut disabled = options("127.0.0.1:9".parse().unwrap(), Protocol::HttpProtobuf, false);
    disabled.env.disabled = true;
    assert!(Telemetry::start(disabled).unwrap().is_none());
}
