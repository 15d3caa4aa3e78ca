//! An in-process streamable-HTTP MCP server on rmcp's server side, for loopback
//! tests and benches: configurable tools (each answers `<prefix><text or path>`),
//! optional text resources, and counts of requests and session `DELETE`s. It speaks
//! the session revisions only (2025-11-25 and older: `initialize`, `Mcp-Session-Id`,
//! a `DELETE` at close), so tests can see a client's session begin and end; the
//! stateless 2026-07-28 revision is tested in adapter-mcp.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, DiscoverRequestMethod,
    DiscoverResult, ErrorData, InitializeResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ServerCapabilities, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// One tool of a fixture server.
#[derive(Clone, Debug)]
pub struct FixtureTool {
    pub name: String,
    pub read_only: bool,
}

impl FixtureTool {
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            read_only: false,
        }
    }

    pub fn read_only(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            read_only: true,
        }
    }
}

/// What a fixture server offers.
#[derive(Clone, Debug, Default)]
pub struct FixtureSpec {
    pub tools: Vec<FixtureTool>,
    /// Every tool answers `<prefix><text>` (or `<prefix><path>`).
    pub prefix: String,
    /// `(uri, name, text)` resources.
    pub resources: Vec<(String, String, String)>,
}

impl FixtureSpec {
    /// Tools `names` (not read-only) answering with `prefix`.
    pub fn tools(prefix: &str, names: &[&str]) -> Self {
        Self {
            tools: names.iter().map(|n| FixtureTool::new(n)).collect(),
            prefix: prefix.to_owned(),
            resources: Vec::new(),
        }
    }

    /// The same server with one more text resource.
    pub fn with_resource(mut self, uri: &str, name: &str, text: &str) -> Self {
        self.resources
            .push((uri.to_owned(), name.to_owned(), text.to_owned()));
        self
    }
}

/// What the server saw (and how late it answers).
#[derive(Default)]
pub struct Seen {
    pub latency: Duration,
    pub requests: AtomicUsize,
    pub deletes: AtomicUsize,
    pub calls: Mutex<Vec<(String, Option<Value>)>>,
}

/// A running fixture server; stops when dropped.
pub struct McpFixture {
    pub url: String,
    pub seen: Arc<Seen>,
    task: tokio::task::JoinHandle<()>,
}

impl McpFixture {
    /// Starts a server for `spec` on a free loopback port (`http://127.0.0.1:P/mcp`).
    pub async fn start(spec: FixtureSpec) -> Self {
        Self::start_with_latency(spec, Duration::ZERO).await
    }

    /// As [`McpFixture::start`], answering every request `latency` late (a network
    /// round trip, for benches).
    pub async fn start_with_latency(spec: FixtureSpec, latency: Duration) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Seen {
            latency,
            ..Seen::default()
        });
        let handler = Handler {
            spec: Arc::new(spec),
            seen: Arc::clone(&seen),
        };
        let service = StreamableHttpService::new(
            move || Ok(handler.clone()),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default().with_sse_keep_alive(None),
        );
        let router = Router::new()
            .nest_service("/mcp", service)
            .layer(middleware::from_fn_with_state(Arc::clone(&seen), count_deletes));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Self {
            url: format!("http://127.0.0.1:{port}/mcp"),
            seen,
            task,
        }
    }

    /// The fixture's MCP endpoint as a router (`/mcp`) to serve behind other layers,
    /// and what it sees.
    pub fn router(spec: FixtureSpec) -> (Router, Arc<Seen>) {
        let seen = Arc::new(Seen::default());
        let handler = Handler {
            spec: Arc::new(spec),
            seen: Arc::clone(&seen),
        };
        let service = StreamableHttpService::new(
            move || Ok(handler.clone()),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default().with_sse_keep_alive(None),
        );
        (Router::new().nest_service("/mcp", service), seen)
    }

    /// Session `DELETE`s seen so far.
    pub fn deletes(&self) -> usize {
        self.seen.deletes.load(Ordering::SeqCst)
    }

    /// HTTP requests of any kind seen so far.
    pub fn requests(&self) -> usize {
        self.seen.requests.load(Ordering::SeqCst)
    }

    /// Tool calls seen so far (name, arguments).
    pub fn calls(&self) -> Vec<(String, Option<Value>)> {
        self.seen.calls.lock().unwrap().clone()
    }
}

impl Drop for McpFixture {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn count_deletes(State(seen): State<Arc<Seen>>, request: Request, next: Next) -> Response {
    seen.requests.fetch_add(1, Ordering::SeqCst);
    if request.method() == axum::http::Method::DELETE {
        seen.deletes.fetch_add(1, Ordering::SeqCst);
    }
    if !seen.latency.is_zero() {
        tokio::time::sleep(seen.latency).await;
    }
    next.run(request).await
}

#[derive(Clone)]
struct Handler {
    spec: Arc<FixtureSpec>,
    seen: Arc<Seen>,
}

impl ServerHandler for Handler {
    /// Not offered: a client falls back to `initialize` and a session.
    async fn discover(&self, _context: RequestContext<RoleServer>) -> Result<DiscoverResult, ErrorData> {
        Err(ErrorData::method_not_found::<DiscoverRequestMethod>())
    }

    fn get_info(&self) -> InitializeResult {
        let mut capabilities = json!({"tools": {}});
        if !self.spec.resources.is_empty() {
            capabilities["resources"] = json!({});
        }
        let capabilities: ServerCapabilities = serde_json::from_value(capabilities).unwrap();
        InitializeResult::new(capabilities)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema =
            json!({"type": "object", "properties": {"text": {"type": "string"}, "path": {"type": "string"}}});
        let Value::Object(schema) = schema else {
            unreachable!("an object")
        };
        let schema = Arc::new(schema);
        let tools = self
            .spec
            .tools
            .iter()
            .map(|t| {
                let mut tool = Tool::new(
                    t.name.clone(),
                    format!("Fixture tool {}.", t.name),
                    Arc::clone(&schema),
                );
                if t.read_only {
                    tool.annotations = Some(ToolAnnotations::new().read_only(true));
                }
                tool
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let arguments = request.arguments.clone().map(Value::Object);
        self.seen.calls.lock().unwrap().push((name.clone(), arguments));
        if !self.spec.tools.iter().any(|t| t.name == name) {
            return Err(ErrorData::invalid_params(format!("tool {name} not found"), None));
        }
        let arg = |key: &str| {
            request
                .arguments
                .as_ref()
                .and_then(|a| a.get(key))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let text = arg("text").or_else(|| arg("path")).unwrap_or_default();
        let result = CallToolResult::success(vec![ContentBlock::text(format!("{}{text}", self.spec.prefix))]);
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(
            self.spec
                .resources
                .iter()
                .map(|(uri, name, _)| {
                    let mut resource = Resource::new(uri.clone(), name.clone());
                    resource.mime_type = Some("text/plain".to_owned());
                    resource
                })
                .collect(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let Some((uri, _, text)) = self.spec.resources.iter().find(|(uri, _, _)| *uri == request.uri) else {
            return Err(ErrorData::resource_not_found(
                format!("resource {} not found", request.uri),
                None,
            ));
        };
        let contents = ResourceContents::TextResourceContents {
            uri: uri.clone(),
            mime_type: Some("text/plain".to_owned()),
            text: text.clone(),
            meta: None,
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}
