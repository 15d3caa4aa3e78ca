//! ToolHive discovery through its HTTP API, fail-soft, merged after
//! static servers.

use std::sync::{Arc, Mutex};

use adapter_mcp::{
    ServerConfig, ServerSource, ToolhiveOptions, TransportConfig, discover_toolhive, merge_servers,
    toolhive_base_url,
};
use axum::Router;
use axum::extract::{Request, State};
use axum::response::IntoResponse;
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::support::capture::Capture;

#[derive(Clone, Default)]
struct Api {
    body: Arc<Mutex<String>>,
    seen: Arc<Mutex<Vec<String>>>,
}

async fn answer(State(api): State<Api>, request: Request) -> impl IntoResponse {
    let uri = request.uri().to_string();
    api.seen
        .lock()
        .unwrap()
        .push(format!("{} {uri}", request.method()));
    let body = api.body.lock().unwrap().clone();
    ([("content-type", "application/json")], body)
}

async fn api(workloads: Value) -> (Api, String) {
    let api = Api::default();
    *api.body.lock().unwrap() = json!({ "workloads": workloads }).to_string();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let app = Router::new().fallback(answer).with_state(api.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (api, base)
}

fn workload(name: &str, port: u16) -> Value {
    json!({
        "name": name, "url": format!("http://127.0.0.1:{port}/mcp"), "transport_type": "streamable-http",
        "proxy_mode": "", "status": "running", "port": port, "tool_type": "mcp", "unknown": {"x": 1}
    })
}

fn options(base: &str, group: Option<&str>) -> ToolhiveOptions {
    ToolhiveOptions {
        base_url: base.to_owned(),
        group: group.map(str::to_owned),
    }
}

fn url_of(config: &ServerConfig) -> &str {
    match &config.transport {
        TransportConfig::Http { url, headers, .. } => {
            assert!(headers.is_none());
            url
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn too_many_workloads_is_one_warn_and_nothing_else() {
    let capture = Capture::start();
    let many: Vec<Value> = (0..129).map(|i| workload(&format!("w{i}"), 9000)).collect();
    let (_api, base) = api(Value::Array(many)).await;
    let found = discover_toolhive(&options(&base, None)).await;
    assert!(found.servers.is_empty() && found.skipped.is_empty());
    let warns = capture.ours(tracing::Level::WARN);
    assert_eq!(warns.len(), 1, "{warns:?}");
    assert!(warns[0].message.contains("128"), "{warns:?}");
}

#[tokio::test]
async fn running_streamable_http_workloads_become_servers() {
    let (api, base) = api(json!([workload("github", 9101), workload("fetch", 9102)])).await;
    let found = discover_toolhive(&options(&base, None)).await;
    assert!(found.skipped.is_empty(), "{:?}", found.skipped);
    let names: Vec<&str> = found.servers.iter().map(|s| s.name.as_str()).collect();
    // Sorted by name (the overview's server order).
    assert_eq!(names, ["fetch", "github"]);
    let github = &found.servers[1];
    assert_eq!(url_of(github), "http://127.0.0.1:9101/mcp");
    assert_eq!(
        github.source,
        ServerSource::Toolhive {
            group: "default".into()
        }
    );
    assert_eq!(github.connect_timeout, std::time::Duration::from_secs(30));
    assert!(matches!(
        github.transport,
        TransportConfig::Http {
            redirects: adapter_mcp::Redirects::SameOrigin,
            ..
        }
    ));
    assert_eq!(*api.seen.lock().unwrap(), ["GET /api/v1beta/workloads"]);
}

#[tokio::test]
async fn only_streamable_http_proxies_are_mapped() {
    let mut legacy = workload("legacy", 9201);
    legacy["transport_type"] = json!("sse");
    let mut stdio_sse = workload("stdiosse", 9202);
    stdio_sse["transport_type"] = json!("stdio");
    stdio_sse["proxy_mode"] = json!("sse");
    let mut stdio_default = workload("stdioplain", 9203);
    stdio_default["transport_type"] = json!("stdio");
    let mut stdio_http = workload("stdiohttp", 9204);
    stdio_http["transport_type"] = json!("stdio");
    stdio_http["proxy_mode"] = json!("streamable-http");
    let (_api, base) = api(json!([legacy, stdio_sse, stdio_default, stdio_http])).await;
    let found = discover_toolhive(&options(&base, None)).await;
    let names: Vec<&str> = found.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["stdiohttp", "stdioplain"]);
    let skipped: Vec<&str> = found.skipped.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(skipped, ["legacy", "stdiosse"]);
    assert!(
        found
            .skipped
            .iter()
            .all(|s| s.reason.contains("not served over streamable HTTP"))
    );
}

#[tokio::test]
async fn names_status_and_groups() {
    let capture = Capture::start();
    let mut stopped = workload("stopped", 9302);
    stopped["status"] = json!("stopped");
    let mut team = workload("teamtool", 9303);
    team["group"] = json!("team-x");
    let (_api, base) = api(json!([
        workload("bad__name", 9301),
        stopped,
        team,
        workload("dotted.name-1", 9304)
    ]))
    .await;
    let found = discover_toolhive(&options(&base, None)).await;
    let names: Vec<&str> = found.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["dotted.name-1"]);
    assert_eq!(found.skipped.len(), 2);
    assert!(found.skipped[0].reason.contains("__"));
    assert!(found.skipped[1].reason.contains("not running") && found.skipped[1].reason.contains("stopped"));
    assert_eq!(capture.ours(tracing::Level::WARN).len(), 2);
    assert_eq!(found.diagnostics.entries().len(), 2);

    let found = discover_toolhive(&options(&base, Some("team-x"))).await;
    let names: Vec<&str> = found.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["teamtool"]);
    assert!(found.skipped.is_empty(), "other groups are dropped silently");
    assert_eq!(
        found.servers[0].source,
        ServerSource::Toolhive {
            group: "team-x".into()
        }
    );
}

#[tokio::test]
async fn absence_is_normal_and_static_names_win() {
    let capture = Capture::start();
    let port = test_peers::free_port();
    let found = discover_toolhive(&options(&format!("http://127.0.0.1:{port}"), None)).await;
    assert!(found.servers.is_empty() && found.skipped.is_empty());
    assert_eq!(capture.ours(tracing::Level::WARN).len(), 0);
    assert_eq!(capture.ours(tracing::Level::INFO).len(), 1);
    let merged = merge_servers(Vec::new(), found);
    assert!(merged.servers.is_empty());
    assert!(
        merged
            .diagnostics
            .entries()
            .iter()
            .any(|d| d.message.contains("MCP disabled"))
    );

    let (api, base) = api(json!([workload("github", 9401), workload("zeta", 9402)])).await;
    let found = discover_toolhive(&options(&base, None)).await;
    let statics = vec![
        ServerConfig::http("GitHub", "https://github.internal/mcp", None),
        ServerConfig::stdio("alpha", "mcp-alpha", vec![], "/tmp"),
    ];
    let merged = merge_servers(statics, found);
    let names: Vec<&str> = merged.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["GitHub", "alpha", "zeta"]);
    assert_eq!(merged.skipped.len(), 1);
    let reason = &merged.skipped[0].reason;
    assert!(
        reason.contains("static") && reason.contains("toolhive(default)"),
        "{reason}"
    );
    assert!(
        api.seen
            .lock()
            .unwrap()
            .iter()
            .all(|r| r == "GET /api/v1beta/workloads")
    );

    // A broken API is a WARN, never fatal.
    *api.body.lock().unwrap() = "not json".to_owned();
    capture.clear();
    let broken = discover_toolhive(&options(&base, None)).await;
    assert!(broken.servers.is_empty());
    assert_eq!(capture.ours(tracing::Level::WARN).len(), 1);
}

#[test]
fn toolhive_url_precedence() {
    let env = |value: Option<&'static str>| {
        move |name: &str| {
            (name == "MECATED_TOOLHIVE_URL")
                .then_some(value)
                .flatten()
                .map(str::to_owned)
        }
    };
    assert_eq!(
        toolhive_base_url(Some("http://flag:1"), env(Some("http://env:2"))),
        "http://flag:1"
    );
    assert_eq!(toolhive_base_url(None, env(Some("http://env:2"))), "http://env:2");
    assert_eq!(toolhive_base_url(None, env(None)), "http://127.0.0.1:8080");
}
