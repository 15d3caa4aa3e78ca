//! Embedding `app`: a harness with the full `mecated` catalog plus one tool of the
//! embedder's own (`Ping`), run on a scripted mock model. Run it with
//! `cargo run -p app --example embed_ping`; `cargo test -p app` runs its checks too.
//!
//! The embedder never touches a `Catalog`: it hands its tools to
//! [`AppConfig::extra_tools`] and `app::build` registers them with every other family,
//! in every session's catalog (family `core`, first wins).

// An example prints what it does.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use adapter_llm::{MockScript, MockTurn};
use app::{AppConfig, Built, ExtraTools, ModelConfig, build};
use async_trait::async_trait;
use engine_core::{Environment, Tool, ToolError};
use engine_ports::{CancellationToken, Event, SessionId, ToolCall, ToolResult, ToolSpec};
use futures::StreamExt as _;

/// Returns a pong; proves an embedder's tool reaches the model.
pub struct PingTool;

#[async_trait]
impl Tool for PingTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "Ping",
            "Returns a pong. Use this to verify the tool catalog is reachable. Takes no arguments.",
        )
        .with_schema(serde_json::json!({"type": "object", "properties": {}}))
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn execute(
        &self,
        _cancel: &CancellationToken,
        call: &ToolCall,
        _env: &Environment,
    ) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::text(call.id().clone(), "pong"))
    }
}

/// The harness: `mecated`'s defaults in `workspace`, the mock model calling `Ping`
/// once, and the embedder's `Ping` tool.
async fn harness(workspace: &std::path::Path) -> Built {
    let mut config = AppConfig::new(workspace);
    config.model = ModelConfig::MockScript(MockScript::new([
        MockTurn::text("checking the catalog").with_call(ToolCall::new("p1", "Ping", "{}")),
        MockTurn::text("the catalog answered"),
    ]));
    config.extra_tools = ExtraTools::new().with(Arc::new(PingTool));
    build(config).await.expect("the harness builds")
}

/// Runs one prompt on the harness's shared engine and returns its events.
async fn ping_session(built: &Built) -> Vec<Event> {
    built
        .shared_engine()
        .run(&SessionId::from("embed-ping"), "is the catalog there?")
        .unwrap()
        .collect()
        .await
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let workspace = std::env::temp_dir();
    let built = harness(&workspace).await;
    for event in ping_session(&built).await {
        println!("{}", serde_json::to_string(&event).unwrap());
    }
    built.close().await.unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;
    use app::{Family, SessionRequest};
    use engine_ports::{EventKind, PermissionMode};

    fn workspace() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[tokio::test]
    async fn the_mock_model_calls_the_embedders_ping_and_gets_pong() {
        let dir = workspace();
        let built = harness(dir.path()).await;
        let results: Vec<(String, String, bool)> = ping_session(&built)
            .await
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::ToolResult {
                    call_id,
                    content,
                    is_error,
                    ..
                } => Some((call_id.to_string(), content.clone(), *is_error)),
                _ => None,
            })
            .collect();
        assert_eq!(results, [("p1".to_owned(), "pong".to_owned(), false)]);
        built.close().await.unwrap();
    }

    #[tokio::test]
    async fn ping_is_a_core_tool_of_every_session_catalog() {
        let dir = workspace();
        let built = harness(dir.path()).await;
        let listed = built.tools(PermissionMode::Plan);
        let ping = listed.iter().find(|t| t.name == "Ping").expect("Ping is listed");
        assert_eq!(ping.family, Family::Core);
        let session = built
            .factory()
            .create_private(SessionRequest::default())
            .await
            .unwrap();
        assert!(session.engine().catalog().lookup("Ping").is_some());
        session.close().await.unwrap();
        built.close().await.unwrap();
    }
}
