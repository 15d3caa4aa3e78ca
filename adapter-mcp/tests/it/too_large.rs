//! A reply over the size limit of one message fails its call as soon as it passes
//! the limit, naming the server, the tool and the limit, rather than after the
//! call's time limits or the end of the reply: over stdio, and over streamable HTTP
//! as a JSON body or an SSE event. Each peer writes 400 MiB at 1 MiB every 50 ms
//! (20 s), so the limit (16 MiB) passes after about a second, against a 60 s idle
//! limit.

use std::time::{Duration, Instant};

use crate::support::fake::FakeState;
use crate::support::http::{FixtureServer, Mode};
use crate::support::{catalog_of, connect_all, http_config, python, run, stdio_config};

/// Well before the end of the reply (20 s) and the idle limit (60 s), with a wide
/// margin over the second it takes to pass the limit.
const EARLY: Duration = Duration::from_secs(10);

fn too_large(server: &str, tool: &str) -> String {
    format!(
        "mcp call failed: MCP server \"{server}\" answered {tool} with more than 16777216 bytes, \
         the limit of one message; the result was discarded"
    )
}

#[tokio::test]
async fn an_oversized_stdio_reply_fails_its_call_once_it_passes_the_limit() {
    let Some(python) = python("an_oversized_stdio_reply_fails_its_call_once_it_passes_the_limit") else {
        return;
    };
    let workspace = tempfile::tempdir().unwrap();
    let manager = connect_all(vec![stdio_config(&python, "fx", &[], workspace.path())]).await;
    let catalog = catalog_of(&manager).await;
    let started = Instant::now();
    let result = run(&catalog, "mcp__fx__huge", "{}").await;
    let took = started.elapsed();
    assert!(result.is_error(), "{result:?}");
    assert_eq!(result.content(), too_large("fx", "huge"));
    assert!(took < EARLY, "the failure took {took:?}");
    manager.close().await.unwrap();
}

async fn http_case(sse: bool) {
    let server = FixtureServer::start(FakeState::new()).await;
    let manager = connect_all(vec![http_config("fake", &server.url())]).await;
    let catalog = catalog_of(&manager).await;
    server.faults.set_mode(Mode::HugeCalls { sse });
    let started = Instant::now();
    let result = run(&catalog, "mcp__fake__echo", r#"{"text":"big"}"#).await;
    let took = started.elapsed();
    assert!(result.is_error(), "{result:?}");
    assert_eq!(result.content(), too_large("fake", "echo"));
    assert!(took < EARLY, "the failure took {took:?}");
    // The session stays: the next call is answered.
    server.faults.set_mode(Mode::Normal);
    let next = run(&catalog, "mcp__fake__echo", r#"{"text":"next"}"#).await;
    assert_eq!(next.content(), "echo:next");
    manager.close().await.unwrap();
}

#[tokio::test]
async fn an_oversized_http_json_reply_fails_its_call_once_it_passes_the_limit() {
    http_case(false).await;
}

#[tokio::test]
async fn an_oversized_sse_event_fails_its_call_once_it_passes_the_limit() {
    http_case(true).await;
}
