//! Dialling a session: the transport (our HTTP client, with the OAuth decorator when
//! the server has a login, or a spawned stdio child), the `initialize` handshake and
//! the response cache turned off; a failed dial says why (with a stdio child's
//! stderr tail).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::time::Duration;

use rmcp::ServiceExt as _;
use rmcp::service::{ClientCacheConfig, ClientInitializeError, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;

use super::failure::error_chain;
use super::handler::{DirtyFlags, Handler};
use super::{Advertised, RequestLimits, Session};
use crate::calls::InFlightCalls;
use crate::config::{ServerConfig, TransportConfig};
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
}

/// Transport + `initialize` + cache off: the first three connect steps (no listing).
pub(crate) async fn dial(
    config: &ServerConfig,
    ctx: &DialContext,
    generation: u64,
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
                None => crate::http::build_client(crate::config::Redirects::None).map_err(|e| DialError {
                    cause: format!("cannot build the HTTP client: {e}"),
                    stderr_tail: None,
                })?,
            };
            let client = crate::http::SessionAwareClient::new(client);
            let lost = client.lost_flag();
            let transport_config = crate::http::transport_config(url, headers.as_ref());
            let served = match &ctx.auth {
                Some(auth) => {
                    let client = crate::auth::AuthorizedClient::new(client, Arc::clone(auth));
                    handler
                        .serve(StreamableHttpClientTransport::with_client(
                            client,
                            transport_config,
                        ))
                        .await
                }
                None => {
                    handler
                        .serve(StreamableHttpClientTransport::with_client(
                            client,
                            transport_config,
                        ))
                        .await
                }
            };
            let service = served.map_err(|e| DialError {
                cause: match &ctx.auth {
                    Some(auth) if auth.needs_login() => crate::auth::ServerAuth::login_hint(&ctx.server),
                    _ => format!("initialize failed: {}", init_error_text(&e)),
                },
                stderr_tail: None,
            })?;
            Ok(finish(service, None, Some(lost), ctx.limits, generation, calls).await)
        }
        TransportConfig::Stdio {
            program,
            args,
            cwd,
            env,
        } => {
            let spawned = stdio::spawn(&ctx.server, program, args, cwd, env, config.sandbox.as_ref())
                .map_err(|e| DialError {
                    cause: format!("cannot start {program:?}: {e}"),
                    stderr_tail: None,
                })?;
            let process = spawned.process;
            match handler.serve((spawned.stdout, spawned.stdin)).await {
                Ok(service) => Ok(finish(service, Some(process), None, ctx.limits, generation, calls).await),
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
                    })
                }
            }
        }
    }
}

async fn finish(
    service: RunningService<RoleClient, Handler>,
    child: Option<Arc<ChildProcess>>,
    lost: Option<Arc<AtomicBool>>,
    limits: RequestLimits,
    generation: u64,
    calls: Arc<InFlightCalls>,
) -> Session {
    let peer = service.peer().clone();
    peer.set_response_cache_config(ClientCacheConfig::disabled())
        .await;
    let advertised = peer
        .peer_info()
        .map(|info| Advertised {
            resources: info.capabilities.resources.is_some(),
            prompts: info.capabilities.prompts.is_some(),
        })
        .unwrap_or_default();
    Session {
        generation,
        peer,
        service: tokio::sync::Mutex::new(Some(service)),
        dropped: AtomicBool::new(false),
        lost,
        child,
        limits,
        in_flight: AtomicUsize::new(0),
        idle: tokio::sync::Notify::new(),
        calls,
        advertised,
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
