//! Executing MCP tools — arguments, errors, cancellation, the D10
//! cap with the structured refusal, and the content mapping.

use std::sync::Arc;

use adapter_mcp::{McpManager, MountOptions};
use engine_core::{Catalog, DEFAULT_OUTPUT_CAP, ToolError, truncation_marker};
use engine_ports::{CancellationToken, ContentPart, EmbeddedBody, ToolCall, ToolResult};
use rmcp::model::{Annotations, CallToolResult, ContentBlock, EmbeddedResource, Resource, ResourceContents};
use serde_json::json;

use crate::support::capture::Capture;
use crate::support::fake::{FakeState, base64_encode};
use crate::support::http::FixtureServer;
use crate::support::{catalog_of, connect_all, environment, http_config, run};

async fn fake() -> (FixtureServer, McpManager, Catalog) {
    let server = FixtureServer::start(FakeState::new().enable(&["reply"])).await;
    let manager = connect_all(vec![http_config("fake", &server.url())]).await;
    let catalog = catalog_of(&manager).await;
    (server, manager, catalog)
}

async fn reply(server: &FixtureServer, catalog: &Catalog, result: CallToolResult) -> ToolResult {
    server.state.set_reply(result);
    run(catalog, "mcp__fake__reply", "").await
}

#[tokio::test]
async fn echo_keeps_the_call_id() {
    let (_server, _manager, catalog) = fake().await;
    let result = run(&catalog, "mcp__fake__echo", r#"{"text":"hello"}"#).await;
    assert!(!result.is_error(), "{result:?}");
    assert_eq!(result.call_id().as_str(), "call-1");
    assert_eq!(result.content(), "echo:hello");
    assert_eq!(result.parts(), [ContentPart::text("echo:hello")]);
}

#[tokio::test]
async fn argument_rules() {
    let (server, _manager, catalog) = fake().await;
    for empty in ["", "  ", "null"] {
        let result = run(&catalog, "mcp__fake__echo", empty).await;
        assert!(!result.is_error(), "{result:?}");
        assert_eq!(
            *server.state.last_arguments.lock().unwrap(),
            Some(None),
            "{empty:?}"
        );
    }
    let sent = server.state.calls_of("echo");
    let array = run(&catalog, "mcp__fake__echo", "[1]").await;
    assert!(array.is_error());
    assert!(
        array.content().contains("JSON object") && array.content().contains("an array"),
        "{array:?}"
    );
    let invalid = run(&catalog, "mcp__fake__echo", "{bad").await;
    assert!(invalid.is_error());
    assert!(invalid.content().contains("invalid arguments"), "{invalid:?}");
    assert_eq!(
        server.state.calls_of("echo"),
        sent,
        "nothing is sent for bad arguments"
    );
}

#[tokio::test]
async fn is_error_results_and_prior_cancellation() {
    let capture = Capture::start();
    let (server, manager, catalog) = fake().await;
    let result = run(&catalog, "mcp__fake__boom", "{}").await;
    assert!(result.is_error());
    assert_eq!(result.content(), "kaboom");
    assert!(result.parts().is_empty());
    assert_eq!(capture.reconnects(), (0, 0, 0));

    let cancel = CancellationToken::new();
    cancel.cancel();
    let (env, _dir) = environment();
    let tool = catalog.lookup("mcp__fake__echo").unwrap();
    let outcome = tool
        .execute(&cancel, &ToolCall::new("c", "mcp__fake__echo", "{}"), &env)
        .await;
    assert!(matches!(outcome, Err(ToolError::Cancelled)), "{outcome:?}");
    assert_eq!(
        server.state.calls_of("echo"),
        0,
        "the server saw a cancelled call"
    );
    drop(manager);
}

#[tokio::test]
async fn the_cap_truncates_text_and_refuses_structured_json() {
    let (server, _manager, catalog) = fake().await;
    let plain = reply(
        &server,
        &catalog,
        CallToolResult::success(vec![ContentBlock::text("x".repeat(30_000))]),
    )
    .await;
    assert!(!plain.is_error());
    assert!(plain.content().len() <= DEFAULT_OUTPUT_CAP);
    assert!(plain.content().ends_with(&truncation_marker(DEFAULT_OUTPUT_CAP)));
    let projected = plain.text_projection();
    assert!(
        projected.len() <= DEFAULT_OUTPUT_CAP,
        "parts carry more than the cap"
    );

    let items: Vec<String> = (0..3000).map(|i| format!("\"k{i}\":{i}")).collect();
    let json_text = format!("{{{}}}", items.join(","));
    assert!(json_text.len() > 30_000);
    let refused = reply(
        &server,
        &catalog,
        CallToolResult::success(vec![ContentBlock::text(json_text)]),
    )
    .await;
    assert!(refused.is_error());
    assert!(refused.parts().is_empty());
    let text = refused.content();
    for needle in [
        "mcp__fake__reply",
        "\"fake\"",
        "25000",
        "structured JSON",
        "unparseable",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    assert!(!text.contains("\"k1\""), "{text}");
    // An isError result is truncated, never refused.
    let error_json = format!("[{}]", "1,".repeat(20_000) + "1");
    let mut failed = CallToolResult::error(vec![ContentBlock::text(error_json)]);
    failed.structured_content = None;
    let error = reply(&server, &catalog, failed).await;
    assert!(error.is_error());
    assert!(error.content().ends_with(&truncation_marker(DEFAULT_OUTPUT_CAP)));
}

#[tokio::test]
async fn resource_links_are_parts_and_markers() {
    let (server, _manager, catalog) = fake().await;
    let mut link = Resource::new("https://example.test/doc", "doc").with_size(2048);
    link.annotations = Some(serde_json::from_value::<Annotations>(json!({"audience": ["user"]})).unwrap());
    let result = reply(
        &server,
        &catalog,
        CallToolResult::success(vec![ContentBlock::resource_link(link)]),
    )
    .await;
    let [ContentPart::ResourceLink(part)] = result.parts() else {
        panic!("{result:?}")
    };
    assert_eq!(part.uri, "https://example.test/doc");
    assert_eq!(part.name.as_deref(), Some("doc"));
    assert_eq!(part.size, Some(2048));
    assert_eq!(part.audience.as_deref(), Some(&["user".to_owned()][..]));
    assert!(result.content().contains("https://example.test/doc") && result.content().contains("doc"));
}

#[tokio::test]
async fn embedded_resources() {
    let (server, _manager, catalog) = fake().await;
    let result = reply(
        &server,
        &catalog,
        CallToolResult::success(vec![ContentBlock::embedded_text("test://e", "hello embedded")]),
    )
    .await;
    let [ContentPart::EmbeddedResource(part)] = result.parts() else {
        panic!("{result:?}")
    };
    assert_eq!(part.body, EmbeddedBody::Text("hello embedded".to_owned()));
    assert!(result.content().contains("hello embedded"));

    let png = [0x89, b'P', b'N', b'G', 0x0d];
    let blob = ResourceContents::BlobResourceContents {
        uri: "test://png".into(),
        mime_type: Some("image/png".into()),
        blob: base64_encode(&png),
        meta: None,
    };
    let result = reply(
        &server,
        &catalog,
        CallToolResult::success(vec![ContentBlock::Resource(EmbeddedResource::new(blob))]),
    )
    .await;
    let [ContentPart::EmbeddedResource(part)] = result.parts() else {
        panic!("{result:?}")
    };
    assert_eq!(part.body, EmbeddedBody::Blob(png.to_vec()));
    assert!(result.content().contains("image/png") && result.content().contains("5 bytes"));
    assert!(!result.content().contains("iVBOR"), "{}", result.content());
    let empty = reply(
        &server,
        &catalog,
        CallToolResult::success(vec![ContentBlock::embedded_text("test://empty", "")]),
    )
    .await;
    assert!(empty.parts().is_empty());
    assert!(empty.content().contains("empty"), "{empty:?}");
}

#[tokio::test]
async fn structured_content() {
    let (server, _manager, catalog) = fake().await;
    let mut result = CallToolResult::success(vec![ContentBlock::text("prelude")]);
    result.structured_content = Some(json!({"answer": 42}));
    let result = reply(&server, &catalog, result).await;
    assert!(result.parts().contains(&ContentPart::Structured {
        json: json!({"answer": 42})
    }));
    let text = result.content();
    assert!(
        text.contains("prelude") && text.contains("\"answer\"") && text.contains("42"),
        "{text}"
    );
    // A text item that already carries the same JSON is not repeated.
    let mut same = CallToolResult::success(vec![ContentBlock::text(r#"{"answer": 42}"#)]);
    same.structured_content = Some(json!({"answer": 42}));
    let same = reply(&server, &catalog, same).await;
    assert_eq!(same.content().matches("answer").count(), 1, "{}", same.content());
}

#[tokio::test]
async fn images_audio_and_unknown_kinds() {
    let (server, _manager, catalog) = fake().await;
    let eight = [1u8, 2, 3, 4, 5, 6, 7, 8];
    for mime in ["image/png", "image/gif", "image/jpeg; foo=bar", "IMAGE/WEBP"] {
        let result = reply(
            &server,
            &catalog,
            CallToolResult::success(vec![ContentBlock::image(base64_encode(&eight), mime)]),
        )
        .await;
        let [ContentPart::Image { mime: got, data }] = result.parts() else {
            panic!("{mime}: {result:?}")
        };
        assert_eq!((got.as_str(), data.as_slice()), (mime, &eight[..]));
        assert!(result.content().contains("image") && result.content().contains(mime));
        assert!(!result.content().contains(&base64_encode(&eight)));
    }
    let svg = reply(
        &server,
        &catalog,
        CallToolResult::success(vec![ContentBlock::image(
            base64_encode(b"<svg/>"),
            "image/svg+xml",
        )]),
    )
    .await;
    assert!(svg.parts().is_empty());
    assert!(
        svg.content().contains("image/svg+xml") && svg.content().contains("unsupported"),
        "{svg:?}"
    );
    for block in [
        ContentBlock::image("", "image/png"),
        ContentBlock::audio("", "audio/wav"),
    ] {
        let result = reply(&server, &catalog, CallToolResult::success(vec![block])).await;
        assert!(result.parts().is_empty());
        assert!(result.content().contains("invalid"), "{result:?}");
    }
    let bad_base64 = reply(
        &server,
        &catalog,
        CallToolResult::success(vec![ContentBlock::image("!!not base64!!", "image/png")]),
    )
    .await;
    assert!(bad_base64.parts().is_empty() && bad_base64.content().contains("invalid"));
    let wav = reply(
        &server,
        &catalog,
        CallToolResult::success(vec![ContentBlock::audio(base64_encode(b"RIFF"), "audio/wav")]),
    )
    .await;
    assert!(
        matches!(wav.parts(), [ContentPart::Audio { mime, .. }] if mime == "audio/wav"),
        "{wav:?}"
    );
    let not_audio = reply(
        &server,
        &catalog,
        CallToolResult::success(vec![ContentBlock::audio(base64_encode(b"RIFF"), "text/plain")]),
    )
    .await;
    assert!(not_audio.parts().is_empty() && not_audio.content().contains("invalid"));

    *server.faults.raw_call.lock().unwrap() = Some(json!({
        "content": [{"type": "text", "text": "before"}, {"type": "widget", "data": "x"}]
    }));
    let unknown = run(&catalog, "mcp__fake__reply", "").await;
    assert!(!unknown.is_error(), "{unknown:?}");
    assert_eq!(unknown.parts(), [ContentPart::text("before")]);
    assert!(unknown.content().contains("unsupported"), "{unknown:?}");
    let _ = Arc::clone(&server.state);
}

#[tokio::test]
async fn progressive_mount_advertises_light_specs() {
    let (_server, manager, _catalog) = fake().await;
    let snapshot = manager.tool_snapshot(MountOptions {
        progressive: true,
        ..MountOptions::default()
    });
    let catalog = crate::support::catalog_with(snapshot.catalog_tools());
    let advertised = catalog.advertised_specs(engine_ports::PermissionMode::Default);
    assert!(advertised.iter().all(|s| s.schema().is_none()));
    assert_eq!(
        catalog.specs(engine_ports::PermissionMode::Plan).len(),
        1,
        "only peek is read-only"
    );
}

#[tokio::test]
async fn calls_to_one_server_do_not_serialize() {
    let server = FixtureServer::start(FakeState::new().enable(&["slow"])).await;
    let manager = connect_all(vec![http_config("fake", &server.url())]).await;
    let catalog = catalog_of(&manager).await;
    let state = Arc::clone(&server.state);
    let release = async {
        // Both calls must be inside the server at once before either is answered.
        assert!(
            crate::support::wait_until(std::time::Duration::from_secs(10), || {
                state.slow_started.load(std::sync::atomic::Ordering::SeqCst) == 2
            })
            .await,
            "the second call waited for the first"
        );
        state.slow_release.notify_waiters();
    };
    let (first, second, ()) = tokio::join!(
        run(&catalog, "mcp__fake__slow", "{}"),
        run(&catalog, "mcp__fake__slow", "{}"),
        release
    );
    assert_eq!((first.content(), second.content()), ("slow done", "slow done"));
}
