//! A real server's questions during a tool call, as servers from before 2026-07-28 ask
//! them (the Python SDK's `elicit_server.py --legacy`, form elicitation: a request
//! sent during the call): the client advertises form elicitation, a question reaches
//! the elicitor of the call that caused it — over streamable HTTP by the response
//! stream it came on, even with several calls of one shared server in flight; over
//! stdio when one call is in flight — and the answer goes back to the server. A
//! question waiting for its user does not count against the request's idle time.
//! (`protocol.rs` has the same questions under 2026-07-28.)

use std::sync::{Arc, Mutex};
use std::time::Duration;

use adapter_mcp::{ConnectOptions, McpManager, RequestLimits, ServerConfig};
use async_trait::async_trait;
use engine_core::{Catalog, ElicitationRequest, ElicitationResponse, Elicitor, Environment};
use engine_ports::{ToolCall, ToolResult};
use serde_json::{Value, json};
use tokio::sync::Barrier;
use tokio_util::sync::CancellationToken;

use crate::support::{catalog_of, connect_all, environment, http_config};

/// Answers every question with `answer` (after the barrier, when given) and keeps
/// what it was asked.
pub struct Scripted {
    pub answer: ElicitationResponse,
    pub barrier: Option<Arc<Barrier>>,
    pub delay: Duration,
    pub asked: Mutex<Vec<ElicitationRequest>>,
}

impl Scripted {
    pub fn new(answer: ElicitationResponse) -> Arc<Self> {
        Arc::new(Self {
            answer,
            barrier: None,
            delay: Duration::ZERO,
            asked: Mutex::default(),
        })
    }

    pub fn accepting(content: Value) -> Arc<Self> {
        Self::new(ElicitationResponse::accept(content.as_object().unwrap().clone()))
    }
}

#[async_trait]
impl Elicitor for Scripted {
    async fn elicit(&self, request: ElicitationRequest, _cancel: &CancellationToken) -> ElicitationResponse {
        self.asked.lock().unwrap().push(request);
        if let Some(barrier) = &self.barrier {
            barrier.wait().await;
        }
        if !self.delay.is_zero() {
            // The user takes their time: longer than the request's idle limit.
            tokio::time::sleep(self.delay).await;
        }
        self.answer.clone()
    }
}

pub async fn ask(catalog: &Catalog, env: &Environment, elicitor: Arc<Scripted>) -> ToolResult {
    let tool = catalog.lookup("mcp__py__ask_name").unwrap();
    let env = env.with_elicitor(elicitor);
    let call = ToolCall::new("c1", "mcp__py__ask_name", "{}");
    tool.execute(&CancellationToken::new(), &call, &env)
        .await
        .unwrap()
}

pub fn http(peer: &test_peers::PeerProcess) -> ServerConfig {
    http_config("py", &format!("{}/mcp", peer.base_url()))
}

#[tokio::test]
async fn a_question_over_http_reaches_the_call_that_caused_it_and_the_answer_the_server() {
    const TEST: &str = "a_question_over_http_reaches_the_call_that_caused_it_and_the_answer_the_server";
    let Some(peer) = test_peers::elicit_server_legacy(TEST) else {
        return;
    };
    let manager = connect_all(vec![http(&peer)]).await;
    assert_eq!(
        manager.servers()[0].protocol,
        "2025-11-25",
        "the server predates 2026-07-28"
    );
    let catalog = catalog_of(&manager).await;
    let (env, _dir) = environment();

    let ada = Scripted::accepting(json!({"name": "Ada", "age": 36}));
    let result = ask(&catalog, &env, Arc::clone(&ada)).await;
    assert!(!result.is_error(), "{result:?}");
    assert!(result.content().contains("hello Ada, age 36"), "{result:?}");
    let asked = ada.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].message, "What is your name?");
    assert_eq!(asked[0].requested_schema["type"], "object");
    assert_eq!(asked[0].requested_schema["required"], json!(["name"]));
    assert_eq!(asked[0].requested_schema["properties"]["age"]["type"], "integer");

    let declined = ask(&catalog, &env, Scripted::new(ElicitationResponse::decline())).await;
    assert!(declined.content().contains("declined"), "{declined:?}");
    let cancelled = ask(&catalog, &env, Scripted::new(ElicitationResponse::cancel())).await;
    assert!(cancelled.content().contains("cancelled"), "{cancelled:?}");

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
async fn a_question_waiting_for_its_user_does_not_use_up_the_idle_time() {
    const TEST: &str = "a_question_waiting_for_its_user_does_not_use_up_the_idle_time";
    let Some(peer) = test_peers::elicit_server_legacy(TEST) else {
        return;
    };
    let options = ConnectOptions {
        limits: RequestLimits {
            idle: Duration::from_millis(500),
            total: Duration::from_secs(30),
        },
        ..ConnectOptions::default()
    };
    let connected = McpManager::connect(vec![http(&peer)], options).await;
    assert!(connected.failures.is_empty(), "{:?}", connected.failures);
    let manager = connected.manager;
    let catalog = catalog_of(&manager).await;
    let (env, _dir) = environment();
    let slow = Arc::new(Scripted {
        delay: Duration::from_millis(1_500),
        ..Arc::into_inner(Scripted::accepting(json!({"name": "Ada"}))).unwrap()
    });
    let result = ask(&catalog, &env, slow).await;
    assert!(result.content().contains("hello Ada"), "{result:?}");
    manager.close().await.unwrap();
}

#[tokio::test]
async fn a_question_over_stdio_reaches_the_one_call_in_flight() {
    const TEST: &str = "a_question_over_stdio_reaches_the_one_call_in_flight";
    let Some((python, args)) = test_peers::elicit_server_stdio(TEST, true) else {
        return;
    };
    let workspace = tempfile::tempdir().unwrap();
    // A Python server can take longer than the 10 s negotiation probe to start on a
    // loaded machine (it is then started again: see `session/dial.rs`).
    let config = ServerConfig::stdio("py", python.display().to_string(), args, workspace.path())
        .with_connect_timeout(Duration::from_secs(60));
    let manager = connect_all(vec![config]).await;
    assert_eq!(
        manager.servers()[0].protocol,
        "2025-11-25",
        "the server predates 2026-07-28"
    );
    let catalog = catalog_of(&manager).await;
    let (env, _dir) = environment();
    let result = ask(&catalog, &env, Scripted::accepting(json!({"name": "Ada"}))).await;
    assert!(result.content().contains("hello Ada"), "{result:?}");

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
    manager.close().await.unwrap();
}
