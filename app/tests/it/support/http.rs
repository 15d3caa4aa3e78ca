//! An in-process `mecated serve` on a loopback port, a real HTTP client for it, and a
//! small server-sent-events reader.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use app::{AppConfig, AuthToken, Built, HttpOptions, HttpServer, OpenConnections, build};
use reqwest::StatusCode;
use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A server over its own `Built`, stopped (and `Built` closed) by [`TestServer::stop`].
pub struct TestServer {
    pub base: String,
    pub built: Arc<Built>,
    pub client: reqwest::Client,
    pub token: Option<String>,
    /// The server's `host:port`.
    pub addr: SocketAddr,
    /// The server's open connections.
    pub connections: OpenConnections,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), app::ServeError>>>,
}

/// A JSON answer.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Answer {
    /// The `error` message of an error answer.
    pub fn error(&self) -> &str {
        self.body["error"]
            .as_str()
            .unwrap_or_else(|| panic!("no error message in {self:?}"))
    }
}

/// A plain client (no proxy: loopback must stay loopback).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

impl TestServer {
    /// `cfg` with interactive engines, on `127.0.0.1:0`, without a token.
    pub async fn start(cfg: AppConfig) -> Self {
        Self::start_with(cfg, "127.0.0.1:0".parse().unwrap(), None).await
    }

    /// `cfg` with interactive engines on `addr`, with an optional token.
    pub async fn start_with(cfg: AppConfig, addr: SocketAddr, token: Option<&str>) -> Self {
        let options = HttpOptions {
            auth_token: token.and_then(AuthToken::new),
            // Stopping cancels runs at once (the drain has tests of its own).
            drain: Duration::ZERO,
            ..HttpOptions::default()
        };
        Self::start_with_options(cfg, addr, options, token).await
    }

    /// `cfg` with interactive engines on `addr` with `options`; requests carry
    /// `token` when given.
    pub async fn start_with_options(
        mut cfg: AppConfig,
        addr: SocketAddr,
        mut options: HttpOptions,
        token: Option<&str>,
    ) -> Self {
        cfg.engine.interactive = true;
        let built = Arc::new(build(cfg).await.unwrap());
        // `/metrics` as `serve` wires it, when the config keeps metrics.
        if options.metrics.is_none() {
            options.metrics = built.metrics_text().map(app::MetricsText::new);
        }
        let server = HttpServer::bind(built.host(), addr, options).await.unwrap();
        let addr = server.local_addr();
        let port = addr.port();
        let connections = server.connections();
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(server.serve(async move {
            let _ = rx.await;
        }));
        Self {
            base: format!("http://127.0.0.1:{port}"),
            built,
            client: client(),
            token: token.map(str::to_owned),
            addr,
            connections,
            shutdown: Some(tx),
            task: Some(task),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let request = self.client.request(method, self.url(path));
        match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// `method path` with an optional JSON body, answered with JSON (or nothing).
    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Answer {
        let mut request = self.request(method.parse().unwrap(), path);
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        answer(request.send().await.unwrap()).await
    }

    pub async fn get(&self, path: &str) -> Answer {
        self.call("GET", path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Answer {
        self.call("POST", path, Some(body)).await
    }

    /// Creates a session with `body` and returns its id (asserting 201).
    pub async fn create(&self, body: Value) -> String {
        let answer = self.post("/v1/sessions", body).await;
        assert_eq!(answer.status, StatusCode::CREATED, "{answer:?}");
        answer.body["session_id"].as_str().unwrap().to_owned()
    }

    /// Starts a prompt; the raw response (status not checked).
    pub async fn prompt_response(&self, id: &str, text: &str) -> reqwest::Response {
        self.request(reqwest::Method::POST, &format!("/v1/sessions/{id}/prompt"))
            .header("content-type", "application/json")
            .body(serde_json::json!({ "text": text }).to_string())
            .send()
            .await
            .unwrap()
    }

    /// Starts a prompt and returns its event stream (asserting 200 and the type).
    pub async fn prompt(&self, id: &str, text: &str) -> SseReader {
        let response = self.prompt_response(id, text).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            response.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        SseReader::new(response)
    }

    /// Shuts the server down (runs cancelled, sessions closed), then closes `Built`.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            tokio::time::timeout(Duration::from_secs(20), task)
                .await
                .expect("the server stops")
                .unwrap()
                .unwrap();
        }
        self.built.close().await.unwrap();
    }

    /// Triggers the shutdown and hands back the serving task.
    pub fn begin_shutdown(&mut self) -> JoinHandle<Result<(), app::ServeError>> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        self.task.take().unwrap()
    }
}

/// The JSON answer of `response` (`Null` for an empty body).
pub async fn answer(response: reqwest::Response) -> Answer {
    let status = response.status();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    };
    Answer {
        status,
        headers,
        body,
    }
}

/// One SSE frame.
#[derive(Debug, Clone)]
pub struct Frame {
    pub id: Option<String>,
    pub data: String,
    pub comments: Vec<String>,
}

/// Reads server-sent events off a response as they arrive.
pub struct SseReader {
    response: reqwest::Response,
    buffer: String,
}

impl SseReader {
    pub fn new(response: reqwest::Response) -> Self {
        Self {
            response,
            buffer: String::new(),
        }
    }

    /// The next frame, comment-only frames (keep-alives) included; `None` at the end
    /// of the stream.
    pub async fn next_raw_frame(&mut self) -> Option<Frame> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let raw: String = self.buffer.drain(..end + 2).collect();
                return Some(parse_frame(&raw));
            }
            let chunk = self.response.chunk().await.unwrap()?;
            self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }

    /// The next frame carrying data (comment-only frames are skipped); `None` at the
    /// end of the stream.
    pub async fn next_frame(&mut self) -> Option<Frame> {
        loop {
            let frame = self.next_raw_frame().await?;
            if !frame.data.is_empty() || frame.id.is_some() {
                return Some(frame);
            }
        }
    }

    /// The next event: `(id, event JSON)`.
    pub async fn next_event(&mut self) -> Option<(u64, Value)> {
        let frame = self.next_frame().await?;
        let id = frame
            .id
            .as_deref()
            .expect("every event has an id")
            .parse()
            .unwrap();
        let event: Value = serde_json::from_str(&frame.data).unwrap();
        Some((id, event))
    }

    /// Events up to and including the first of type `kind`.
    pub async fn until(&mut self, kind: &str) -> Vec<(u64, Value)> {
        let mut events = Vec::new();
        while let Some(event) = self.next_event().await {
            let done = event.1["type"] == kind;
            events.push(event);
            if done {
                return events;
            }
        }
        panic!("the stream ended before a {kind} event: {events:?}");
    }

    /// Every remaining event, until the stream ends.
    pub async fn rest(mut self) -> Vec<(u64, Value)> {
        let mut events = Vec::new();
        while let Some(event) = self.next_event().await {
            events.push(event);
        }
        events
    }
}

fn parse_frame(raw: &str) -> Frame {
    let mut frame = Frame {
        id: None,
        data: String::new(),
        comments: Vec::new(),
    };
    for line in raw.lines() {
        if let Some(comment) = line.strip_prefix(':') {
            frame.comments.push(comment.trim().to_owned());
        } else if let Some(id) = line.strip_prefix("id:") {
            frame.id = Some(id.trim_start().to_owned());
        } else if let Some(data) = line.strip_prefix("data:") {
            if !frame.data.is_empty() {
                frame.data.push('\n');
            }
            frame.data.push_str(data.strip_prefix(' ').unwrap_or(data));
        }
    }
    frame
}

/// An answer read off a raw connection.
#[derive(Debug)]
pub struct RawAnswer {
    pub status: u16,
    pub head: String,
    pub body: Value,
}

impl RawAnswer {
    /// The `error` message of an error answer.
    pub fn error(&self) -> &str {
        self.body["error"]
            .as_str()
            .unwrap_or_else(|| panic!("no error message in {self:?}"))
    }
}

/// Sends `request` (bytes exactly as given: request line, headers, blank line and
/// body; add `Connection: close`) on a new connection to `addr` and reads until the
/// server closes it (at most 10 s), whatever the client could not send.
pub async fn raw(addr: SocketAddr, request: &[u8]) -> RawAnswer {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    // Written by a task of its own: the server may answer (and close) before it has
    // read everything, and the answer is what the test is about.
    let (mut reader, mut writer) = tcp.split();
    let request = request.to_vec();
    let write = async move {
        let _ = writer.write_all(&request).await;
    };
    let read = async {
        let mut bytes = Vec::new();
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match reader.read(&mut chunk).await {
                Ok(0) | Err(_) => return bytes,
                Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            }
        }
    };
    let ((), bytes) = tokio::time::timeout(Duration::from_secs(10), async { tokio::join!(write, read) })
        .await
        .expect("the server answers and closes the connection");
    parse_raw(&bytes)
}

fn parse_raw(bytes: &[u8]) -> RawAnswer {
    let text = String::from_utf8_lossy(bytes);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no answer head in {text:?}"));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head:?}"));
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
    };
    RawAnswer {
        status,
        head: head.to_owned(),
        body,
    }
}

/// A request as raw bytes: `METHOD PATH HTTP/1.1`, then `headers` (`Name: value`),
/// `Connection: close`, `Content-Length` when there is a body, and the body.
pub fn raw_request(method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut text = format!("{method} {path} HTTP/1.1\r\n");
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str("Connection: close\r\n");
    if !body.is_empty() {
        text.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    text.push_str("\r\n");
    text.push_str(body);
    text.into_bytes()
}
