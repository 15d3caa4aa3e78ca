//! `mecated run` with the `OTEL_*` variables: its trace and metrics reach a local
//! OTLP/HTTP receiver by the time it exits, without content unless
//! `--otel-content=true`; a variable that cannot be used is a usage error naming it.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::Uri;

use crate::support::{Output, Scratch, mecated, mecated_run_with_env};

/// A call whose argument (and so its error result) carries a marker.
const SCRIPT: &str = r#"{"turns": [
  {"text": "looking", "tool_calls": [{"id": "r1", "name": "Read", "args": {"path": "MARKER-5e1d.md"}}]},
  {"text": "done"}
]}"#;
const MARKER: &[u8] = b"MARKER-5e1d";

/// Every OTLP export received: (path, protobuf body).
type Exports = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

async fn receiver() -> (SocketAddr, Exports) {
    let exports: Exports = Arc::default();
    let kept = Arc::clone(&exports);
    let app = axum::Router::new().fallback(move |uri: Uri, body: Bytes| {
        let kept = Arc::clone(&kept);
        async move {
            kept.lock().unwrap().push((uri.path().to_owned(), body.to_vec()));
            ([("content-type", "application/x-protobuf")], "")
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, exports)
}

async fn run_exported(scratch: &Scratch, addr: SocketAddr, extra: &[&str]) -> Output {
    let mut args = extra.to_vec();
    args.push("look");
    let endpoint = format!("http://{addr}");
    let envs = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_SERVICE_NAME", "mecated-cli-test"),
    ];
    mecated_run_with_env(scratch, SCRIPT, &args, &envs).await
}

/// The bodies received on `path`, concatenated (protobuf keeps strings as UTF-8).
fn received(exports: &Exports, path: &str) -> Vec<u8> {
    exports
        .lock()
        .unwrap()
        .iter()
        .filter(|(p, _)| p == path)
        .flat_map(|(_, body)| body.clone())
        .collect()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle)
}

#[tokio::test]
async fn a_run_exports_its_trace_and_metrics_by_exit_without_content() {
    let scratch = Scratch::new();
    let (addr, exports) = receiver().await;
    let output = run_exported(&scratch, addr, &[]).await;
    assert_eq!(output.code, 0, "{output:?}");
    let traces = received(&exports, "/v1/traces");
    for needle in [
        &b"invoke_agent mecatl"[..],
        b"chat mock",
        b"execute_tool Read",
        b"mecatl.tool.decided_by",
        b"mecated-cli-test",
    ] {
        assert!(
            contains(&traces, needle),
            "{} missing from the traces",
            String::from_utf8_lossy(needle)
        );
    }
    assert!(!contains(&traces, MARKER), "argument content was exported");
    let metrics = received(&exports, "/v1/metrics");
    assert!(
        contains(&metrics, b"mecatl.tool.calls"),
        "the last metrics are exported at exit"
    );
}

#[tokio::test]
async fn otel_content_exports_the_arguments_and_results() {
    let scratch = Scratch::new();
    let (addr, exports) = receiver().await;
    let output = run_exported(&scratch, addr, &["--otel-content=true"]).await;
    assert_eq!(output.code, 0, "{output:?}");
    let traces = received(&exports, "/v1/traces");
    assert!(contains(&traces, b"gen_ai.tool.call.arguments"));
    assert!(
        contains(&traces, MARKER),
        "the argument is exported with --otel-content=true"
    );
}

#[tokio::test]
async fn a_bad_otel_variable_is_a_usage_error_naming_it() {
    let scratch = Scratch::new();
    let ws = scratch.ws().display().to_string();
    let output = mecated(
        scratch.dir.path(),
        &[
            "run",
            "--workspace",
            ws.as_str(),
            "--toolhive=false",
            "--mock",
            "hi",
        ],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
        ],
    )
    .await;
    assert_eq!(output.code, 2, "{output:?}");
    for needle in [
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "http/json",
        "http/protobuf or grpc",
    ] {
        assert!(
            output.stderr.contains(needle),
            "{needle} missing: {}",
            output.stderr
        );
    }
}
