//! Reconnect once, single flight, the model-visible texts, D13,
//! close, JSON-RPC errors and `list_changed`. Events are counted by their `event`
//! field.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use adapter_mcp::{McpManager, MountOptions};
use engine_core::Catalog;
use engine_ports::{CancellationToken, ToolResult};
use futures::future::join_all;

use crate::support::capture::Capture;
use crate::support::fake::{FakeResource, FakeState};
use crate::support::http::{FixtureServer, Mode};
use crate::support::{catalog_of, connect_all, http_config, run, wait_until};

const AFTER_RECONNECT: &str = "mcp call failed: MCP server \"fake\" unavailable after reconnect";

async fn fake(state: Arc<FakeState>) -> (FixtureServer, McpManager, Catalog) {
    let server = FixtureServer::start(state).await;
    let manager = connect_all(vec![http_config("fake", &server.url())]).await;
    let catalog = catalog_of(&manager).await;
    (server, manager, catalog)
}

async fn echo(catalog: &Catalog, text: &str) -> ToolResult {
    run(catalog, "mcp__fake__echo", &format!(r#"{{"text":"{text}"}}"#)).await
}

#[tokio::test]
async fn a_restarted_server_is_reconnected_transparently() {
    let capture = Capture::start();
    let (mut server, manager, catalog) = fake(FakeState::new()).await;
    assert_eq!(echo(&catalog, "first").await.content(), "echo:first");
    assert_eq!(manager.reconnect_counts(), [("fake".to_owned(), 0)]);
    server.restart().await;
    let result = echo(&catalog, "second").await;
    assert!(!result.is_error(), "{result:?}");
    assert_eq!(result.content(), "echo:second");
    assert_eq!(capture.reconnects(), (1, 1, 0));
    let started = capture
        .events()
        .into_iter()
        .find(|e| e.field("event") == Some("mcp.reconnect.start"))
        .unwrap();
    assert_eq!(started.field("server"), Some("fake"));
    assert_eq!(started.level, tracing::Level::INFO);
    assert_eq!(manager.servers()[0].status.as_str(), "connected");
    assert_eq!(
        manager.reconnect_counts(),
        [("fake".to_owned(), 1)],
        "counted for the metrics"
    );
}

#[tokio::test]
async fn a_server_answering_404_gives_the_after_reconnect_text() {
    let capture = Capture::start();
    let (server, manager, catalog) = fake(FakeState::new()).await;
    server.faults.set_mode(Mode::All404 {
        delay: Duration::ZERO,
    });
    let result = echo(&catalog, "x").await;
    assert!(result.is_error());
    assert_eq!(result.content(), AFTER_RECONNECT);
    assert!(!result.content().contains("session") && !result.content().contains("refused"));
    assert_eq!(capture.reconnects(), (1, 0, 1));
    let failed = capture
        .events()
        .into_iter()
        .find(|e| e.field("event") == Some("mcp.reconnect.failed"))
        .unwrap();
    assert_eq!(failed.level, tracing::Level::WARN);
    assert!(failed.field("error").is_some());
    assert_eq!(manager.servers()[0].status.as_str(), "dropped");
}

#[tokio::test]
async fn concurrent_failures_share_one_dial() {
    let capture = Capture::start();
    let (mut server, _manager, catalog) = fake(FakeState::new()).await;
    server.restart().await;
    let calls = (0..8).map(|i| {
        let catalog = &catalog;
        async move { (i, echo(catalog, &format!("n{i}")).await) }
    });
    for (i, result) in join_all(calls).await {
        assert_eq!(result.content(), format!("echo:n{i}"), "{result:?}");
    }
    assert_eq!(capture.reconnects(), (1, 1, 0));

    let capture = Capture::start();
    let (server, _manager, catalog) = fake(FakeState::new()).await;
    server.faults.set_mode(Mode::All404 {
        delay: Duration::from_millis(200),
    });
    let results = join_all((0..8).map(|i| {
        let catalog = &catalog;
        async move { echo(catalog, &format!("n{i}")).await }
    }))
    .await;
    for result in results {
        assert_eq!(result.content(), AFTER_RECONNECT);
    }
    assert_eq!(capture.reconnects(), (1, 0, 1));
}

#[tokio::test]
async fn close_is_terminal() {
    let capture = Capture::start();
    let (server, manager, catalog) = fake(FakeState::new()).await;
    manager.close().await.unwrap();
    manager.close().await.unwrap();
    let requests = server.faults.requests.load(Ordering::SeqCst);
    let result = echo(&catalog, "x").await;
    assert!(result.is_error());
    assert!(result.content().contains("closed"), "{result:?}");
    assert_eq!(
        server.faults.requests.load(Ordering::SeqCst),
        requests,
        "a closed server was dialled"
    );
    assert_eq!(capture.reconnects(), (0, 0, 0));
    assert_eq!(manager.servers()[0].status.as_str(), "closed");
    assert!(manager.tool_snapshot(MountOptions::default()).tools().is_empty());
}

#[tokio::test]
async fn a_request_that_may_have_arrived_is_never_resent() {
    let capture = Capture::start();
    let (server, _manager, catalog) = fake(FakeState::new().enable(&["slow"])).await;
    server.faults.set_mode(Mode::DropSlowCalls);
    let result = run(&catalog, "mcp__fake__slow", "{}").await;
    assert!(result.is_error());
    assert_eq!(
        result.content(),
        "mcp call failed: MCP server \"fake\" unavailable; request outcome is unknown"
    );
    assert!(!result.content().contains("after reconnect"));
    assert_eq!(server.faults.slow_calls_seen.load(Ordering::SeqCst), 1);
    assert_eq!(capture.reconnects(), (0, 0, 0));
    // The session is still usable.
    server.faults.set_mode(Mode::Normal);
    assert_eq!(echo(&catalog, "after").await.content(), "echo:after");
}

#[tokio::test]
async fn reads_and_prompts_reconnect_too() {
    let capture = Capture::start();
    let state = FakeState::new().with_resources(vec![FakeResource::text("test://r", "r", "resource body")]);
    state.prompts.store(true, Ordering::SeqCst);
    let (mut server, manager, catalog) = fake(Arc::clone(&state)).await;
    let cancel = CancellationToken::new();
    server.restart().await;
    let chunks = manager.read_resource("fake", "test://r", &cancel).await.unwrap();
    assert_eq!(chunks.len(), 1);
    assert_eq!(capture.reconnects(), (1, 1, 0));
    server.restart().await;
    let prompt = manager.get_prompt("fake", "two", None, &cancel).await.unwrap();
    assert_eq!(prompt.messages.len(), 2);
    assert_eq!(capture.reconnects(), (2, 2, 0));

    capture.clear();
    *state.echo_error.lock().unwrap() = Some("boom-after-restart".to_owned());
    server.restart().await;
    let result = echo(&catalog, "x").await;
    assert!(result.is_error());
    assert_eq!(result.content(), "boom-after-restart");
    assert_eq!(capture.reconnects(), (1, 1, 0));
}

#[tokio::test]
async fn json_rpc_errors_are_not_drops() {
    let capture = Capture::start();
    let state = FakeState::new();
    *state.rpc_error.lock().unwrap() = Some("session not found".to_owned());
    let (_server, _manager, catalog) = fake(state).await;
    let result = echo(&catalog, "x").await;
    assert!(result.is_error());
    assert!(
        result.content().starts_with("mcp call failed: session not found"),
        "{result:?}"
    );
    assert_eq!(capture.reconnects(), (0, 0, 0));
}

#[tokio::test]
async fn list_changed_marks_dirty_and_re_lists_lazily() {
    let capture = Capture::start();
    let state = FakeState::new().enable(&["mutate"]);
    let (_server, manager, early) = fake(Arc::clone(&state)).await;
    let generation = manager.tools_generation();
    assert_eq!(run(&early, "mcp__fake__mutate", "{}").await.content(), "mutated");
    assert!(
        wait_until(Duration::from_secs(10), || !capture
            .infos_with("changed its tools list")
            .is_empty())
        .await,
        "no list_changed INFO"
    );
    assert_eq!(capture.infos_with("changed its tools list").len(), 1);
    assert!(
        early.lookup("mcp__fake__added").is_none(),
        "a built catalog changed"
    );
    let tools = manager.tools(MountOptions::default()).await;
    assert!(tools.iter().any(|t| t.name() == "mcp__fake__added"));
    assert!(manager.tools_generation() > generation);
    let later = catalog_of(&manager).await;
    assert_eq!(run(&later, "mcp__fake__added", "{}").await.content(), "added!");
    assert!(early.lookup("mcp__fake__added").is_none());

    let generation = manager.tools_generation();
    state.fail_tools_list.store(true, Ordering::SeqCst);
    capture.clear();
    run(&early, "mcp__fake__mutate", "{}").await;
    assert!(
        wait_until(Duration::from_secs(10), || !capture
            .infos_with("changed its tools list")
            .is_empty())
        .await
    );
    let tools = manager.tools(MountOptions::default()).await;
    assert!(!tools.iter().any(|t| t.name() == "mcp__fake__added2"));
    assert!(tools.iter().any(|t| t.name() == "mcp__fake__added"));
    assert_eq!(manager.tools_generation(), generation);
    let warns = capture.warns_with("re-listing");
    assert_eq!(warns.len(), 1, "{warns:?}");
    // The flag was re-armed: the next read tries again (and succeeds once the server is fine).
    state.fail_tools_list.store(false, Ordering::SeqCst);
    let tools = manager.tools(MountOptions::default()).await;
    assert!(tools.iter().any(|t| t.name() == "mcp__fake__added2"));
}

#[tokio::test]
async fn a_stopped_server_fails_cleanly_and_recovers_when_back() {
    let capture = Capture::start();
    let (mut server, manager, catalog) = fake(FakeState::new()).await;
    server.stop().await;
    let down = echo(&catalog, "down").await;
    assert_eq!(down.content(), AFTER_RECONNECT);
    assert_eq!(capture.reconnects(), (1, 0, 1));
    assert_eq!(manager.servers()[0].status.as_str(), "dropped");
    server.restart().await;
    // The session is known dead: the reconnect happens before anything is sent.
    let up = echo(&catalog, "up").await;
    assert_eq!(up.content(), "echo:up");
    assert_eq!(capture.reconnects(), (2, 1, 1));
    assert_eq!(manager.servers()[0].status.as_str(), "connected");
}

#[tokio::test]
async fn a_call_dials_at_most_once_even_when_its_session_was_already_lost() {
    let capture = Capture::start();
    let (server, _manager, catalog) = fake(FakeState::new()).await;
    server.faults.set_mode(Mode::Calls404);
    // Sent, refused (not delivered), one dial, resent, refused: the session is lost.
    let first = echo(&catalog, "one").await;
    assert_eq!(first.content(), AFTER_RECONNECT);
    assert_eq!(capture.reconnects(), (1, 1, 0));
    // The session is known lost: one dial before sending, and the refusal after it
    // ends the call instead of dialling again.
    let second = echo(&catalog, "two").await;
    assert_eq!(second.content(), AFTER_RECONNECT);
    assert_eq!(capture.reconnects(), (2, 2, 0));
}
