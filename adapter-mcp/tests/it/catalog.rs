//! Registration, the provider surface, resource meta-tools and the
//! prompt expander.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use adapter_mcp::{McpError, McpManager, MountOptions, prompt_expander, resource_tools};
use async_trait::async_trait;
use engine_core::{Catalog, Environment, OutputCap, Tool, ToolError};
use engine_ports::{
    CancellationToken, CommandExpander as _, Expansion, PermissionMode, ToolCall, ToolResult, ToolSpec,
};

use crate::support::capture::Capture;
use crate::support::fake::{FakeResource, FakeState};
use crate::support::http::FixtureServer;
use crate::support::{catalog_of, catalog_with, connect_all, http_config, run};

struct Named(&'static str, &'static str);

#[async_trait]
impl Tool for Named {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(self.0, self.1)
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn execute(
        &self,
        _: &CancellationToken,
        call: &ToolCall,
        _: &Environment,
    ) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::text(call.id().clone(), self.1))
    }
}

#[tokio::test]
async fn core_tools_keep_their_names() {
    let server = FixtureServer::start(FakeState::new()).await;
    let manager = connect_all(vec![http_config("fake", &server.url())]).await;
    let mut catalog = Catalog::new();
    let read: Arc<dyn Tool> = Arc::new(Named("Read", "the core Read"));
    catalog.must_register(Arc::clone(&read));
    let snapshot = manager.tool_snapshot(MountOptions::default());
    for tool in snapshot.catalog_tools() {
        catalog
            .register(tool)
            .expect("MCP tool names never take a core tool's name");
    }
    assert!(Arc::ptr_eq(catalog.lookup("Read").unwrap(), &read));
    assert_eq!(catalog.len(), 4);
}

async fn two_resource_servers() -> (FixtureServer, FixtureServer, McpManager) {
    let a = FixtureServer::start(FakeState::new().with_resources(vec![
        FakeResource::text("test://text", "text", "hello resource"),
        FakeResource::blob("test://binary", "binary", "image/png", &[1, 2, 3, 4]),
    ]))
    .await;
    let b = FixtureServer::start(FakeState::new().with_resources(vec![
        FakeResource::text("test://b1", "b1", "bee one"),
        FakeResource::text("test://b2", "b2", "bee two"),
    ]))
    .await;
    let manager = connect_all(vec![http_config("a", &a.url()), http_config("b", &b.url())]).await;
    (a, b, manager)
}

#[tokio::test]
async fn resources_are_listed_per_server() {
    let (_a, _b, manager) = two_resource_servers().await;
    let of_a = manager.list_resources(Some("a")).await.unwrap();
    assert_eq!(of_a.len(), 2);
    assert!(of_a.iter().all(|r| r.server == "a" && r.read_only));
    assert_eq!(manager.list_resources(None).await.unwrap().len(), 4);
    let error = manager.list_resources(Some("nope")).await.unwrap_err();
    assert!(error.is_invalid_argument());
    assert!(matches!(&error, McpError::UnknownServer { server } if server == "nope"));
    let text = error.to_string();
    assert!(text.contains("\"nope\"") && text.contains("unknown"), "{text}");
}

#[tokio::test]
async fn resources_are_read_live() {
    let (_a, _b, manager) = two_resource_servers().await;
    let cancel = CancellationToken::new();
    let chunks = manager.read_resource("a", "test://text", &cancel).await.unwrap();
    assert_eq!(chunks.len(), 1);
    let tools = resource_tools(true, Some(&manager));
    let catalog = catalog_with(tools.tools);
    let text = run(
        &catalog,
        "ReadMcpResource",
        r#"{"server":"a","uri":"test://text"}"#,
    )
    .await;
    assert_eq!(text.content(), "hello resource");
    let binary = run(
        &catalog,
        "ReadMcpResource",
        r#"{"server":"a","uri":"test://binary"}"#,
    )
    .await;
    assert!(!binary.is_error());
    assert!(
        binary.content().contains("image/png") && binary.content().contains("4 bytes"),
        "{binary:?}"
    );
    assert!(!binary.content().contains("AQIDBA"), "{binary:?}");
    let unknown = manager
        .read_resource("a", "test://nope", &cancel)
        .await
        .unwrap_err();
    assert!(
        unknown.to_string().starts_with("mcp resource read failed"),
        "{unknown}"
    );
    let unknown = run(
        &catalog,
        "ReadMcpResource",
        r#"{"server":"a","uri":"test://nope"}"#,
    )
    .await;
    assert!(
        unknown.is_error() && unknown.content().contains("test://nope"),
        "{unknown:?}"
    );
}

#[tokio::test]
async fn meta_tools_exist_only_with_resources() {
    let capture = Capture::start();
    let plain = FixtureServer::start(FakeState::new()).await;
    let without = connect_all(vec![http_config("plain", &plain.url())]).await;
    let none = resource_tools(true, Some(&without));
    assert!(none.tools.is_empty());
    assert!(none.diagnostics.entries()[0].message.contains("disabled"));
    assert!(resource_tools(true, None).tools.is_empty());

    let a = FixtureServer::start(FakeState::new().with_resources(vec![
        FakeResource::text("test://a1", "a1", "one"),
        FakeResource::text("test://x", "x", "exactly the body"),
    ]))
    .await;
    let b = FixtureServer::start(FakeState::new().with_resources(vec![FakeResource::text(
        "test://b1",
        "b1",
        "bee",
    )]))
    .await;
    let manager = connect_all(vec![http_config("a", &a.url()), http_config("b", &b.url())]).await;
    let off = resource_tools(false, Some(&manager));
    assert!(off.tools.is_empty() && off.diagnostics.entries()[0].message.contains("disabled"));
    capture.clear();
    let on = resource_tools(true, Some(&manager));
    assert_eq!(capture.infos_with("enabled").len(), 1);
    let names: Vec<String> = on.tools.iter().map(|t| t.spec().name().to_owned()).collect();
    assert_eq!(names, ["ListMcpResources", "ReadMcpResource"]);
    let catalog = catalog_with(on.tools);
    assert_eq!(
        catalog.available_names(PermissionMode::Plan),
        ["ListMcpResources", "ReadMcpResource"]
    );

    let listed = run(&catalog, "ListMcpResources", r#"{"server":"a"}"#).await;
    assert!(
        listed.content().contains("- [a] test://a1 (a1) [text/plain]"),
        "{listed:?}"
    );
    assert!(!listed.content().contains("test://b1"));
    let all = run(&catalog, "ListMcpResources", "{}").await;
    assert!(all.content().contains("test://b1") && all.content().contains("test://x"));
    let unknown = run(&catalog, "ListMcpResources", r#"{"server":"nope"}"#).await;
    assert!(unknown.is_error() && unknown.content().contains("\"nope\""));

    let body = run(&catalog, "ReadMcpResource", r#"{"server":"a","uri":"test://x"}"#).await;
    assert_eq!(body.content(), "exactly the body");
    let no_uri = run(&catalog, "ReadMcpResource", r#"{"server":"a"}"#).await;
    assert!(no_uri.is_error() && no_uri.content().contains("uri"));
    let blank = run(&catalog, "ReadMcpResource", r#"{"server":"a","uri":"  "}"#).await;
    assert!(blank.is_error());
    let typed_wrong = run(&catalog, "ReadMcpResource", r#"{"uri":5}"#).await;
    assert!(typed_wrong.is_error() && typed_wrong.content().contains("invalid arguments"));
    // `server` is optional: the URI is looked up across the global servers.
    let found = run(&catalog, "ReadMcpResource", r#"{"uri":"test://b1"}"#).await;
    assert_eq!(found.content(), "bee");
    let missing = run(&catalog, "ReadMcpResource", r#"{"uri":"test://zz"}"#).await;
    assert!(missing.is_error());
    assert!(missing.content().contains("a, b"), "{missing:?}");
}

#[tokio::test]
async fn ambiguous_uris_name_the_candidates() {
    let a = FixtureServer::start(FakeState::new().with_resources(vec![FakeResource::text(
        "test://same",
        "s",
        "A",
    )]))
    .await;
    let b = FixtureServer::start(FakeState::new().with_resources(vec![FakeResource::text(
        "test://same",
        "s",
        "B",
    )]))
    .await;
    let manager = connect_all(vec![http_config("a", &a.url()), http_config("b", &b.url())]).await;
    let catalog = catalog_with(resource_tools(true, Some(&manager)).tools);
    let result = run(&catalog, "ReadMcpResource", r#"{"uri":"test://same"}"#).await;
    assert!(result.is_error());
    assert!(
        result.content().contains("a, b") && result.content().contains("several"),
        "{result:?}"
    );
}

#[tokio::test]
async fn prompts_expand_live_and_failures_pass_through() {
    let capture = Capture::start();
    let state = FakeState::new();
    state.prompts.store(true, Ordering::SeqCst);
    let server = FixtureServer::start(state).await;
    let manager = connect_all(vec![http_config("srv", &server.url())]).await;
    let (expander, diagnostics) = prompt_expander(true, Some(&manager), OutputCap::default());
    let expander = expander.expect("prompts exist");
    assert!(diagnostics.entries()[0].message.contains("enabled"));

    let Expansion::Expanded(text) = expander.expand("/mcp__srv__greet who=Ada").await.unwrap() else {
        panic!("not expanded")
    };
    assert!(text.contains("user: Hello Ada"), "{text}");
    let Expansion::Expanded(two) = expander.expand("/mcp__srv__two").await.unwrap() else {
        panic!()
    };
    assert_eq!(two, "user: first\n\nassistant: second");
    let Expansion::Expanded(nested) = expander.expand("/mcp__srv__a__b").await.unwrap() else {
        panic!()
    };
    assert_eq!(nested, "user: ab");

    capture.clear();
    for input in ["/mcp__srv__missing", "/mcp__srv__greet", "/mcp__nope__greet x=1"] {
        assert_eq!(
            expander.expand(input).await.unwrap(),
            Expansion::NotExpanded,
            "{input}"
        );
    }
    assert_eq!(
        expander.expand("plain text").await.unwrap(),
        Expansion::NotExpanded
    );
    let warns = capture.ours(tracing::Level::WARN);
    assert_eq!(warns.len(), 3, "{warns:?}");
    assert!(warns[1].message.contains("greet") && warns[1].field("server") == Some("srv"));
    // Argument names are logged, values never.
    assert!(!capture.events().iter().any(|e| e.message.contains("x=1")));

    let palette = expander.list().await.unwrap();
    let names: Vec<&str> = palette.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["mcp__srv__greet", "mcp__srv__two", "mcp__srv__a__b"]);

    let (off, _) = prompt_expander(false, Some(&manager), OutputCap::default());
    assert!(off.is_none());
    let plain = FixtureServer::start(FakeState::new()).await;
    let without = connect_all(vec![http_config("plain", &plain.url())]).await;
    let (none, diagnostics) = prompt_expander(true, Some(&without), OutputCap::default());
    assert!(none.is_none() && diagnostics.entries()[0].message.contains("disabled"));
    let _ = catalog_of(&manager).await;
}
