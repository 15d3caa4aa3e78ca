//! Resilience against real servers, restarted by the tests and stopped by PID: the
//! TypeScript SDK (server-everything) and the Python SDK (`live_server.py`) restarted
//! on the same port between calls, eight concurrent calls after a restart, a server
//! that never answers, progress that keeps a long call alive, and a tool added at
//! run time.

use std::time::{Duration, Instant};

use adapter_mcp::{ConnectOptions, McpManager, MountOptions, RequestLimits, ServerConfig};
use engine_core::Catalog;
use engine_ports::ToolResult;
use futures::future::join_all;
use test_peers::PeerProcess;

use crate::support::capture::Capture;
use crate::support::{catalog_of, connect_all, http_config, run};

/// Longer than any answer these tests expect, shorter than the default request
/// timeout: a call that outlives it would have hung.
const NO_HANG: Duration = Duration::from_secs(45);

async fn within(what: &str, call: impl std::future::Future<Output = ToolResult>) -> ToolResult {
    tokio::time::timeout(NO_HANG, call)
        .await
        .unwrap_or_else(|_| panic!("{what} did not return within {NO_HANG:?}"))
}

async fn connect_with(config: ServerConfig, limits: RequestLimits) -> McpManager {
    let options = ConnectOptions {
        limits,
        ..ConnectOptions::default()
    };
    let connected = McpManager::connect(vec![config], options).await;
    assert!(connected.failures.is_empty(), "{:?}", connected.failures);
    connected.manager
}

/// Kills the peer by PID and starts `command` on the same port. The blocking work runs
/// off the runtime, which keeps serving the client's connections meanwhile (as the
/// runtime of `mecated` does): the client reads the old server's close.
async fn restart(mut peer: PeerProcess, mut command: std::process::Command) -> PeerProcess {
    tokio::task::spawn_blocking(move || {
        let port = peer.port();
        peer.stop();
        PeerProcess::start_on(port, &mut command).unwrap()
    })
    .await
    .unwrap()
}

async fn restart_everything(test: &str, peer: PeerProcess) -> PeerProcess {
    let command = test_peers::everything_command(test, test_peers::EVERYTHING, peer.port()).unwrap();
    restart(peer, command).await
}

async fn restart_live(test: &str, peer: PeerProcess) -> PeerProcess {
    let command = test_peers::live_server_command(test, peer.port()).unwrap();
    restart(peer, command).await
}

async fn ev_echo(catalog: &Catalog, message: &str) -> ToolResult {
    let args = format!(r#"{{"message":"{message}"}}"#);
    within("echo", run(catalog, "mcp__ev__echo", &args)).await
}

async fn live_echo(catalog: &Catalog, text: &str) -> ToolResult {
    let args = format!(r#"{{"text":"{text}"}}"#);
    within("echo", run(catalog, "mcp__live__echo", &args)).await
}

/// The text of a Python SDK result without the structured copy it appends.
fn first_line(result: &ToolResult) -> &str {
    result.content().lines().next().unwrap_or_default()
}

#[tokio::test]
async fn a_typescript_sdk_server_restarted_on_its_port_answers_the_next_call_after_one_reconnect() {
    const TEST: &str = "ts_restart";
    let Some(peer) = test_peers::everything_http(TEST, test_peers::EVERYTHING) else {
        return;
    };
    let capture = Capture::start();
    let manager = connect_all(vec![http_config("ev", &format!("{}/mcp", peer.base_url()))]).await;
    let catalog = catalog_of(&manager).await;
    let first = ev_echo(&catalog, "first").await;
    assert!(
        !first.is_error() && first.content().contains("first"),
        "{first:?}"
    );

    // The restarted server answers the old Mcp-Session-Id with HTTP 400 and a
    // JSON-RPC error without an id.
    let _restarted = restart_everything(TEST, peer).await;
    let second = ev_echo(&catalog, "second").await;
    assert!(!second.is_error(), "{second:?}");
    assert!(second.content().contains("second"), "{second:?}");
    assert_eq!(capture.reconnects(), (1, 1, 0));
    manager.close().await.unwrap();
}

#[tokio::test]
async fn a_python_sdk_server_restarted_on_its_port_answers_the_next_call_without_a_reconnect() {
    const TEST: &str = "py_restart";
    let Some(peer) = test_peers::live_server(TEST) else {
        return;
    };
    let capture = Capture::start();
    let manager = connect_all(vec![http_config("live", &format!("{}/mcp", peer.base_url()))]).await;
    // Under 2026-07-28 there is no session to lose: the restarted server simply
    // answers the next request (the TypeScript SDK tests above cover session loss).
    assert_eq!(manager.servers()[0].protocol, "2026-07-28");
    let catalog = catalog_of(&manager).await;
    assert_eq!(first_line(&live_echo(&catalog, "first").await), "echo:first");

    let _restarted = restart_live(TEST, peer).await;
    let second = live_echo(&catalog, "second").await;
    assert!(!second.is_error(), "{second:?}");
    assert_eq!(first_line(&second), "echo:second");
    assert_eq!(capture.reconnects(), (0, 0, 0));
    manager.close().await.unwrap();
}

#[tokio::test]
async fn eight_concurrent_calls_after_a_typescript_sdk_restart_share_one_dial() {
    const TEST: &str = "ts_restart_concurrent";
    let Some(peer) = test_peers::everything_http(TEST, test_peers::EVERYTHING) else {
        return;
    };
    let capture = Capture::start();
    let manager = connect_all(vec![http_config("ev", &format!("{}/mcp", peer.base_url()))]).await;
    let catalog = catalog_of(&manager).await;
    assert!(!ev_echo(&catalog, "warm").await.is_error());

    let _restarted = restart_everything(TEST, peer).await;
    let calls = (0..8).map(|i| {
        let catalog = &catalog;
        async move { (i, ev_echo(catalog, &format!("call-{i}")).await) }
    });
    for (i, result) in join_all(calls).await {
        assert!(!result.is_error(), "call {i}: {result:?}");
        assert!(
            result.content().contains(&format!("call-{i}")),
            "call {i}: {result:?}"
        );
    }
    assert_eq!(capture.reconnects(), (1, 1, 0));
    manager.close().await.unwrap();
}

#[tokio::test]
async fn a_call_the_server_never_answers_times_out_with_the_outcome_unknown_and_the_next_call_works() {
    const TEST: &str = "never_answers";
    let Some(peer) = test_peers::live_server(TEST) else {
        return;
    };
    let limits = RequestLimits {
        idle: Duration::from_secs(2),
        total: Duration::from_secs(20),
    };
    let manager = connect_with(http_config("live", &format!("{}/mcp", peer.base_url())), limits).await;
    let catalog = catalog_of(&manager).await;
    let started = Instant::now();
    let hung = within("hang", run(&catalog, "mcp__live__hang", "{}")).await;
    assert!(hung.is_error(), "{hung:?}");
    assert_eq!(
        hung.content(),
        "mcp call failed: MCP server \"live\" did not answer hang within 2 s; request outcome is unknown"
    );
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    // The session is still good: a timeout is not a drop.
    assert_eq!(first_line(&live_echo(&catalog, "after").await), "echo:after");
    manager.close().await.unwrap();
}

#[tokio::test]
async fn progress_notifications_keep_a_call_longer_than_the_timeout_alive() {
    const TEST: &str = "progress_alive";
    let Some(peer) = test_peers::live_server(TEST) else {
        return;
    };
    let limits = RequestLimits {
        idle: Duration::from_secs(2),
        total: Duration::from_secs(30),
    };
    let manager = connect_with(http_config("live", &format!("{}/mcp", peer.base_url())), limits).await;
    let catalog = catalog_of(&manager).await;
    // Progress every second for 5 s, each one restarting the 2 s wait.
    let ticked = within("tick", run(&catalog, "mcp__live__tick", r#"{"seconds":5}"#)).await;
    assert!(!ticked.is_error(), "{ticked:?}");
    assert_eq!(first_line(&ticked), "ticked 5");
    manager.close().await.unwrap();
}

#[tokio::test]
async fn the_longest_call_allowed_ends_a_call_even_while_it_reports_progress() {
    const TEST: &str = "max_call";
    let Some(peer) = test_peers::live_server(TEST) else {
        return;
    };
    let limits = RequestLimits {
        idle: Duration::from_secs(2),
        total: Duration::from_secs(3),
    };
    let manager = connect_with(http_config("live", &format!("{}/mcp", peer.base_url())), limits).await;
    let catalog = catalog_of(&manager).await;
    let ticked = within("tick", run(&catalog, "mcp__live__tick", r#"{"seconds":30}"#)).await;
    assert!(ticked.is_error(), "{ticked:?}");
    assert_eq!(
        ticked.content(),
        "mcp call failed: MCP server \"live\" did not answer tick within 3 s; request outcome is unknown"
    );
    manager.close().await.unwrap();
}

#[tokio::test]
async fn a_tool_the_server_adds_at_run_time_is_listed_and_callable_after_list_changed() {
    const TEST: &str = "list_changed_live";
    let Some(peer) = test_peers::live_server(TEST) else {
        return;
    };
    let manager = connect_all(vec![http_config("live", &format!("{}/mcp", peer.base_url()))]).await;
    let before = manager.tools_generation();
    let catalog = catalog_of(&manager).await;
    assert!(catalog.lookup("mcp__live__fresh").is_none());
    let grown = within("grow", run(&catalog, "mcp__live__grow", r#"{"name":"fresh"}"#)).await;
    assert_eq!(first_line(&grown), "added fresh");

    // The notification travels on the session's streams; wait for it to land.
    let deadline = Instant::now() + NO_HANG;
    loop {
        let names: Vec<String> = manager
            .tools(MountOptions::default())
            .await
            .iter()
            .map(|t| t.name().to_owned())
            .collect();
        if names.iter().any(|n| n == "mcp__live__fresh") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the new tool never appeared: {names:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(manager.tools_generation() > before);
    let refreshed = catalog_of(&manager).await;
    let fresh = within("fresh", run(&refreshed, "mcp__live__fresh", r#"{"text":"hi"}"#)).await;
    assert_eq!(first_line(&fresh), "fresh:hi");
    // A catalog built earlier is unchanged.
    assert!(catalog.lookup("mcp__live__fresh").is_none());
    manager.close().await.unwrap();
}
