//! Client-provided (per-session) servers — validation that reports every
//! problem and the D7 all-or-nothing connect. Mounting their tools is the
//! catalog assembly's job.

use std::path::PathBuf;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::config::{
    CLIENT_CONNECT_TIMEOUT, Expanded, Redirects, ServerConfig, ServerSource, TransportConfig,
};
use crate::manager::{ConnectOptions, McpManager};
use crate::server_name::ServerName;
use crate::url_check::validate_url;

/// Most client-provided servers per session.
pub(crate) const MAX_CLIENT_SERVERS: usize = 8;

/// Headers a client may not set: the transport owns them.
const RESERVED_HEADERS: [&str; 7] = [
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
    "host",
    "content-type",
    "content-length",
];

/// One server named in a session-creation request (ACP `session/new` `mcpServers`,
/// or the HTTP create body), as `app` maps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientServerSpec {
    /// The server name.
    pub name: String,
    /// Its transport.
    pub kind: ClientServerKind,
}

/// The transport of a [`ClientServerSpec`].
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientServerKind {
    /// Streamable HTTP.
    Http {
        /// The endpoint.
        url: String,
        /// Headers as name/value pairs (values are secrets: never shown).
        headers: Vec<(String, String)>,
    },
    /// The deprecated SSE transport (always rejected).
    Sse,
    /// A command the client could run itself (ACP over stdio only).
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment entries (values are secrets: never shown).
        env: Vec<(String, String)>,
    },
    /// No recognized transport.
    Unknown,
}

impl std::fmt::Debug for ClientServerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", &crate::redact::redact_url(url))
                .field(
                    "headers",
                    &headers.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
                )
                .finish(),
            Self::Sse => f.write_str("Sse"),
            Self::Stdio { command, args, env } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>())
                .finish(),
            Self::Unknown => f.write_str("Unknown"),
        }
    }
}

/// What the host tells about the request that named the servers.
#[derive(Clone, Debug)]
pub struct ClientServerContext {
    /// Whether stdio servers are accepted: only when the request came over ACP's
    /// stdio transport (the client launched us and could run the command itself).
    pub stdio_allowed: bool,
    /// The session's workspace: the working directory of stdio children.
    pub workspace: PathBuf,
}

/// One problem with one client-provided server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientServerProblem {
    /// The server (`None` for a problem with the whole list).
    pub server: Option<String>,
    /// What is wrong (never a header value).
    pub reason: String,
}

/// Session creation fails: every problem, each naming its server (D7).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ClientServersError {
    /// The problems, in list order.
    pub problems: Vec<ClientServerProblem>,
}

impl std::fmt::Display for ClientServersError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("client-provided MCP servers rejected, nothing mounted: ")?;
        for (index, problem) in self.problems.iter().enumerate() {
            if index > 0 {
                f.write_str("; ")?;
            }
            match &problem.server {
                Some(server) => write!(f, "server {server:?}: {}", problem.reason)?,
                None => f.write_str(&problem.reason)?,
            }
        }
        Ok(())
    }
}

pub(crate) fn name_problem(name: &str) -> Option<String> {
    ServerName::check(name).err().map(|problem| problem.to_string())
}

pub(crate) fn http_headers(headers: &[(String, String)], problems: &mut Vec<String>) -> Option<HeaderMap> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        if name.is_empty() {
            continue;
        }
        let Ok(header) = HeaderName::from_bytes(name.as_bytes()) else {
            problems.push(format!("header {name:?} is not a valid header name"));
            continue;
        };
        if RESERVED_HEADERS.contains(&header.as_str()) {
            problems.push(format!("header {name:?} is reserved for the transport"));
            continue;
        }
        let Ok(value) = HeaderValue::from_str(value) else {
            problems.push(format!("header {name:?} has an invalid value"));
            continue;
        };
        map.append(header, value);
    }
    (!map.is_empty()).then_some(map)
}

/// Validates client-provided servers, reporting every problem in one error, and maps
/// the accepted ones to configs (headers cloned, 10 s, no redirects, source `Client`).
///
/// # Errors
/// [`ClientServersError`] listing every problem.
pub fn validate_client_servers(
    specs: &[ClientServerSpec],
    context: &ClientServerContext,
) -> Result<Vec<ServerConfig>, ClientServersError> {
    let mut problems = Vec::new();
    if specs.len() > MAX_CLIENT_SERVERS {
        problems.push(ClientServerProblem {
            server: None,
            reason: format!(
                "{} MCP servers were given; at most {MAX_CLIENT_SERVERS} are accepted",
                specs.len()
            ),
        });
    }
    let mut configs = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for spec in specs {
        let mut reasons = Vec::new();
        if let Some(problem) = name_problem(&spec.name) {
            reasons.push(problem);
        }
        if !spec.name.is_empty() && !seen.insert(spec.name.as_str()) {
            reasons.push("the name is given twice".to_owned());
        }
        let transport = match &spec.kind {
            ClientServerKind::Sse => {
                reasons
                    .push("the SSE transport is deprecated and not accepted; use streamable HTTP".to_owned());
                None
            }
            ClientServerKind::Unknown => {
                reasons.push("no recognized transport (streamable HTTP or stdio)".to_owned());
                None
            }
            ClientServerKind::Stdio { command, args, env } => {
                if !context.stdio_allowed {
                    reasons.push(
                        "stdio servers are not accepted here: only streamable HTTP servers are accepted over this API"
                            .to_owned(),
                    );
                    None
                } else if command.trim().is_empty() {
                    reasons.push("the stdio command is empty".to_owned());
                    None
                } else {
                    Some(TransportConfig::Stdio {
                        program: command.clone(),
                        args: args.clone(),
                        cwd: context.workspace.clone(),
                        env: env.clone(),
                    })
                }
            }
            ClientServerKind::Http { url, headers } => {
                if let Err(error) = validate_url(url) {
                    reasons.push(format!(
                        "URL {:?} is not accepted: {error}",
                        crate::redact::redact_url(url)
                    ));
                }
                let headers = http_headers(headers, &mut reasons);
                Some(TransportConfig::Http {
                    url: url.clone(),
                    headers,
                    redirects: Redirects::None,
                })
            }
        };
        if reasons.is_empty()
            && let Some(transport) = transport
        {
            configs.push(ServerConfig {
                name: spec.name.clone(),
                transport,
                connect_timeout: CLIENT_CONNECT_TIMEOUT,
                source: ServerSource::Client,
                expanded: Expanded::default(),
                sandbox: None,
                auth: crate::config::AuthConfig::default(),
            });
        }
        problems.extend(reasons.into_iter().map(|reason| ClientServerProblem {
            server: Some(spec.name.clone()),
            reason,
        }));
    }
    if problems.is_empty() {
        Ok(configs)
    } else {
        Err(ClientServersError { problems })
    }
}

/// D7: validates, then connects every client server concurrently. If any fails, the
/// ones that connected are closed first and the error lists each failing server
/// (name, redacted URL, short reason). An empty list gives `Ok(None)`.
///
/// # Errors
/// [`ClientServersError`]: nothing is mounted.
pub async fn connect_client_servers(
    specs: &[ClientServerSpec],
    context: &ClientServerContext,
    options: ConnectOptions,
) -> Result<Option<McpManager>, ClientServersError> {
    if specs.is_empty() {
        return Ok(None);
    }
    let configs = validate_client_servers(specs, context)?;
    let connected = McpManager::connect(configs, options).await;
    if connected.failures.is_empty() {
        return Ok(Some(connected.manager));
    }
    let _ = connected.manager.close().await;
    Err(ClientServersError {
        problems: connected
            .failures
            .into_iter()
            .map(|failure| ClientServerProblem {
                reason: format!("{} failed to connect: {}", failure.endpoint, failure.error),
                server: Some(failure.server),
            })
            .collect(),
    })
}
