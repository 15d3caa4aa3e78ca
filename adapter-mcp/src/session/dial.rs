//! Dialling a session: the transport (our HTTP client, with the OAuth decorator when
//! the server has a login, or a spawned stdio child), the `initialize` handshake and
//! the response cache turned off; a failed dial says why (with a stdio child's
//! stderr tail).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::time::Duration;

use rmcp::model::{ErrorCode, ProtocolVersion, ServerNotification, SubscriptionFilter};
use rmcp::service::{
    ClientCacheConfig, ClientInitializeError, ClientLifecycleMode, ClientServiceExt as _, Peer, RoleClient,
    RunningService,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use super::failure::error_chain;
use super::handler::{DirtyFlags, Handler, ListKind};
use super::{Advertised, RequestLimits, Session};
use crate::calls::InFlightCalls;
use crate::config::{ServerConfig, TransportConfig};
use crate::http::{HttpLayer, Layered};
use crate::size_limit::{LineWatch, MAX_MESSAGE_BYTES};
use crate::stdio::{self, ChildProcess};

/// Everything a dial needs besides the config.
#[derive(Clone)]
pub(crate) struct DialContext {
    pub(crate) server: Arc<str>,
    pub(crate) http: Option<reqwest::Client>,
    pub(crate) flags: Arc<DirtyFlags>,
    pub(crate) limits: RequestLimits,
    /// The server's OAuth state (HTTP servers without a configured token).
    pub(crate) auth: Option<Arc<crate::auth::ServerAuth>>,
}

/// A dial that failed: the cause (not yet redacted) and, for stdio, the stderr tail.
#[derive(Debug)]
pub(crate) struct DialError {
    pub(crate) cause: String,
    pub(crate) stderr_tail: Option<String>,
    /// How to dial again when the negotiation itself went wrong.
    retry: Option<ClientLifecycleMode>,
}

impl DialError {
    fn new(cause: String, stderr_tail: Option<String>) -> Self {
        Self {
            cause,
            stderr_tail,
            retry: None,
        }
    }
}

/// Transport + protocol negotiation + cache off: the first three connect steps (no
/// listing). When the negotiation itself goes wrong the server is dialled once more
/// ([`retry_mode`] says how).
pub(crate) async fn dial(
    config: &ServerConfig,
    ctx: &DialContext,
    generation: u64,
) -> Result<Session, DialError> {
    match dial_with(config, ctx, generation, lifecycle()).await {
        Err(DialError {
            retry: Some(mode), ..
        }) => {
            tracing::debug!(
                server = &*ctx.server,
                ?mode,
                "MCP protocol negotiation went wrong; dialling again"
            );
            dial_with(config, ctx, generation, mode).await
        }
        other => other,
    }
}

async fn dial_with(
    config: &ServerConfig,
    ctx: &DialContext,
    generation: u64,
    mode: ClientLifecycleMode,
) -> Result<Session, DialError> {
    let calls = Arc::new(InFlightCalls::default());
    let handler = Handler {
        server: Arc::clone(&ctx.server),
        flags: Arc::clone(&ctx.flags),
        calls: Arc::clone(&calls),
    };
    match &config.transport {
        TransportConfig::Http { url, headers, .. } => {
            let client = match &ctx.http {
                Some(client) => client.clone(),
                None => crate::http::build_client(crate::config::Redirects::None)
                    .map_err(|e| DialError::new(format!("cannot build the HTTP client: {e}"), None))?,
            };
            let client = crate::http::SessionAwareClient::new(client, Arc::clone(&calls));
            let lost = client.lost_flag();
            let transport_config = crate::http::transport_config(url, headers.as_ref());
            let served = match &ctx.auth {
                Some(auth) => {
                    let client = crate::auth::AuthorizedClient::new(client, Arc::clone(auth));
                    serve_http(handler, client, transport_config, mode).await
                }
                None => serve_http(handler, client, transport_config, mode).await,
            };
            let service = served.map_err(|e| DialError {
                cause: match &ctx.auth {
                    Some(auth) if auth.needs_login() => crate::auth::ServerAuth::login_hint(&ctx.server),
                    _ => format!("initialize failed: {}", init_error_text(&e)),
                },
                stderr_tail: None,
                retry: retry_mode(&e),
            })?;
            Ok(finish(service, ctx, None, Some(lost), generation, calls).await)
        }
        TransportConfig::Sse { url, headers } => {
            let client = match &ctx.http {
                Some(client) => client.clone(),
                None => crate::http::build_client(crate::config::Redirects::SameOrigin)
                    .map_err(|e| DialError::new(format!("cannot build the HTTP client: {e}"), None))?,
            };
            let transport = crate::sse_client::connect(
                client,
                url,
                headers.as_ref(),
                Arc::clone(&calls),
                MAX_MESSAGE_BYTES,
                ctx.limits.idle,
                Arc::clone(&ctx.server),
            )
            .await
            .map_err(|e| DialError::new(error_chain(&e), None))?;
            // A 2024-11-05 transport: `initialize` at once, no `server/discover` probe.
            let service = handler
                .serve_with_lifecycle(transport, ClientLifecycleMode::Initialize)
                .await
                .map_err(|e| DialError::new(format!("initialize failed: {}", init_error_text(&e)), None))?;
            Ok(finish(service, ctx, None, None, generation, calls).await)
        }
        TransportConfig::Stdio {
            program,
            args,
            cwd,
            env,
        } => {
            let spawned = stdio::spawn(&ctx.server, program, args, cwd, env, config.sandbox.as_ref())
                .map_err(|e| DialError::new(format!("cannot start {program:?}: {e}"), None))?;
            let process = spawned.process;
            let stdout = LineWatch::new(spawned.stdout, Arc::clone(&calls), MAX_MESSAGE_BYTES);
            match handler.serve_with_lifecycle((stdout, spawned.stdin), mode).await {
                Ok(service) => Ok(finish(service, ctx, Some(process), None, generation, calls).await),
                Err(e) => {
                    // A child that died at once has said why on stderr: let it finish.
                    let exited = process.wait_exit(Duration::from_millis(500)).await;
                    process.wait_stderr_closed(Duration::from_millis(500)).await;
                    let tail = process.stderr_tail();
                    let cause = if exited {
                        format!("the process exited during initialize ({})", init_error_text(&e))
                    } else {
                        format!("initialize failed: {}", init_error_text(&e))
                    };
                    process.shut_down().await;
                    Err(DialError {
                        cause,
                        stderr_tail: (!tail.is_empty()).then_some(tail),
                        retry: if exited { None } else { retry_mode(&e) },
                    })
                }
            }
        }
    }
}

/// Runs the handshake of `mode` over streamable HTTP on `client`.
async fn serve_http<L: HttpLayer>(
    handler: Handler,
    client: L,
    config: StreamableHttpClientTransportConfig,
    mode: ClientLifecycleMode,
) -> Result<RunningService<RoleClient, Handler>, ClientInitializeError> {
    let transport = StreamableHttpClientTransport::with_client(Layered(client), config);
    handler.serve_with_lifecycle(transport, mode).await
}

/// How a connect starts: `server/discover` offering 2026-07-28, and a server that
/// does not know it (it answers the probe with an error) gets the `initialize`
/// handshake at 2025-11-25, which it may answer with an older revision. rmcp runs
/// both on the same transport (over HTTP, a legacy server's 4xx to the probe counts
/// as that error); a server that does not answer the probe within rmcp's 10 s gets
/// `initialize` (and [`retry_mode`] handles one that answers the probe late).
fn lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
    }
}

async fn finish(
    service: RunningService<RoleClient, Handler>,
    ctx: &DialContext,
    child: Option<Arc<ChildProcess>>,
    lost: Option<Arc<AtomicBool>>,
    generation: u64,
    calls: Arc<InFlightCalls>,
) -> Session {
    let peer = service.peer().clone();
    peer.set_response_cache_config(ClientCacheConfig::disabled())
        .await;
    let info = peer.peer_info();
    let advertised = info
        .as_deref()
        .map(|info| Advertised {
            resources: info.capabilities.resources.is_some(),
            prompts: info.capabilities.prompts.is_some(),
        })
        .unwrap_or_default();
    let protocol = info.map(|info| info.protocol_version.clone()).unwrap_or_default();
    // From 2026-07-28 on, `list_changed` arrives only on a `subscriptions/listen`
    // stream the client opens.
    let listener = (!protocol.has_initialize()).then(|| {
        tokio::spawn(listen(
            peer.clone(),
            Arc::clone(&ctx.flags),
            Arc::clone(&ctx.server),
            ctx.limits.idle,
        ))
        .abort_handle()
    });
    tracing::debug!(server = &*ctx.server, protocol = %protocol, "MCP session negotiated protocol {protocol}");
    Session {
        generation,
        server: Arc::clone(&ctx.server),
        protocol,
        listener,
        peer,
        service: tokio::sync::Mutex::new(Some(service)),
        dropped: AtomicBool::new(false),
        lost,
        child,
        limits: ctx.limits,
        in_flight: AtomicUsize::new(0),
        idle: tokio::sync::Notify::new(),
        calls,
        advertised,
    }
}

/// Opens the session's `subscriptions/listen` stream for the three `list_changed`
/// notifications (the acknowledgement within `limit`) and marks the lists dirty as
/// they arrive, until the stream or the session ends. A server without the stream
/// leaves the lists as they are until a reconnect.
async fn listen(peer: Peer<RoleClient>, flags: Arc<DirtyFlags>, server: Arc<str>, limit: Duration) {
    let filter = SubscriptionFilter::builder()
        .tools_list_changed()
        .resources_list_changed()
        .prompts_list_changed()
        .build();
    let mut subscription = match tokio::time::timeout(limit, peer.listen(filter)).await {
        Ok(Ok(subscription)) => subscription,
        Ok(Err(error)) => {
            tracing::debug!(
                server = &*server,
                "MCP server refused subscriptions/listen: {}",
                error_chain(&error)
            );
            return;
        }
        Err(_) => {
            tracing::debug!(
                server = &*server,
                "MCP server did not acknowledge subscriptions/listen"
            );
            return;
        }
    };
    while let Ok(Some(notification)) = subscription.next().await {
        let kind = match notification {
            ServerNotification::ToolListChangedNotification(_) => ListKind::Tools,
            ServerNotification::ResourceListChangedNotification(_) => ListKind::Resources,
            ServerNotification::PromptListChangedNotification(_) => ListKind::Prompts,
            _ => continue,
        };
        flags.mark(kind, &server);
    }
}

/// How to dial again after the negotiation of [`lifecycle`] failed, if at all:
/// - the server answered `server/discover` with a result of another kind (some
///   servers from before 2026-07-28 answer any unknown method with `{}`): with
///   `initialize` alone;
/// - the probe went unanswered for rmcp's 10 s (a stdio server still starting), the
///   fallback `initialize` was sent, and the server then answered the probe after
///   all, which does not match `initialize`: a late result (or a refusal of
///   `initialize` naming its revisions) means it speaks 2026-07-28, so
///   `server/discover` alone; a late error means it does not, so `initialize` alone;
/// - the server answered `server/discover` with the revisions it speaks, none of
///   them 2026-07-28 but some with `initialize` (it knows the method but keeps the
///   handshake, as `mecated mcp serve` does): rmcp gives up there, so `initialize`
///   alone.
fn retry_mode(error: &ClientInitializeError) -> Option<ClientLifecycleMode> {
    match error {
        ClientInitializeError::ExpectedInitResult(_)
        | ClientInitializeError::UncorrelatedErrorResponse { .. } => Some(ClientLifecycleMode::Initialize),
        ClientInitializeError::ConflictInitResponseId(..) => Some(discover_only()),
        ClientInitializeError::JsonRpcError(error)
            if error.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION =>
        {
            Some(discover_only())
        }
        ClientInitializeError::NoCompatibleProtocolVersion { server_supported, .. }
            if server_supported.iter().any(ProtocolVersion::has_initialize) =>
        {
            Some(ClientLifecycleMode::Initialize)
        }
        _ => None,
    }
}

fn discover_only() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    }
}

/// A failed `initialize`, without rmcp's transport type names.
fn init_error_text(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::TransportError { error, context } => {
            format!("{context}: {}", error_chain(error.error.as_ref()))
        }
        other => error_chain(other),
    }
}
