//! The legacy HTTP+SSE transport's guards, against tiny in-test SSE servers: an
//! `endpoint` event naming another origin is refused before anything is posted
//! there, and a stream without its `endpoint` event fails within the connect timeout;
//! and the real server-everything over SSE.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use adapter_mcp::{ConnectOptions, McpManager, ServerConfig};
use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap as AxumHeaders, header};
use axum::response::Response;
use axum::routing::{get, post};
use futures::StreamExt as _;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};

/// Serves `router` on a loopback port; returns its base URL.
async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{addr}")
}

/// An event stream that sends `first` (if any) and then stays open.
fn stream_of(first: Option<String>) -> Response {
    let events = futures::stream::iter(first.map(Ok::<_, Infallible>)).chain(futures::stream::pending());
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from_stream(events))
        .unwrap()
}

fn token_headers() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer sse-secret"));
    headers
}

#[tokio::test]
async fn an_endpoint_on_another_origin_is_refused_and_nothing_is_posted_there() {
    // The other origin records every POST it receives, with its Authorization.
    let posted: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let seen = Arc::clone(&posted);
    let elsewhere = serve(Router::new().route(
        "/message",
        post(move |headers: AxumHeaders| {
            let seen = Arc::clone(&seen);
            async move {
                let auth = headers
                    .get(header::AUTHORIZATION)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                seen.lock().unwrap().push(auth);
                "accepted"
            }
        }),
    ))
    .await;
    let event = format!("event: endpoint\ndata: {elsewhere}/message?sessionId=1\n\n");
    let hostile = serve(Router::new().route(
        "/sse",
        get(move || {
            let event = event.clone();
            async move { stream_of(Some(event)) }
        }),
    ))
    .await;

    let config = ServerConfig::sse("old", format!("{hostile}/sse"), Some(token_headers()))
        .with_connect_timeout(Duration::from_secs(10));
    let connected = McpManager::connect(vec![config], ConnectOptions::default()).await;
    assert!(connected.manager.is_empty());
    let error = &connected.failures[0].error;
    assert!(error.contains("another origin"), "{error}");
    assert!(!error.contains("sse-secret"), "{error}");
    assert!(
        posted.lock().unwrap().is_empty(),
        "posted elsewhere: {:?}",
        posted.lock().unwrap()
    );
}

#[tokio::test]
async fn a_stream_without_its_endpoint_event_fails_within_the_connect_timeout() {
    let silent = serve(Router::new().route("/sse", get(|| async { stream_of(None) }))).await;
    let config = ServerConfig::sse("mute", format!("{silent}/sse"), None)
        .with_connect_timeout(Duration::from_millis(300));
    let connected = tokio::time::timeout(
        Duration::from_secs(10),
        McpManager::connect(vec![config], ConnectOptions::default()),
    )
    .await
    .expect("the connect outlived its timeout");
    assert!(connected.manager.is_empty());
    assert_eq!(connected.failures.len(), 1);
    assert_eq!(connected.failures[0].transport.as_str(), "sse");
}

#[tokio::test]
async fn server_everything_over_sse_lists_and_answers_calls() {
    let Some(peer) = test_peers::everything_sse("everything_sse") else {
        return;
    };
    let config = ServerConfig::sse("ev", format!("{}/sse", peer.base_url()), None)
        .with_connect_timeout(Duration::from_secs(10));
    let manager = crate::support::connect_all(vec![config]).await;
    assert_eq!(manager.servers()[0].transport.as_str(), "sse");
    let catalog = crate::support::catalog_of(&manager).await;
    for message in ["first over sse", "second over sse"] {
        let args = serde_json::json!({ "message": message }).to_string();
        let echo = crate::support::run(&catalog, "mcp__ev__echo", &args).await;
        assert!(!echo.is_error() && echo.content().contains(message), "{echo:?}");
    }
    manager.close().await.unwrap();
}
