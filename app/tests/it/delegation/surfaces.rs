//! Delegation on the hosts' surfaces: ACP shows a child's activity as updates of the
//! delegating call; the HTTP API streams the delegation events and cancels a child.

use adapter_llm::{MockScript, MockTurn};
use agent_client_protocol::v1::schema::StopReason as AcpStop;
use app::ModelConfig;
use engine_ports::ToolCall;
use reqwest::StatusCode;
use serde_json::json;

use crate::support::acp_client::AcpClient;
use crate::support::http::TestServer;
use crate::support::{Scratch, config};

const DELEGATE: &str = r#"{
  "turns": [
    {"tool_calls": [{"id": "c1", "name": "Subagent", "args": {"prompt": "LOOK-AROUND the readme"}}]},
    {"text": "done"}
  ],
  "children": [{"match": "LOOK-AROUND", "turns": [
    {"tool_calls": [{"id": "k1", "name": "Read", "args": {"path": "README.md"}}]},
    {"text": "it is a heading"}
  ]}]
}"#;

#[tokio::test]
async fn acp_shows_a_childs_activity_as_updates_of_the_delegating_call() {
    let scratch = Scratch::new();
    let script = scratch.write("script.json", DELEGATE);
    let args: Vec<String> = [
        "--workspace",
        &scratch.ws().display().to_string(),
        "--mock-script",
        &script.display().to_string(),
        "--toolhive=false",
    ]
    .map(str::to_owned)
    .to_vec();
    let mut client = AcpClient::start(scratch.dir.path(), &args, &[]).await;
    let ws = std::fs::canonicalize(scratch.ws()).unwrap();
    let session = client.session(&ws, Vec::new()).await;
    let response = client.prompt(&session, "look").await.unwrap();
    assert_eq!(response.stop_reason, AcpStop::EndTurn);
    let updates = client.updates_of(&session);
    let of_call: Vec<(String, String)> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call_update" && u["toolCallId"] == "c1")
        .map(|u| {
            (
                u["status"].as_str().unwrap_or_default().to_owned(),
                u["content"][0]["content"]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect();
    let child = format!("subagent-{session}-c1");
    assert_eq!(
        of_call,
        [
            ("in_progress".to_owned(), format!("{child}: started")),
            (
                "in_progress".to_owned(),
                format!("{child}: Read {{\"path\":\"README.md\"}}")
            ),
            ("in_progress".to_owned(), format!("{child}: ended (end_turn)")),
            (
                "completed".to_owned(),
                format!("agentId: {child}\n\nit is a heading")
            ),
        ]
    );
    let _ = client.finish().await;
}

#[tokio::test]
async fn http_streams_delegation_events_and_cancels_a_running_child_by_id() {
    let scratch = Scratch::new();
    let mut cfg = config(&scratch);
    cfg.model = ModelConfig::MockScript(
        MockScript::new([
            MockTurn::text("").with_call(ToolCall::new("c1", "Subagent", r#"{"prompt":"SLOW-CHILD wait"}"#)),
            MockTurn::text("done"),
        ])
        .with_child(
            "SLOW-CHILD",
            [MockTurn::text("late").with_delay(std::time::Duration::from_secs(30))],
        ),
    );
    let server = TestServer::start(cfg).await;
    let id = server.create(json!({})).await;
    let cancel = format!("/v1/sessions/{id}/cancel-child");
    let idle = server.post(&cancel, json!({"child_id": "anything"})).await;
    assert_eq!(idle.status, StatusCode::CONFLICT, "{idle:?}");
    let mut stream = server.prompt(&id, "go").await;
    let before = stream.until("subagent.start").await;
    let child = before.last().unwrap().1["child_id"].as_str().unwrap().to_owned();
    assert_eq!(child, format!("subagent-{id}-c1"));
    let unknown = server.post(&cancel, json!({"child_id": "subagent-nope"})).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND, "{unknown:?}");
    assert!(unknown.error().contains("subagent-nope"), "{unknown:?}");
    let bad = server.post(&cancel, json!({"child": child})).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{bad:?}");
    let ok = server.post(&cancel, json!({"child_id": child})).await;
    assert_eq!(ok.status, StatusCode::NO_CONTENT, "{ok:?}");
    let rest = stream.rest().await;
    let end = rest.iter().find(|(_, e)| e["type"] == "subagent.end").unwrap();
    assert_eq!(end.1["stop"], "cancelled");
    let result = rest.iter().find(|(_, e)| e["type"] == "tool.result").unwrap();
    assert_eq!(
        result.1["content"],
        format!("agentId: {child}\n\n[stopped: cancelled]\n(no summary — resume it with agentId {child})")
    );
    assert_eq!(rest.last().unwrap().1["stop"], "end_turn");
    server.stop().await;
}
