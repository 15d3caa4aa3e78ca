//! Connect, naming and spec mapping.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use adapter_mcp::{ConnectOptions, McpManager, MountOptions, ServerConfig, TransportConfig};
use engine_core::Tool as _;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde_json::{Value, json};

use crate::support::capture::Capture;
use crate::support::fake::{ECHO_DESCRIPTION, FakeResource, FakeState};
use crate::support::http::{FixtureServer, Mode};
use crate::support::{connect_all, http_config, wait_until};

fn tool_names(manager: &McpManager) -> Vec<String> {
    manager
        .tool_snapshot(MountOptions::default())
        .tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect()
}

#[tokio::test]
async fn names_descriptions_schemas_and_read_only() {
    let server = FixtureServer::start(FakeState::new()).await;
    let manager = connect_all(vec![http_config("fake", &server.url())]).await;
    let snapshot = manager.tool_snapshot(MountOptions::default());
    let names: Vec<&str> = snapshot.tools().iter().map(|t| t.name()).collect();
    assert_eq!(names, ["mcp__fake__echo", "mcp__fake__peek", "mcp__fake__boom"]);
    let echo = &snapshot.tools()[0];
    assert_eq!(echo.spec().description(), ECHO_DESCRIPTION);
    assert_eq!(echo.remote_name(), "echo");
    let schema = echo.spec().schema().cloned().unwrap();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["text"]["type"], "string");
    let read_only: Vec<bool> = snapshot.tools().iter().map(|t| t.read_only()).collect();
    assert_eq!(read_only, [false, true, false]);
    // Disclosable only when progressive tools are on: name + first description line.
    assert!(echo.advertised_spec().is_none());
    let progressive = manager.tool_snapshot(MountOptions {
        progressive: true,
        ..MountOptions::default()
    });
    let light = progressive.tools()[0].advertised_spec().unwrap();
    assert_eq!(light.name(), "mcp__fake__echo");
    assert_eq!(light.description(), "Echoes the text back.");
    assert!(light.schema().is_none());
    manager.close().await.unwrap();
}

#[tokio::test]
async fn invalid_configs_fail_before_dialling() {
    let mut no_url = http_config("nourl", "");
    if let TransportConfig::Http { url, .. } = &mut no_url.transport {
        url.clear();
    }
    let configs = vec![
        http_config("", "http://127.0.0.1:1/mcp"),
        http_config("has__sep", "http://127.0.0.1:1/mcp"),
        no_url,
        ServerConfig::stdio("noprog", "", vec![], "/tmp"),
    ];
    let started = Instant::now();
    let connected = McpManager::connect(configs, ConnectOptions::default()).await;
    assert!(connected.manager.is_empty());
    let errors: Vec<String> = connected.failures.iter().map(|f| f.error.clone()).collect();
    assert_eq!(errors.len(), 4, "{errors:?}");
    assert!(errors[0].contains("empty"), "{errors:?}");
    assert!(
        errors[1].contains("\"has__sep\"") && errors[1].contains("__"),
        "{errors:?}"
    );
    assert!(
        errors[2].contains("\"nourl\"") && errors[2].contains("URL"),
        "{errors:?}"
    );
    assert!(
        errors[3].contains("\"noprog\"") && errors[3].contains("program"),
        "{errors:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
}

fn raw_tools(server: &FixtureServer, tools: Value) {
    *server.faults.raw_tools.lock().unwrap() = Some(Arc::new(move |_| json!({ "tools": tools.clone() })));
}

#[tokio::test]
async fn accepted_names_arrive_verbatim() {
    let server = FixtureServer::start(FakeState::new()).await;
    let long_ok = "é".repeat(124);
    raw_tools(
        &server,
        json!([{"name": "read_file"}, {"name": "café"}, {"name": long_ok}, {"name": "a__b"}]),
    );
    let manager = connect_all(vec![http_config("s", &server.url())]).await;
    let names = tool_names(&manager);
    assert_eq!(
        names,
        [
            "mcp__s__read_file",
            "mcp__s__café",
            &format!("mcp__s__{long_ok}"),
            "mcp__s__a__b"
        ]
    );
    assert_eq!(
        manager.tool_snapshot(MountOptions::default()).tools()[3].remote_name(),
        "a__b"
    );
}

#[tokio::test]
async fn one_bad_name_skips_only_that_tool() {
    for bad in [
        json!("bad\nname"),
        json!("x".repeat(257 - "mcp__fake__".len() + 1)),
    ] {
        let capture = Capture::start();
        let server = FixtureServer::start(FakeState::new()).await;
        raw_tools(&server, json!([{"name": "good"}, {"name": bad}]));
        let manager = connect_all(vec![http_config("fake", &server.url())]).await;
        assert_eq!(tool_names(&manager), ["mcp__fake__good"]);
        let warns = capture.warns_with("tools/list entry 1 is skipped");
        assert_eq!(warns.len(), 1, "{:?}", capture.events());
        assert!(warns[0].message.contains("\"fake\""), "{warns:?}");
        manager.close().await.unwrap();
    }
}

#[tokio::test]
async fn a_tool_without_input_schema_gets_an_object_schema() {
    let server = FixtureServer::start(FakeState::new()).await;
    raw_tools(
        &server,
        json!([{"name": "bare", "description": "no schema"}, {"name": "nul", "inputSchema": null}]),
    );
    let manager = connect_all(vec![http_config("fake", &server.url())]).await;
    for tool in manager.tool_snapshot(MountOptions::default()).tools() {
        assert_eq!(tool.spec().schema(), Some(&json!({"type": "object"})));
    }
    assert_eq!(manager.servers()[0].status.as_str(), "connected");
}

#[tokio::test]
async fn resources_and_prompts_only_when_advertised() {
    let capture = Capture::start();
    let tools_only = FixtureServer::start(FakeState::new()).await;
    let manager = connect_all(vec![http_config("plain", &tools_only.url())]).await;
    let info = &manager.servers()[0];
    assert_eq!((info.tools, info.resources, info.prompts), (3, 0, 0));
    assert!(
        !tools_only.faults.saw("resources/list"),
        "{:?}",
        tools_only.faults.methods()
    );
    assert!(
        !tools_only.faults.saw("prompts/list"),
        "{:?}",
        tools_only.faults.methods()
    );

    let state = FakeState::new().with_resources(vec![FakeResource::text("test://a", "a", "x")]);
    state.fail_resources_list.store(true, Ordering::SeqCst);
    let broken = FixtureServer::start(state).await;
    capture.clear();
    let manager = connect_all(vec![http_config("broken", &broken.url())]).await;
    assert_eq!(manager.servers()[0].tools, 3);
    assert_eq!(manager.servers()[0].resources, 0);
    let warns = capture.warns_with("broken");
    assert_eq!(warns.len(), 1, "{warns:?}");
    assert!(warns[0].message.contains("resources"), "{warns:?}");
}

#[tokio::test]
async fn pages_are_followed_and_cursor_loops_end() {
    let capture = Capture::start();
    let server = FixtureServer::start(FakeState::new()).await;
    *server.faults.raw_tools.lock().unwrap() = Some(Arc::new(|cursor| match cursor {
        None => json!({"tools": [{"name": "p1"}], "nextCursor": "c2"}),
        Some("c2") => json!({"tools": [{"name": "p2"}], "nextCursor": "c3"}),
        Some(_) => json!({"tools": [{"name": "p3"}]}),
    }));
    let manager = connect_all(vec![http_config("paged", &server.url())]).await;
    assert_eq!(
        tool_names(&manager),
        ["mcp__paged__p1", "mcp__paged__p2", "mcp__paged__p3"]
    );

    let looping = FixtureServer::start(FakeState::new()).await;
    *looping.faults.raw_tools.lock().unwrap() = Some(Arc::new(|cursor| match cursor {
        None => json!({"tools": [{"name": "first"}], "nextCursor": "again"}),
        Some(_) => json!({"tools": [], "nextCursor": "again"}),
    }));
    let started = Instant::now();
    let manager = connect_all(vec![http_config("loop", &looping.url())]).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(tool_names(&manager), ["mcp__loop__first"]);
    let warns = capture.warns_with("loop");
    assert_eq!(warns.len(), 1, "{warns:?}");
    assert!(warns[0].message.contains("repeated cursor"), "{warns:?}");
}

#[tokio::test]
async fn bearer_reaches_the_server_and_never_another_origin() {
    let server = FixtureServer::start(FakeState::new()).await;
    let mut headers = HeaderMap::new();
    headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer tok-23"));
    let manager = connect_all(vec![
        ServerConfig::http("auth", server.url(), Some(headers.clone()))
            .with_connect_timeout(Duration::from_secs(10)),
    ])
    .await;
    let seen = server.faults.authorization.lock().unwrap().clone();
    assert!(!seen.is_empty());
    assert!(
        seen.iter().all(|a| a.as_deref() == Some("Bearer tok-23")),
        "{seen:?}"
    );
    manager.close().await.unwrap();

    let other = FixtureServer::start(FakeState::new()).await;
    let redirecting = FixtureServer::start(FakeState::new()).await;
    redirecting.faults.set_mode(Mode::Redirect(other.url()));
    let connected = McpManager::connect(
        vec![
            ServerConfig::http("redir", redirecting.url(), Some(headers))
                .with_connect_timeout(Duration::from_secs(5)),
        ],
        ConnectOptions::default(),
    )
    .await;
    assert_eq!(connected.failures.len(), 1);
    assert!(
        !connected.failures[0].error.contains("tok-23"),
        "{:?}",
        connected.failures
    );
    assert!(redirecting.faults.requests.load(Ordering::SeqCst) >= 1);
    assert_eq!(
        other.faults.requests.load(Ordering::SeqCst),
        0,
        "the other origin saw a request"
    );
}

#[tokio::test]
async fn the_deadline_and_cancellation() {
    let server = FixtureServer::start(FakeState::new()).await;
    *server.faults.initialize_delay.lock().unwrap() = Some(Duration::from_secs(3));
    let config = http_config("late", &server.url()).with_connect_timeout(Duration::from_millis(500));
    let started = Instant::now();
    let connected = McpManager::connect(vec![config], ConnectOptions::default()).await;
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(connected.failures.len(), 1);
    let error = &connected.failures[0].error;
    assert!(error.contains("timed out") && error.contains("0.5 s"), "{error}");

    let state = FakeState::new();
    state.hang_tools_list.store(true, Ordering::SeqCst);
    let hanging = FixtureServer::start(Arc::clone(&state)).await;
    let options = ConnectOptions::default();
    let cancel = options.cancel.clone();
    let faults = Arc::clone(&hanging.faults);
    let connect = tokio::spawn(McpManager::connect(
        vec![http_config("hang", &hanging.url())],
        options,
    ));
    assert!(wait_until(Duration::from_secs(10), || faults.saw("tools/list")).await);
    let cancelled_at = Instant::now();
    cancel.cancel();
    let connected = connect.await.unwrap();
    assert!(cancelled_at.elapsed() < Duration::from_secs(1));
    assert!(connected.manager.is_empty());
    assert!(connected.failures[0].error.contains("cancelled"));
    // Nothing is left in flight: the server's tools/list handler was cancelled.
    assert!(
        wait_until(Duration::from_secs(10), || state
            .tools_list_cancelled
            .load(Ordering::SeqCst))
        .await,
        "the server still works on tools/list"
    );
}

#[tokio::test]
async fn failures_are_data_and_survivors_are_kept() {
    let capture = Capture::start();
    let good = FixtureServer::start(FakeState::new()).await;
    let connected = McpManager::connect(
        vec![
            http_config("good", &good.url()),
            http_config("bad", "http://127.0.0.1:1/mcp?key=secret-q"),
        ],
        ConnectOptions::default(),
    )
    .await;
    assert_eq!(connected.manager.server_names(), ["good"]);
    assert_eq!(connected.failures.len(), 1);
    let failure = &connected.failures[0];
    assert_eq!(failure.server, "bad");
    assert_eq!(failure.endpoint, "http://127.0.0.1:1/mcp");
    assert!(!failure.error.contains("secret-q"), "{failure:?}");
    assert!(failure.error.len() <= 200 + 3, "{failure:?}");
    assert_eq!(tool_names(&connected.manager).len(), 3);
    let warns = capture.warns_with("\"bad\"");
    assert_eq!(warns.len(), 1, "{warns:?}");
    assert!(warns[0].message.contains("http://127.0.0.1:1/mcp"));
    assert!(!warns[0].message.contains("secret-q"));
    // Zero configs: an empty manager and no diagnostics.
    capture.clear();
    let none = McpManager::connect(Vec::new(), ConnectOptions::default()).await;
    assert!(none.manager.is_empty() && none.failures.is_empty());
    assert!(capture.ours(tracing::Level::WARN).is_empty());
}
