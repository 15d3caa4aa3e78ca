//! `core_tools`: the set, read-only flags, specs, and a call through the dispatcher.

use std::sync::Arc;

use adapter_fstools::{CoreToolsOptions, core_tools};
use engine_core::{Approve, Catalog, DefaultPolicy, Dispatcher, TurnContext};
use engine_ports::{PermissionMode, SessionId, ToolCall};

use crate::support::Ws;

fn catalog(options: &CoreToolsOptions) -> Catalog {
    let mut catalog = Catalog::new();
    for tool in core_tools(options) {
        catalog.register(tool).unwrap();
    }
    catalog
}

#[test]
fn all_seven_tools_or_six_without_shell() {
    let names = |c: &Catalog| c.names().map(ToString::to_string).collect::<Vec<_>>();
    assert_eq!(
        names(&catalog(&CoreToolsOptions::default())),
        ["Edit", "Glob", "Grep", "ListDir", "Read", "Shell", "Write"]
    );
    assert_eq!(
        names(&catalog(&CoreToolsOptions::new().with_shell(false))),
        ["Edit", "Glob", "Grep", "ListDir", "Read", "Write"]
    );
}

#[test]
fn read_only_flags_follow_the_table() {
    for tool in core_tools(&CoreToolsOptions::default()) {
        let name = tool.spec().name().to_owned();
        let expected = matches!(name.as_str(), "Read" | "Glob" | "Grep" | "ListDir");
        assert_eq!(tool.read_only(), expected, "{name}");
    }
    let plan = catalog(&CoreToolsOptions::default());
    let available: Vec<String> = plan
        .available(PermissionMode::Plan)
        .iter()
        .map(|t| t.spec().name().to_owned())
        .collect();
    assert_eq!(available, ["Glob", "Grep", "ListDir", "Read"]);
}

#[test]
fn specs_describe_the_workspace_and_require_their_arguments() {
    let required = |name: &str| -> &[&str] {
        match name {
            "Read" => &["path"],
            "Write" => &["path", "content"],
            "Edit" => &["path", "old_string", "new_string"],
            "Glob" | "Grep" => &["pattern"],
            "Shell" => &["command"],
            _ => &[],
        }
    };
    for tool in core_tools(&CoreToolsOptions::default()) {
        let spec = tool.spec();
        let schema = spec.schema().expect("every core tool has a schema");
        assert_eq!(schema["type"], "object", "{}", spec.name());
        let listed: Vec<&str> = schema["required"]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
            .unwrap_or_default();
        assert_eq!(listed, required(spec.name()), "{}", spec.name());
        for field in &listed {
            assert!(schema["properties"][field].is_object(), "{} {field}", spec.name());
        }
        assert!(
            spec.description().len() > 100,
            "{} has a real description",
            spec.name()
        );
        if spec.name() != "Shell" {
            assert!(spec.description().contains("workspace root"), "{}", spec.name());
        }
    }
}

#[tokio::test]
async fn a_read_dispatched_through_the_engine_gets_its_result() {
    let ws = Ws::new();
    ws.file("README.md", "# Demo\n");
    let ctx = TurnContext::new(
        SessionId::from("s1"),
        PermissionMode::Default,
        Arc::new(catalog(&CoreToolsOptions::default())),
        ws.env.clone(),
        Arc::new(DefaultPolicy::new(false, Approve::ReadOnly)),
    );
    let outcome = Dispatcher::default()
        .dispatch(
            &ctx,
            &[
                ToolCall::new("r1", "Read", r#"{"path":"README.md"}"#),
                ToolCall::new("r2", "Read", r#"{"path":"missing.md"}"#),
            ],
        )
        .await;
    assert_eq!(outcome.results[0].content(), "1\t# Demo");
    assert!(!outcome.results[0].is_error());
    assert!(outcome.results[1].is_error());
    assert!(outcome.results[1].content().contains("\"missing.md\""));
}

/// The core tools as the model sees them (name, description, mutating or not, JSON
/// Schema): any change to this contract shows as a reviewed snapshot diff.
#[test]
fn core_tool_specs_are_the_reviewed_model_contract() {
    let specs: Vec<serde_json::Value> = core_tools(&CoreToolsOptions::default())
        .iter()
        .map(|tool| {
            let spec = tool.spec();
            serde_json::json!({
                "name": spec.name(),
                "read_only": tool.read_only(),
                "description": spec.description(),
                "schema": spec.schema(),
            })
        })
        .collect();
    insta::assert_json_snapshot!("core_tool_specs", specs);
}
