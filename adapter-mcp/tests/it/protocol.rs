//! The current protocol revision (2026-07-28) against a real server that offers it
//! besides the older ones (the Python SDK's `elicit_server.py`): the client negotiates
//! it over streamable HTTP and stdio, lists, calls, and a question the server asks as
//! an `input_required` result reaches the user of the call that caused it (the call
//! is sent again with the answer) — also with two calls of one shared server waiting
//! for their users at once. A server from before 2026-07-28 gets `initialize`
//! (`elicitation.rs`, and the TypeScript SDK peers in `peers.rs`). An rmcp server
//! offering 2026-07-28 is called without `initialize` or a session.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use adapter_mcp::{McpManager, ServerConfig};
use engine_core::{Catalog, ElicitationResponse, Environment, ToolError};
use engine_ports::ToolCall;
use serde_json::json;
use tokio::sync::Barrier;
use tokio_util::sync::CancellationToken;

use crate::elicitation::{Scripted, ask, http};
use crate::support::capture::Capture;
use crate::support::fake::FakeState;
use crate::support::http::FixtureServer;
use crate::support::{catalog_of, connect_all, environment, http_config, run};

/// Lists and calls the server's tools and answers its question, as any revision must.
async fn lists_calls_and_asks(manager: &McpManager, catalog: &Catalog, env: &Environment) {
    let tools = manager.tools(adapter_mcp::MountOptions::default()).await;
    let mut names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    names.sort_unstable();
    assert_eq!(names, ["mcp__py__ask_name", "mcp__py__loose", "mcp__py__measure"]);

    let measured = run(catalog, "mcp__py__measure", r#"{"mode":"good"}"#).await;
    assert!(
        !measured.is_error() && measured.content().contains("measured good"),
        "{measured:?}"
    );

    let ada = Scripted::accepting(json!({"name": "Ada", "age": 36}));
    let result = ask(catalog, env, Arc::clone(&ada)).await;
    assert!(!result.is_error(), "{result:?}");
    assert!(result.content().contains("hello Ada, age 36"), "{result:?}");
    let asked = ada.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "asked once, answered in the call's second round");
    assert_eq!(asked[0].message, "What is your name?");
    assert_eq!(asked[0].requested_schema["required"], json!(["name"]));

    let declined = ask(catalog, env, Scripted::new(ElicitationResponse::decline())).await;
    assert!(declined.content().contains("declined"), "{declined:?}");
}

#[tokio::test]
async fn the_python_sdk_over_http_negotiates_2026_07_28_and_its_questions_reach_the_caller() {
    const TEST: &str = "the_python_sdk_over_http_negotiates_2026_07_28_and_its_questions_reach_the_caller";
    let Some(peer) = test_peers::elicit_server(TEST) else {
        return;
    };
    let manager = connect_all(vec![http(&peer)]).await;
    assert_eq!(manager.servers()[0].protocol, "2026-07-28");
    let catalog = catalog_of(&manager).await;
    let (env, _dir) = environment();
    lists_calls_and_asks(&manager, &catalog, &env).await;

    // Two calls of the one (shared) server at once, each with its own user: both
    // questions wait together (the barrier), and each answer reaches its own call.
    let barrier = Arc::new(Barrier::new(2));
    let user = |name: &str| {
        Arc::new(Scripted {
            barrier: Some(Arc::clone(&barrier)),
            ..Arc::into_inner(Scripted::accepting(json!({"name": name}))).unwrap()
        })
    };
    let (first, second) = tokio::time::timeout(
        Duration::from_secs(30),
        futures::future::join(ask(&catalog, &env, user("Ada")), ask(&catalog, &env, user("Bob"))),
    )
    .await
    .expect("each question reached its own call");
    assert!(first.content().contains("hello Ada"), "{first:?}");
    assert!(second.content().contains("hello Bob"), "{second:?}");
    manager.close().await.unwrap();
}

#[tokio::test]
async fn the_python_sdk_over_stdio_negotiates_2026_07_28_and_its_questions_reach_the_caller() {
    const TEST: &str = "the_python_sdk_over_stdio_negotiates_2026_07_28_and_its_questions_reach_the_caller";
    let Some((python, args)) = test_peers::elicit_server_stdio(TEST, false) else {
        return;
    };
    let workspace = tempfile::tempdir().unwrap();
    // A Python server can take longer than the 10 s negotiation probe to start on a
    // loaded machine (it is then started again: see `session/dial.rs`).
    let config = ServerConfig::stdio("py", python.display().to_string(), args, workspace.path())
        .with_connect_timeout(Duration::from_secs(60));
    let manager = connect_all(vec![config]).await;
    assert_eq!(manager.servers()[0].protocol, "2026-07-28");
    let catalog = catalog_of(&manager).await;
    let (env, _dir) = environment();
    lists_calls_and_asks(&manager, &catalog, &env).await;

    // Without an elicitor (a call outside the engine), the question is declined.
    let tool = catalog.lookup("mcp__py__ask_name").unwrap();
    let bare = tool
        .execute(
            &CancellationToken::new(),
            &ToolCall::new("c2", "mcp__py__ask_name", "{}"),
            &env,
        )
        .await
        .unwrap();
    assert!(bare.content().contains("declined"), "{bare:?}");

    // A call cancelled while its user is being asked ends as cancelled at once.
    let cancel = CancellationToken::new();
    let asked = Arc::new(Barrier::new(2));
    let slow = Arc::new(Scripted {
        barrier: Some(Arc::clone(&asked)),
        delay: Duration::from_secs(600),
        ..Arc::into_inner(Scripted::accepting(json!({"name": "Ada"}))).unwrap()
    });
    let env_asking = env.with_elicitor(slow);
    let call = ToolCall::new("c3", "mcp__py__ask_name", "{}");
    let canceller = cancel.clone();
    let (outcome, ()) = tokio::time::timeout(Duration::from_secs(30), async {
        tokio::join!(tool.execute(&cancel, &call, &env_asking), async move {
            asked.wait().await;
            canceller.cancel();
        })
    })
    .await
    .expect("the cancelled call ended without waiting for its user");
    assert!(matches!(outcome, Err(ToolError::Cancelled)), "{outcome:?}");
    manager.close().await.unwrap();
}

#[tokio::test]
async fn a_server_that_discovers_only_older_revisions_is_initialized_at_2025_11_25() {
    let state = FakeState::new();
    state.discovers_older_only.store(true, Ordering::SeqCst);
    let server = FixtureServer::start(state).await;
    let manager = connect_all(vec![http_config("fake", &server.url())]).await;
    assert_eq!(manager.servers()[0].protocol, "2025-11-25");
    let catalog = catalog_of(&manager).await;
    assert_eq!(
        run(&catalog, "mcp__fake__echo", r#"{"text":"hi"}"#)
            .await
            .content(),
        "echo:hi"
    );
    let methods = server.faults.methods();
    assert_eq!(
        methods.first().map(String::as_str),
        Some("server/discover"),
        "{methods:?}"
    );
    assert!(server.faults.saw("initialize"), "{methods:?}");
    manager.close().await.unwrap();
}

#[tokio::test]
async fn an_rmcp_server_offering_2026_07_28_is_called_without_initialize_or_a_session() {
    let capture = Capture::start();
    let state = FakeState::new();
    state.modern.store(true, Ordering::SeqCst);
    let mut server = FixtureServer::start(state).await;
    let manager = connect_all(vec![http_config("fake", &server.url())]).await;
    assert_eq!(manager.servers()[0].protocol, "2026-07-28");
    let catalog = catalog_of(&manager).await;
    assert_eq!(
        run(&catalog, "mcp__fake__echo", r#"{"text":"first"}"#)
            .await
            .content(),
        "echo:first"
    );
    let methods = server.faults.methods();
    assert_eq!(
        methods.first().map(String::as_str),
        Some("server/discover"),
        "{methods:?}"
    );
    assert!(!server.faults.saw("initialize"), "{methods:?}");

    // A restarted server has no session to lose: the next call simply goes through.
    server.restart().await;
    let second = run(&catalog, "mcp__fake__echo", r#"{"text":"second"}"#).await;
    assert_eq!(second.content(), "echo:second", "{second:?}");
    assert_eq!(capture.reconnects(), (0, 0, 0));
    manager.close().await.unwrap();
}
