//! The `fake` MCP server on rmcp's server side: `echo`, `peek` (read-only), `boom`,
//! plus knobs for canned replies, slow calls, resources, prompts and list changes.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, DiscoverRequestMethod,
    DiscoverResult, ErrorCode, ErrorData, GetPromptRequestParams, GetPromptResponse, GetPromptResult,
    InitializeResult, ListPromptsResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    Prompt, PromptArgument, PromptMessage, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, Role, ServerCapabilities, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// A resource of the fake server.
#[derive(Clone)]
pub struct FakeResource {
    pub uri: String,
    pub name: String,
    pub mime: Option<String>,
    pub description: Option<String>,
    pub body: FakeBody,
}

#[derive(Clone)]
pub enum FakeBody {
    Text(String),
    Blob(Vec<u8>),
}

impl FakeResource {
    pub fn text(uri: &str, name: &str, text: &str) -> Self {
        Self {
            uri: uri.to_owned(),
            name: name.to_owned(),
            mime: Some("text/plain".to_owned()),
            description: None,
            body: FakeBody::Text(text.to_owned()),
        }
    }

    pub fn blob(uri: &str, name: &str, mime: &str, bytes: &[u8]) -> Self {
        Self {
            uri: uri.to_owned(),
            name: name.to_owned(),
            mime: Some(mime.to_owned()),
            description: None,
            body: FakeBody::Blob(bytes.to_vec()),
        }
    }
}

/// Shared, test-controlled state of the fake server (survives restarts).
#[derive(Default)]
pub struct FakeState {
    pub resources: Mutex<Option<Vec<FakeResource>>>,
    pub prompts: AtomicBool,
    pub fail_resources_list: AtomicBool,
    pub fail_tools_list: AtomicBool,
    pub hang_tools_list: AtomicBool,
    pub tools_list_cancelled: AtomicBool,
    pub reply: Mutex<Option<CallToolResult>>,
    pub reply_output_schema: AtomicBool,
    pub echo_error: Mutex<Option<String>>,
    pub rpc_error: Mutex<Option<String>>,
    pub extra_tools: Mutex<Vec<String>>,
    /// Built-in tools offered besides `echo`, `peek` and `boom` (`reply`, `slow`, `mutate`).
    pub enabled: Mutex<Vec<&'static str>>,
    pub calls: Mutex<BTreeMap<String, usize>>,
    /// The `arguments` of the last `tools/call` (`Some(None)`: sent without).
    pub last_arguments: Mutex<Option<Option<serde_json::Map<String, Value>>>>,
    pub slow_started: AtomicUsize,
    pub slow_release: Notify,
    /// Whether it offers protocol 2026-07-28. By default it is a server from before
    /// it (`server/discover` is "method not found", so clients use `initialize` and
    /// get a session): the session-loss, close and connect-deadline tests are about
    /// sessions, which 2026-07-28 no longer has.
    pub modern: AtomicBool,
    /// Whether it answers `server/discover` with the revisions before 2026-07-28
    /// only, as a server that knows the method but keeps `initialize` does
    /// (`mecated mcp serve` is one).
    pub discovers_older_only: AtomicBool,
}

impl FakeState {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub fn with_resources(self: &Arc<Self>, resources: Vec<FakeResource>) -> Arc<Self> {
        *self.resources.lock().unwrap() = Some(resources);
        Arc::clone(self)
    }

    pub fn enable(self: &Arc<Self>, tools: &[&'static str]) -> Arc<Self> {
        self.enabled.lock().unwrap().extend_from_slice(tools);
        Arc::clone(self)
    }

    pub fn set_reply(&self, result: CallToolResult) {
        *self.reply.lock().unwrap() = Some(result);
    }

    pub fn calls_of(&self, tool: &str) -> usize {
        self.calls.lock().unwrap().get(tool).copied().unwrap_or(0)
    }
}

/// The rmcp handler over a [`FakeState`].
#[derive(Clone)]
pub struct Fake(pub Arc<FakeState>);

fn object(value: Value) -> Arc<serde_json::Map<String, Value>> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => unreachable!("schemas are objects"),
    }
}

fn tool(name: &str, description: &str, schema: Value) -> Tool {
    Tool::new(name.to_owned(), description.to_owned(), object(schema))
}

pub const ECHO_DESCRIPTION: &str = "Echoes the text back.\nPrefixes it with `echo:`.";

impl Fake {
    fn tools(&self) -> Vec<Tool> {
        let text_schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
        let mut peek = tool(
            "peek",
            "Peeks without changing anything.",
            json!({"type": "object"}),
        );
        peek.annotations = Some(ToolAnnotations::new().read_only(true));
        let mut reply = tool("reply", "Returns the canned reply.", json!({"type": "object"}));
        if self.0.reply_output_schema.load(Ordering::SeqCst) {
            reply.output_schema = Some(object(json!({"type": "object"})));
        }
        let enabled = self.0.enabled.lock().unwrap().clone();
        let mut tools = vec![
            tool("echo", ECHO_DESCRIPTION, text_schema),
            peek,
            tool("boom", "Always fails.", json!({"type": "object"})),
        ];
        let optional = [
            reply,
            tool("slow", "Waits until released.", json!({"type": "object"})),
            tool(
                "mutate",
                "Adds the tool `added` and says the list changed.",
                json!({"type": "object"}),
            ),
        ];
        tools.extend(
            optional
                .into_iter()
                .filter(|t| enabled.iter().any(|e| *e == t.name)),
        );
        for extra in self.0.extra_tools.lock().unwrap().iter() {
            tools.push(tool(extra, "Added later.", json!({"type": "object"})));
        }
        tools
    }
}

impl ServerHandler for Fake {
    async fn discover(&self, _context: RequestContext<RoleServer>) -> Result<DiscoverResult, ErrorData> {
        if self.0.discovers_older_only.load(Ordering::SeqCst) {
            return Ok(DiscoverResult::from_server_info(
                ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25).to_vec(),
                self.get_info(),
            ));
        }
        if !self.0.modern.load(Ordering::SeqCst) {
            return Err(ErrorData::method_not_found::<DiscoverRequestMethod>());
        }
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        ))
    }

    fn get_info(&self) -> InitializeResult {
        let mut capabilities = json!({"tools": {"listChanged": true}});
        if self.0.resources.lock().unwrap().is_some() {
            capabilities["resources"] = json!({"listChanged": true});
        }
        if self.0.prompts.load(Ordering::SeqCst) {
            capabilities["prompts"] = json!({"listChanged": true});
        }
        let capabilities: ServerCapabilities = serde_json::from_value(capabilities).unwrap();
        InitializeResult::new(capabilities)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        if self.0.hang_tools_list.load(Ordering::SeqCst) {
            context.ct.cancelled().await;
            self.0.tools_list_cancelled.store(true, Ordering::SeqCst);
            return Err(ErrorData::internal_error("cancelled", None));
        }
        if self.0.fail_tools_list.load(Ordering::SeqCst) {
            return Err(ErrorData::internal_error("tools are unavailable right now", None));
        }
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        *self.0.calls.lock().unwrap().entry(name.clone()).or_default() += 1;
        *self.0.last_arguments.lock().unwrap() = Some(request.arguments.clone());
        if let Some(message) = self.0.rpc_error.lock().unwrap().clone() {
            return Err(ErrorData::new(ErrorCode(-32001), message, None));
        }
        let text_arg = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let result = match name.as_str() {
            "echo" => match self.0.echo_error.lock().unwrap().clone() {
                Some(error) => CallToolResult::error(vec![ContentBlock::text(error)]),
                None => CallToolResult::success(vec![ContentBlock::text(format!("echo:{text_arg}"))]),
            },
            "peek" => CallToolResult::success(vec![ContentBlock::text("peeked")]),
            "boom" => CallToolResult::error(vec![ContentBlock::text("kaboom")]),
            "reply" => self
                .0
                .reply
                .lock()
                .unwrap()
                .clone()
                .unwrap_or_else(|| CallToolResult::success(vec![])),
            "slow" => {
                self.0.slow_started.fetch_add(1, Ordering::SeqCst);
                tokio::select! {
                    () = self.0.slow_release.notified() => {}
                    () = context.ct.cancelled() => {}
                }
                CallToolResult::success(vec![ContentBlock::text("slow done")])
            }
            "mutate" => {
                {
                    let mut extra = self.0.extra_tools.lock().unwrap();
                    let name = if extra.is_empty() {
                        "added".to_owned()
                    } else {
                        format!("added{}", extra.len() + 1)
                    };
                    extra.push(name);
                }
                let _ = context.peer.notify_tool_list_changed().await;
                CallToolResult::success(vec![ContentBlock::text("mutated")])
            }
            other if self.0.extra_tools.lock().unwrap().iter().any(|t| t == other) => {
                CallToolResult::success(vec![ContentBlock::text(format!("{other}!"))])
            }
            other => return Err(ErrorData::invalid_params(format!("tool {other} not found"), None)),
        };
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        if self.0.fail_resources_list.load(Ordering::SeqCst) {
            return Err(ErrorData::internal_error("resources are broken", None));
        }
        let resources = self.0.resources.lock().unwrap().clone().unwrap_or_default();
        Ok(ListResourcesResult::with_all_items(
            resources
                .iter()
                .map(|r| {
                    let mut resource = Resource::new(r.uri.clone(), r.name.clone());
                    resource.mime_type = r.mime.clone();
                    resource.description = r.description.clone();
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
        let resources = self.0.resources.lock().unwrap().clone().unwrap_or_default();
        let Some(found) = resources.iter().find(|r| r.uri == request.uri) else {
            return Err(ErrorData::resource_not_found(
                format!("resource {} not found", request.uri),
                None,
            ));
        };
        let contents = match &found.body {
            FakeBody::Text(text) => ResourceContents::TextResourceContents {
                uri: found.uri.clone(),
                mime_type: found.mime.clone(),
                text: text.clone(),
                meta: None,
            },
            FakeBody::Blob(bytes) => ResourceContents::BlobResourceContents {
                uri: found.uri.clone(),
                mime_type: found.mime.clone(),
                blob: base64_encode(bytes),
                meta: None,
            },
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(vec![
            Prompt::new(
                "greet",
                Some("Greets someone."),
                Some(vec![PromptArgument::new("who").with_required(true)]),
            ),
            Prompt::new("two", Some("Two messages."), None::<Vec<PromptArgument>>),
            Prompt::new(
                "a__b",
                Some("A prompt with __ in its name."),
                None::<Vec<PromptArgument>>,
            ),
        ]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let argument = |name: &str| {
            request
                .arguments
                .as_ref()
                .and_then(|a| a.get(name))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let result = match request.name.as_str() {
            "greet" => {
                let Some(who) = argument("who") else {
                    return Err(ErrorData::invalid_params("missing required argument: who", None));
                };
                GetPromptResult::new(vec![PromptMessage::new_text(Role::User, format!("Hello {who}"))])
            }
            "two" => GetPromptResult::new(vec![
                PromptMessage::new_text(Role::User, "first"),
                PromptMessage::new_text(Role::Assistant, "second"),
            ]),
            "a__b" => GetPromptResult::new(vec![PromptMessage::new_text(Role::User, "ab")]),
            other => {
                return Err(ErrorData::invalid_params(
                    format!("prompt {other} not found"),
                    None,
                ));
            }
        };
        Ok(result.into())
    }
}

pub fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
