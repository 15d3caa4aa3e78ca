//! In-process streamable-HTTP fixture: the rmcp `fake` server behind a fault layer
//! (404 to everything, dropped connections, delayed `initialize`, 307 redirects,
//! raw `tools/list` pages), on a fixed loopback port it can be stopped and
//! restarted on.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

use super::fake::{Fake, FakeState};

/// Raw `tools/list` pages: cursor in, page (`{"tools":[…],"nextCursor":…}`) out.
pub type RawTools = Arc<dyn Fn(Option<&str>) -> Value + Send + Sync>;

/// HTTP-level behaviour of the fixture.
#[derive(Clone, Default)]
pub enum Mode {
    #[default]
    Normal,
    /// Every request gets 404, after `delay`.
    All404 { delay: Duration },
    /// A `tools/call` of `slow` is read, then its connection is dropped unanswered.
    DropSlowCalls,
    /// Every `tools/call` gets 404 (its session "expired"); everything else works,
    /// so reconnects succeed.
    Calls404,
    /// Every request gets a 307 to this URL.
    Redirect(String),
    /// Every `tools/call` is answered with a 400 MiB text result written 1 MiB
    /// every 50 ms (20 s): as one SSE event when `sse`, else as a JSON body.
    HugeCalls { sse: bool },
}

/// What the fault layer saw and how it behaves.
#[derive(Default)]
pub struct Faults {
    pub mode: Mutex<Mode>,
    pub initialize_delay: Mutex<Option<Duration>>,
    /// A delay before every POST is handled.
    pub post_delay: Mutex<Option<Duration>>,
    pub raw_tools: Mutex<Option<RawTools>>,
    /// A raw `tools/call` result answered for every call.
    pub raw_call: Mutex<Option<Value>>,
    /// JSON-RPC methods of every POST, in order.
    pub methods: Mutex<Vec<String>>,
    /// `Authorization` header of every request.
    pub authorization: Mutex<Vec<Option<String>>>,
    pub requests: AtomicUsize,
    /// Session `DELETE`s (a client closing its session).
    pub deletes: AtomicUsize,
    pub slow_calls_seen: AtomicUsize,
}

impl Faults {
    pub fn set_mode(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    pub fn methods(&self) -> Vec<String> {
        self.methods.lock().unwrap().clone()
    }

    pub fn saw(&self, method: &str) -> bool {
        self.methods().iter().any(|m| m == method)
    }
}

/// Per-connection kill switch, handed to the fault layer.
#[derive(Clone)]
struct ConnKill(CancellationToken);

struct Running {
    tasks: JoinSet<()>,
}

/// A restartable fixture server on one loopback port.
pub struct FixtureServer {
    pub port: u16,
    pub state: Arc<FakeState>,
    pub faults: Arc<Faults>,
    running: Option<Running>,
}

impl FixtureServer {
    /// Starts the fake server with `state` on a free port.
    pub async fn start(state: Arc<FakeState>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut server = Self {
            port,
            state,
            faults: Arc::new(Faults::default()),
            running: None,
        };
        server.serve(listener);
        server
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    fn serve(&mut self, listener: TcpListener) {
        let state = Arc::clone(&self.state);
        let service = StreamableHttpService::new(
            move || Ok(Fake(Arc::clone(&state))),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default().with_sse_keep_alive(None),
        );
        let router = Router::new()
            .nest_service("/mcp", service)
            .layer(middleware::from_fn_with_state(
                Arc::clone(&self.faults),
                fault_layer,
            ));
        let mut tasks = JoinSet::new();
        let connections = Arc::new(Mutex::new(JoinSet::new()));
        let accept_connections = Arc::clone(&connections);
        tasks.spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    break;
                };
                let router = router.clone();
                let kill = CancellationToken::new();
                let conn_kill = kill.clone();
                let service =
                    hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                        let mut request = request.map(Body::new);
                        request.extensions_mut().insert(ConnKill(conn_kill.clone()));
                        router.clone().oneshot(request)
                    });
                accept_connections.lock().unwrap().spawn(async move {
                    let connection = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service);
                    tokio::select! {
                        _ = connection => {}
                        () = kill.cancelled() => {}
                    }
                });
            }
        });
        // Aborting `tasks` drops the listener; aborting the connection set drops every
        // open connection, like a killed process.
        tasks.spawn(async move {
            let _keep = ConnectionsOnDrop(connections);
            std::future::pending::<()>().await;
        });
        self.running = Some(Running { tasks });
    }

    /// Stops accepting and drops every connection (the port is free afterwards).
    pub async fn stop(&mut self) {
        if let Some(mut running) = self.running.take() {
            running.tasks.abort_all();
            while running.tasks.join_next().await.is_some() {}
        }
    }

    /// Starts again on the same port, with fresh sessions (a restarted server).
    pub async fn restart(&mut self) {
        self.stop().await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let listener = loop {
            match TcpListener::bind(("127.0.0.1", self.port)).await {
                Ok(listener) => break listener,
                Err(error) if tokio::time::Instant::now() < deadline => {
                    let _ = error;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(error) => panic!("cannot rebind 127.0.0.1:{}: {error}", self.port),
            }
        };
        self.serve(listener);
    }
}

impl Drop for FixtureServer {
    fn drop(&mut self) {
        if let Some(mut running) = self.running.take() {
            running.tasks.abort_all();
        }
    }
}

struct ConnectionsOnDrop(Arc<Mutex<JoinSet<()>>>);

impl Drop for ConnectionsOnDrop {
    fn drop(&mut self) {
        self.0.lock().unwrap().abort_all();
    }
}

fn rpc_method(body: &[u8]) -> (Option<String>, Option<Value>, Option<Value>) {
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return (None, None, None);
    };
    (
        value.get("method").and_then(Value::as_str).map(str::to_owned),
        value.get("id").cloned(),
        value.get("params").cloned(),
    )
}

async fn fault_layer(State(faults): State<Arc<Faults>>, request: Request, next: Next) -> Response {
    faults.requests.fetch_add(1, Ordering::SeqCst);
    if request.method() == axum::http::Method::DELETE {
        faults.deletes.fetch_add(1, Ordering::SeqCst);
    }
    faults.authorization.lock().unwrap().push(
        request
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
    );
    let mode = faults.mode.lock().unwrap().clone();
    let kill = request.extensions().get::<ConnKill>().cloned();
    let (parts, body) = request.into_parts();
    let bytes: Bytes = axum::body::to_bytes(body, 16 * 1024 * 1024)
        .await
        .unwrap_or_default();
    let (method, id, params) = rpc_method(&bytes);
    if let Some(method) = &method {
        faults.methods.lock().unwrap().push(method.clone());
    }
    match mode {
        Mode::Normal => {}
        Mode::All404 { delay } => {
            tokio::time::sleep(delay).await;
            return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
        }
        Mode::Calls404 if method.as_deref() == Some("tools/call") => {
            return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
        }
        Mode::Calls404 => {}
        Mode::Redirect(to) => {
            let mut response = StatusCode::TEMPORARY_REDIRECT.into_response();
            response
                .headers_mut()
                .insert("location", HeaderValue::from_str(&to).unwrap());
            return response;
        }
        Mode::HugeCalls { sse } if method.as_deref() == Some("tools/call") => {
            return huge_reply(id.unwrap_or(Value::Null), sse);
        }
        Mode::HugeCalls { .. } => {}
        Mode::DropSlowCalls => {
            let slow = method.as_deref() == Some("tools/call")
                && params
                    .as_ref()
                    .and_then(|p| p.get("name"))
                    .and_then(Value::as_str)
                    == Some("slow");
            if slow {
                faults.slow_calls_seen.fetch_add(1, Ordering::SeqCst);
                if let Some(kill) = kill {
                    kill.0.cancel();
                }
                return std::future::pending().await;
            }
        }
    }
    let post_delay = *faults.post_delay.lock().unwrap();
    if let Some(delay) = post_delay.filter(|_| method.is_some()) {
        tokio::time::sleep(delay).await;
    }
    if method.as_deref() == Some("initialize") {
        let delay = *faults.initialize_delay.lock().unwrap();
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
    }
    if method.as_deref() == Some("tools/list") {
        let raw = faults.raw_tools.lock().unwrap().clone();
        if let Some(raw) = raw {
            let cursor = params
                .as_ref()
                .and_then(|p| p.get("cursor"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let page = raw(cursor.as_deref());
            let body = json!({"jsonrpc": "2.0", "id": id, "result": page});
            return ([("content-type", "application/json")], body.to_string()).into_response();
        }
    }
    if method.as_deref() == Some("tools/call") {
        let raw = faults.raw_call.lock().unwrap().clone();
        if let Some(result) = raw {
            let body = json!({"jsonrpc": "2.0", "id": id, "result": result});
            return ([("content-type", "application/json")], body.to_string()).into_response();
        }
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

/// A `tools/call` reply of 400 MiB of text, written 1 MiB every 50 ms.
fn huge_reply(id: Value, sse: bool) -> Response {
    const CHUNKS: usize = 400;
    let open = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#);
    let (open, close, content_type) = if sse {
        (
            format!("event: message\ndata: {open}"),
            "\"}]}}\n\n",
            "text/event-stream",
        )
    } else {
        (open, "\"}]}}", "application/json")
    };
    let chunk = Bytes::from(vec![b'x'; 1 << 20]);
    let body = futures::stream::unfold(0_usize, move |sent| {
        let (open, chunk) = (open.clone(), chunk.clone());
        async move {
            let piece = match sent {
                0 => Bytes::from(open),
                n if n <= CHUNKS => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    chunk
                }
                n if n == CHUNKS + 1 => Bytes::from_static(close.as_bytes()),
                _ => return None,
            };
            Some((Ok::<_, std::io::Error>(piece), sent + 1))
        }
    });
    ([("content-type", content_type)], Body::from_stream(body)).into_response()
}
