//! A whole run exported to a local OTLP receiver, over HTTP/protobuf and gRPC: its
//! spans, their attributes and links, the metrics, and what content is exported.

use std::time::Duration;

use adapter_telemetry::{Protocol, Telemetry};
use engine_ports::StopReason;

use crate::receiver::{Received, SpanView, grpc_receiver, http_receiver};
use crate::support::{
    SECRET_ANSWER, SECRET_ARG, SECRET_PROMPT, SECRET_RESULT, observed_engine, options, run, stop,
};

async fn exported_run(protocol: Protocol, content: bool) -> std::sync::Arc<Received> {
    let (addr, received) = match protocol {
        Protocol::HttpProtobuf => http_receiver().await,
        Protocol::Grpc => grpc_receiver().await,
    };
    let telemetry = Telemetry::start(options(addr, protocol, content))
        .unwrap()
        .unwrap();
    let engine = observed_engine(&telemetry);
    let events = run(&engine, "s-otlp", SECRET_PROMPT).await;
    assert_eq!(stop(&events), StopReason::EndTurn);
    telemetry.shutdown(Duration::from_secs(10)).await;
    received
        .wait_for("the run's spans and metrics", |r| {
            r.spans().iter().any(|s| s.name.starts_with("invoke_agent"))
                && !r.sums("mecatl.tool.calls").is_empty()
        })
        .await;
    received
}

fn one<'a>(spans: &'a [SpanView], name: &str) -> &'a SpanView {
    let found: Vec<&SpanView> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "one span {name} expected in {:?}", names(spans));
    found[0]
}

fn names(spans: &[SpanView]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_str()).collect()
}

/// The spans and metrics every exported run carries, whatever the protocol.
fn assert_run_shape(received: &Received) {
    assert_run_spans(received);
    assert_run_metrics(received);
}

/// The spans of the run and their attributes.
fn assert_run_spans(received: &Received) {
    let spans = received.spans();
    let run = one(&spans, "invoke_agent mecatl");
    assert_eq!(run.attr("gen_ai.operation.name"), "invoke_agent");
    assert_eq!(run.attr("gen_ai.conversation.id"), "s-otlp");
    assert_eq!(run.attr("mecatl.run.stop"), "end_turn");
    assert_eq!(run.attr("mecatl.run.turns"), "2");
    assert_eq!(run.attr("mecatl.run.tool_calls"), "2");
    assert_eq!(run.attr("gen_ai.usage.input_tokens"), "320");
    assert_eq!(run.attr("gen_ai.usage.output_tokens"), "42");
    assert!(run.parent_span_id.is_empty(), "the run is the trace's root");
    assert_eq!(
        run.resource.get("service.name").map(String::as_str),
        Some("mecated-test")
    );
    assert_eq!(
        run.resource.get("deployment.environment").map(String::as_str),
        Some("test")
    );
    // One trace per run: every span shares the run's trace id.
    assert!(
        spans.iter().all(|s| s.trace_id == run.trace_id),
        "{:?}",
        names(&spans)
    );

    let chats: Vec<&SpanView> = spans.iter().filter(|s| s.name == "chat mock").collect();
    assert_eq!(chats.len(), 2, "{:?}", names(&spans));
    let mut finishes: Vec<&str> = chats
        .iter()
        .map(|s| s.attr("gen_ai.response.finish_reasons"))
        .collect();
    finishes.sort_unstable();
    assert_eq!(finishes, ["[end_turn]", "[tool_calls]"]);
    let first = chats
        .iter()
        .find(|s| s.attr("gen_ai.response.finish_reasons") == "[tool_calls]")
        .unwrap();
    assert_eq!(first.attr("gen_ai.operation.name"), "chat");
    assert_eq!(first.attr("gen_ai.request.model"), "mock");
    assert_eq!(first.attr("gen_ai.provider.name"), "mock");
    assert_eq!(first.attr("gen_ai.usage.input_tokens"), "120");
    assert_eq!(first.attr("gen_ai.usage.output_tokens"), "30");
    assert_eq!(first.attr("mecatl.model.retries"), "0");
    assert!(chats.iter().all(|s| s.parent_span_id == run.span_id));

    let echo = one(&spans, "execute_tool Echo");
    assert_eq!(echo.parent_span_id, run.span_id);
    assert_eq!(echo.attr("gen_ai.operation.name"), "execute_tool");
    assert_eq!(echo.attr("gen_ai.tool.name"), "Echo");
    assert_eq!(echo.attr("gen_ai.tool.call.id"), "c1");
    assert_eq!(echo.attr("mecatl.tool.family"), "core");
    assert_eq!(echo.attr("mecatl.tool.decision"), "allow");
    assert_eq!(echo.attr("mecatl.tool.decided_by"), "policy");
    assert_eq!(echo.attr("mecatl.tool.outcome"), "ok");
    assert_eq!(
        echo.attr("mecatl.tool.result_bytes"),
        format!("echo {SECRET_RESULT}").len().to_string()
    );
    assert_eq!(
        echo.attr("mecatl.tool.args_bytes"),
        format!(r#"{{"text":"{SECRET_ARG}"}}"#).len().to_string()
    );
    echo.attr("mecatl.tool.queued_us").parse::<u64>().unwrap();
    echo.attr("mecatl.tool.took_us").parse::<u64>().unwrap();

    let poke = one(&spans, "execute_tool Poke");
    assert_eq!(poke.attr("mecatl.tool.decision"), "deny");
    assert_eq!(poke.attr("mecatl.tool.decided_by"), "policy");
    assert_eq!(poke.attr("mecatl.tool.outcome"), "denied");
    assert_eq!(poke.attr("error.type"), "denied");
    assert_eq!(poke.status_code, 2, "a refused call is an error span");

    // Store writes: each audit record under its call, snapshot saves under the run.
    let records: Vec<&SpanView> = spans.iter().filter(|s| s.name == "store record").collect();
    assert_eq!(records.len(), 2, "{:?}", names(&spans));
    assert!(records.iter().any(|s| s.parent_span_id == echo.span_id));
    assert!(
        spans
            .iter()
            .any(|s| s.name == "store save" && s.parent_span_id == run.span_id),
        "{:?}",
        names(&spans)
    );
}

/// The metric points of the run.
fn assert_run_metrics(received: &Received) {
    let calls = received.sums("mecatl.tool.calls");
    let count = |tool: &str, outcome: &str| {
        calls
            .iter()
            .filter(|(a, _)| {
                a.get("gen_ai.tool.name").map(String::as_str) == Some(tool)
                    && a.get("mecatl.tool.outcome").map(String::as_str) == Some(outcome)
            })
            .map(|(_, v)| *v)
            .fold(0.0, f64::max)
    };
    assert_eq!(count("Echo", "ok"), 1.0, "{calls:?}");
    assert_eq!(count("Poke", "denied"), 1.0, "{calls:?}");
    let tokens = received.histograms("gen_ai.client.token.usage");
    let input: f64 = tokens
        .iter()
        .filter(|(a, _, _)| a.get("gen_ai.token.type").map(String::as_str) == Some("input"))
        .map(|(_, _, sum)| *sum)
        .fold(0.0, f64::max);
    assert_eq!(input, 320.0, "{tokens:?}");
    assert!(
        received
            .histograms("mecatl.tool.duration")
            .iter()
            .any(
                |(a, count, _)| a.get("gen_ai.tool.name").map(String::as_str) == Some("Echo") && *count == 1
            )
    );
    assert!(
        received
            .histograms("mecatl.store.duration")
            .iter()
            .any(
                |(a, count, _)| a.get("mecatl.store.operation").map(String::as_str) == Some("append")
                    && *count > 0
            )
    );
}

fn assert_no_content(received: &Received) {
    let text = received.all_span_text();
    for secret in [SECRET_PROMPT, SECRET_ARG, SECRET_ANSWER, SECRET_RESULT] {
        assert!(!text.contains(secret), "{secret} was exported");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_reaches_an_http_receiver_as_one_trace_without_content() {
    let received = exported_run(Protocol::HttpProtobuf, false).await;
    assert_run_shape(&received);
    assert_no_content(&received);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_reaches_a_grpc_receiver_as_one_trace_without_content() {
    let received = exported_run(Protocol::Grpc, false).await;
    assert_run_shape(&received);
    assert_no_content(&received);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_is_exported_only_when_asked() {
    let received = exported_run(Protocol::HttpProtobuf, true).await;
    assert_run_shape(&received);
    let spans = received.spans();
    let echo = one(&spans, "execute_tool Echo");
    assert!(echo.attr("gen_ai.tool.call.arguments").contains(SECRET_ARG));
    assert!(echo.attr("gen_ai.tool.call.result").contains(SECRET_RESULT));
    assert!(
        spans.iter().any(|s| s
            .attributes
            .get("gen_ai.output.messages")
            .is_some_and(|m| m.contains(SECRET_ANSWER))),
        "the answer is exported with content on"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_spans_go_out_on_their_own_while_the_process_goes_on() {
    let (addr, received) = http_receiver().await;
    let telemetry = Telemetry::start(options(addr, Protocol::HttpProtobuf, false))
        .unwrap()
        .unwrap();
    let engine = observed_engine(&telemetry);
    let events = run(&engine, "s-otlp", SECRET_PROMPT).await;
    assert_eq!(stop(&events), StopReason::EndTurn);
    // No shutdown and no page read: the telemetry thread applies the run's facts
    // and the export task sends them after its batch delay (metrics go out with
    // the SDK's periodic reading, a minute apart by default).
    received
        .wait_for("the run's spans before any shutdown", |r| {
            r.spans().iter().any(|s| s.name == "invoke_agent mecatl")
        })
        .await;
    assert_run_spans(&received);
    assert_no_content(&received);
    telemetry.shutdown(Duration::from_secs(10)).await;
}
