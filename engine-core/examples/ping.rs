//! The seed example: a `Ping` tool registered in a catalog and called through the
//! engine by a scripted model. Run it with `cargo run -p engine-core --example ping`;
//! `cargo test` runs its checks too.

// An example prints what it does.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::sync::Arc;

use async_trait::async_trait;
use engine_core::{Catalog, Deps, Engine, Environment, Tool, ToolError};
use engine_ports::testkit::{ScriptedLlm, ScriptedTurn};
use engine_ports::{CancellationToken, Event, SessionId, ToolCall, ToolResult, ToolSpec};
use futures::StreamExt as _;

/// Returns a pong; proves the catalog is reachable.
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

/// Builds the catalog and the engine, runs one scripted session and returns its events.
async fn ping_session() -> Vec<Event> {
    let mut catalog = Catalog::new();
    catalog.must_register(Arc::new(PingTool));
    let llm = Arc::new(ScriptedLlm::new([
        ScriptedTurn::text("checking the catalog")
            .with_call("p1", "Ping", "{}")
            .with_call("p2", "Ping", ""),
        ScriptedTurn::text("the catalog answered"),
    ]));
    let environment = Environment::new(std::env::temp_dir()).unwrap();
    let engine = Engine::new(Deps::new(llm, Arc::new(catalog), environment)).unwrap();
    engine
        .run(&SessionId::from("ping"), "is the catalog there?")
        .unwrap()
        .collect()
        .await
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    for event in ping_session().await {
        println!("{}", serde_json::to_string(&event).unwrap());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine_core::CatalogError;
    use engine_ports::{EventKind, PermissionMode};

    #[tokio::test]
    async fn ping_answers_pong_for_empty_and_object_args() {
        let events = ping_session().await;
        let results: Vec<(String, String, bool)> = events
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
        assert_eq!(
            results,
            [
                ("p1".to_owned(), "pong".to_owned(), false),
                ("p2".to_owned(), "pong".to_owned(), false)
            ]
        );
    }

    #[test]
    fn ping_is_read_only_and_registers_once() {
        let mut catalog = Catalog::new();
        catalog.must_register(Arc::new(PingTool));
        assert_eq!(catalog.available_names(PermissionMode::Plan), ["Ping"]);
        assert_eq!(
            catalog.register(Arc::new(PingTool)),
            Err(CatalogError::Duplicate("Ping".to_owned()))
        );
    }
}
