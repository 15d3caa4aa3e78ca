//! Who closes what: session engines close their client servers
//! only, `Built::close` closes the global servers once, a failed build unwinds, and
//! client servers are all-or-nothing.

use std::time::Duration;

use adapter_mcp::ServerConfig;
use app::{BuildError, FactoryError, SessionRequest, StoreConfig, build};
use engine_core::Approve;
use engine_ports::{EventKind, SessionId};
use futures::StreamExt as _;

use crate::support::logs::Capture;
use crate::support::mcp_fixture::{FixtureSpec, McpFixture};
use crate::support::{Scratch, client_spec, config, http_server, one_call_model, wait_until};

const WAIT: Duration = Duration::from_secs(10);

/// Runs `prompt` on `engine` and returns the first tool result's text.
async fn first_result(engine: &engine_core::Engine, session: &str) -> (String, bool) {
    let mut run = engine.run(&SessionId::from(session), "go").unwrap();
    let mut found = None;
    while let Some(event) = run.next().await {
        if let EventKind::ToolResult {
            content, is_error, ..
        } = event.kind
        {
            found.get_or_insert((content, is_error));
        }
    }
    found.expect("a tool result")
}

#[tokio::test]
async fn closing_a_session_closes_its_client_server_and_never_the_global_one() {
    let globe = McpFixture::start(FixtureSpec::tools("global:", &["echo"])).await;
    let cli = McpFixture::start(FixtureSpec::tools("client:", &["echo", "ping"])).await;
    let scratch = Scratch::new();
    let mut cfg = config(&scratch);
    cfg.mcp.servers = vec![http_server("globe", &globe.url)];
    cfg.model = one_call_model("mcp__globe__echo", r#"{"text":"hi"}"#);
    cfg.engine.approve = Approve::All;
    let built = build(cfg).await.unwrap();

    let first = built
        .factory()
        .create(SessionRequest::new(vec![client_spec("cli", &cli.url)]))
        .await
        .unwrap();
    assert_eq!(built.factory().live_sessions(), 1);
    first.close().await.unwrap();
    assert_eq!(built.factory().live_sessions(), 0);
    assert!(
        wait_until(WAIT, || cli.deletes() == 1).await,
        "the client server saw no DELETE"
    );
    assert_eq!(globe.deletes(), 0);
    assert!(!built.global_mcp().pinned_tools().tools().is_empty());

    let second = built.factory().create(SessionRequest::default()).await.unwrap();
    let (text, is_error) = first_result(second.engine(), "second").await;
    assert_eq!((text.as_str(), is_error), ("global:hi", false));
    assert_eq!(globe.deletes(), 0);

    built.close().await.unwrap();
    assert!(wait_until(WAIT, || globe.deletes() == 1).await);
}

#[tokio::test]
async fn built_close_is_idempotent_and_stops_stdio_children() {
    let Some(time_server) = test_peers::venv_bin(
        "built_close_is_idempotent_and_stops_stdio_children",
        "mcp-server-time",
    ) else {
        return;
    };
    let globe = McpFixture::start(FixtureSpec::tools("global:", &["echo"])).await;
    let scratch = Scratch::new();
    let mut cfg = config(&scratch);
    cfg.mcp.servers = vec![
        http_server("globe", &globe.url),
        ServerConfig::stdio(
            "time",
            time_server.display().to_string(),
            vec!["--local-timezone".into(), "UTC".into()],
            scratch.ws(),
        )
        .with_connect_timeout(Duration::from_secs(20)),
    ];
    let built = build(cfg).await.unwrap();
    assert!(
        built
            .shared_catalog()
            .lookup("mcp__time__get_current_time")
            .is_some()
    );
    let pid = built.global_mcp().server_pid("time").expect("a stdio child");
    assert!(!process_gone(pid));

    built.close().await.unwrap();
    built.close().await.unwrap();
    assert!(wait_until(WAIT, || globe.deletes() == 1).await);
    assert!(
        wait_until(WAIT, || process_gone(pid)).await,
        "stdio child {pid} still runs"
    );
    assert_eq!(globe.deletes(), 1);
    assert!(matches!(
        built.factory().create(SessionRequest::default()).await,
        Err(FactoryError::Closed)
    ));
}

#[tokio::test]
async fn a_build_failing_at_the_store_closes_the_global_servers() {
    let globe = McpFixture::start(FixtureSpec::tools("global:", &["echo"])).await;
    let scratch = Scratch::new();
    let not_a_dir = scratch.write("store-file", "not a directory");
    let mut cfg = config(&scratch);
    cfg.mcp.servers = vec![http_server("globe", &globe.url)];
    cfg.store = StoreConfig::Dir {
        path: not_a_dir.clone(),
        sync: adapter_jsonlstore::SyncPolicy::Never,
    };
    let error = build(cfg).await.unwrap_err();
    assert!(matches!(error, BuildError::Store { .. }), "{error:?}");
    assert!(
        error.to_string().contains(&not_a_dir.display().to_string()),
        "{error}"
    );
    assert!(
        wait_until(WAIT, || globe.deletes() == 1).await,
        "the global server saw no DELETE"
    );
}

#[tokio::test]
async fn global_tools_win_over_client_tools_of_the_same_name() {
    let globe = McpFixture::start(FixtureSpec::tools("global:", &["echo"])).await;
    let client_globe = McpFixture::start(FixtureSpec::tools("client:", &["echo"])).await;
    let other = McpFixture::start(FixtureSpec::tools("other:", &["echo"])).await;
    let scratch = Scratch::new();
    let mut cfg = config(&scratch);
    cfg.mcp.servers = vec![http_server("globe", &globe.url)];
    cfg.model = one_call_model("mcp__globe__echo", r#"{"text":"hi"}"#);
    cfg.engine.approve = Approve::All;
    let built = build(cfg).await.unwrap();

    let logs = Capture::start();
    let session = built
        .factory()
        .create(SessionRequest::new(vec![
            client_spec("globe", &client_globe.url),
            client_spec("other", &other.url),
        ]))
        .await
        .unwrap();
    let shadowed = logs.warns_with(&["mcp__globe__echo"]);
    assert_eq!(shadowed.len(), 1, "{shadowed:?}");
    assert!(shadowed[0].text.contains("shadowed"), "{shadowed:?}");
    assert!(session.engine().catalog().lookup("mcp__other__echo").is_some());
    assert_eq!(session.client_tool_names(), ["mcp__other__echo"]);

    let (text, _) = first_result(session.engine(), "s6").await;
    assert_eq!(text, "global:hi");
    assert!(client_globe.calls().is_empty());
    session.close().await.unwrap();
    built.close().await.unwrap();
}

#[tokio::test]
async fn client_servers_are_all_or_nothing() {
    let good = McpFixture::start(FixtureSpec::tools("good:", &["echo"])).await;
    let scratch = Scratch::new();
    let built = build(config(&scratch)).await.unwrap();
    let error = built
        .factory()
        .create(SessionRequest::new(vec![
            client_spec("good", &good.url),
            client_spec("dead", "http://127.0.0.1:1/mcp"),
        ]))
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(
        matches!(error, FactoryError::ClientServersUnreachable(_)),
        "{error:?}"
    );
    assert!(text.contains("\"dead\""), "{text}");
    assert!(!text.contains("\"good\""), "{text}");
    assert_eq!(built.factory().live_sessions(), 0);
    assert!(
        wait_until(WAIT, || good.deletes() == 1).await,
        "the good server stayed connected"
    );
    built.close().await.unwrap();
}

#[tokio::test]
async fn invalid_client_specs_are_rejected_before_any_connect() {
    let good = McpFixture::start(FixtureSpec::tools("good:", &["echo"])).await;
    let scratch = Scratch::new();
    let built = build(config(&scratch)).await.unwrap();
    let error = built
        .factory()
        .create(SessionRequest::new(vec![
            client_spec("good", &good.url),
            client_spec("a__b", "https://x.example/mcp"),
            client_spec("plain", "http://example.test/mcp"),
        ]))
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(
        matches!(error, FactoryError::ClientServersRejected(_)),
        "{error:?}"
    );
    assert!(text.contains("\"a__b\"") && text.contains("\"plain\""), "{text}");
    assert!(good.calls().is_empty());
    assert_eq!(good.deletes(), 0, "nothing was dialled");
    assert_eq!(built.factory().live_sessions(), 0);
    // The slot reserved for it was given back.
    let session = built
        .factory()
        .create_private(SessionRequest::default())
        .await
        .unwrap();
    session.close().await.unwrap();
    built.close().await.unwrap();
}

#[tokio::test]
async fn the_live_session_cap_refuses_extra_private_engines() {
    let scratch = Scratch::new();
    let mut cfg = config(&scratch);
    cfg.max_sessions = 2;
    let built = build(cfg).await.unwrap();
    let factory = built.factory();
    let a = factory.create_private(SessionRequest::default()).await.unwrap();
    let b = factory.create_private(SessionRequest::default()).await.unwrap();
    let error = factory
        .create_private(SessionRequest::default())
        .await
        .unwrap_err();
    assert!(
        matches!(error, FactoryError::TooManySessions { limit: 2 }),
        "{error:?}"
    );
    assert!(error.to_string().contains("too many sessions"), "{error}");
    a.close().await.unwrap();
    let c = factory.create_private(SessionRequest::default()).await.unwrap();
    assert_eq!(factory.live_sessions(), 2);
    // Shared-engine sessions are not capped.
    let shared = factory.create(SessionRequest::default()).await.unwrap();
    built.close().await.unwrap();
    assert_eq!(factory.live_sessions(), 0);
    // Closing after `Built::close` is harmless.
    b.close().await.unwrap();
    c.close().await.unwrap();
    shared.close().await.unwrap();
}

#[tokio::test]
async fn only_the_shared_build_narrates() {
    let globe = McpFixture::start(FixtureSpec::tools("global:", &["echo"])).await;
    let scratch = Scratch::new();
    let mut cfg = config(&scratch);
    cfg.mcp.servers = vec![http_server("globe", &globe.url)];
    let logs = Capture::start();
    let built = build(cfg).await.unwrap();
    let narrated = logs
        .all()
        .into_iter()
        .filter(|e| e.level == tracing::Level::INFO && e.text.starts_with("server-global MCP tools enabled"))
        .count();
    assert_eq!(narrated, 1);
    drop(logs);

    let logs = Capture::start();
    let session = built
        .factory()
        .create_private(SessionRequest::default())
        .await
        .unwrap();
    assert!(
        logs.all().is_empty(),
        "per-session assembly logged: {:?}",
        logs.all()
    );
    session.close().await.unwrap();
    drop(logs);
    built.close().await.unwrap();
}

/// Whether `/proc/<pid>` is gone or a zombie.
fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}
