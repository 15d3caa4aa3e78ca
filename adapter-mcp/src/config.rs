//! [`ServerConfig`]: one MCP server to connect to, with its transport and source.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use reqwest::header::HeaderMap;

use crate::server_name::{ServerName, ServerNameError};

/// How long connecting to an operator-configured or ToolHive server may take
/// (spawn, `initialize` and the listings together).
pub(crate) const OPERATOR_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long connecting to a client-provided (per-session) server may take.
pub(crate) const CLIENT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// One MCP server to connect to.
#[derive(Clone)]
pub struct ServerConfig {
    /// The server name: the `<server>` of `mcp__<server>__<tool>`.
    pub name: String,
    /// How to reach it.
    pub transport: TransportConfig,
    /// One deadline for the whole connect sequence (and every reconnect dial).
    pub connect_timeout: Duration,
    /// Where the entry came from (diagnostics, `mcp_servers[]` of `tools --json`).
    pub source: ServerSource,
    /// What `${VAR}` expansion put into this config (entries of config files).
    pub(crate) expanded: Expanded,
    /// How a stdio server's process is confined (`--mcp-sandbox`): `None` runs it with
    /// the harness's rights; a confined one may write only its working directory (the
    /// workspace) and a private temporary directory; a refused one does not start.
    /// HTTP servers ignore it.
    pub sandbox: Option<sandbox::Confinement>,
    /// How an HTTP server's request for OAuth authorization is answered: this
    /// client's identity there, where logins live, and who may log in.
    pub(crate) auth: AuthConfig,
}

/// The OAuth side of an HTTP server's config.
#[derive(Clone, Debug, Default)]
pub(crate) struct AuthConfig {
    pub(crate) client: crate::auth::OAuthClientSettings,
    pub(crate) store: crate::auth::TokenStore,
    pub(crate) authorizer: crate::auth::Authorizer,
}

/// What `${VAR}` expansion put into a config: never shown in a diagnostic.
#[derive(Clone, Default)]
pub(crate) struct Expanded {
    /// The URL or program as written, variables unexpanded: what diagnostics show
    /// for the endpoint instead of the expanded text.
    pub(crate) endpoint: Option<String>,
    /// The values the variables expanded to: redacted wherever they appear.
    pub(crate) values: Vec<String>,
}

impl fmt::Debug for Expanded {
    // The values are secrets: only their number is shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Expanded")
            .field("endpoint", &self.endpoint)
            .field("values", &self.values.len())
            .finish()
    }
}

/// How to reach a server.
#[derive(Clone)]
#[non_exhaustive]
pub enum TransportConfig {
    /// Streamable HTTP.
    Http {
        /// The endpoint, kept exactly as given.
        url: String,
        /// Headers sent on every request to the configured origin (`None`: no headers).
        /// `Authorization: Bearer <token>` travels as rmcp's bearer header; the others
        /// as custom headers.
        headers: Option<HeaderMap>,
        /// Which redirects are followed.
        redirects: Redirects,
    },
    /// The legacy HTTP+SSE transport (MCP 2024-11-05): a GET event stream whose
    /// `endpoint` event names where messages are POSTed (same origin only).
    Sse {
        /// The event stream's URL, kept exactly as given.
        url: String,
        /// Headers sent on the GET and on every POST (`None`: no headers).
        headers: Option<HeaderMap>,
    },
    /// A child process speaking MCP over its stdin and stdout.
    Stdio {
        /// The program (looked up on `PATH` when it has no `/`).
        program: String,
        /// Its arguments, passed as they are (no shell).
        args: Vec<String>,
        /// Its working directory (the workspace).
        cwd: PathBuf,
        /// Extra environment entries on top of the inherited, credential-stripped
        /// environment (client-provided stdio servers bring their own).
        env: Vec<(String, String)>,
    },
}

impl fmt::Debug for ServerConfig {
    // Expanded values (an argument, a URL path) are redacted like header values.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let transport = crate::redact::redact_text(&format!("{:?}", self.transport), &self.expanded.values);
        f.debug_struct("ServerConfig")
            .field("name", &self.name)
            .field("transport", &format_args!("{transport}"))
            .field("connect_timeout", &self.connect_timeout)
            .field("source", &self.source)
            .field("expanded", &self.expanded)
            .field("auth", &self.auth)
            .finish()
    }
}

/// The names of configured headers, for `Debug`: their values never reach a log.
fn header_names(headers: Option<&HeaderMap>) -> Option<Vec<&str>> {
    headers.map(|h| h.keys().map(reqwest::header::HeaderName::as_str).collect())
}

impl fmt::Debug for TransportConfig {
    // Header values never reach a log: only their names are shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Http {
                url,
                headers,
                redirects,
            } => f
                .debug_struct("Http")
                .field("url", &crate::redact::redact_url(url))
                .field("headers", &header_names(headers.as_ref()))
                .field("redirects", redirects)
                .finish(),
            Self::Sse { url, headers } => f
                .debug_struct("Sse")
                .field("url", &crate::redact::redact_url(url))
                .field("headers", &header_names(headers.as_ref()))
                .finish(),
            Self::Stdio {
                program,
                args,
                cwd,
                env,
            } => f
                .debug_struct("Stdio")
                .field("program", program)
                .field("args", args)
                .field("cwd", cwd)
                .field("env", &env.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>())
                .finish(),
        }
    }
}

/// Which HTTP redirects a server's client follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Redirects {
    /// Only 307/308 to the same origin (scheme, host, port), at most 10 hops.
    SameOrigin,
    /// None: a redirect ends the request with an error.
    None,
}

/// Where a server entry came from.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerSource {
    /// `--mcp-server` or `--mcp-stdio`.
    Static,
    /// A ToolHive workload of this group.
    Toolhive {
        /// The ToolHive group.
        group: String,
    },
    /// Provided by the client when the session was created.
    Client,
}

impl ServerSource {
    /// Whether the server was found by discovery (ToolHive) rather than configured.
    pub fn is_discovered(&self) -> bool {
        matches!(self, Self::Toolhive { .. })
    }
}

impl fmt::Display for ServerSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Static => f.write_str("static"),
            Self::Toolhive { group } => write!(f, "toolhive({group})"),
            Self::Client => f.write_str("client"),
        }
    }
}

/// The transport kind as shown in `tools --json` (`"streamable-http"`, `"sse"`,
/// `"stdio"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TransportKind {
    /// Streamable HTTP.
    StreamableHttp,
    /// The legacy HTTP+SSE transport.
    Sse,
    /// A stdio child process.
    Stdio,
}

impl TransportKind {
    /// The wire name: `streamable-http`, `sse` or `stdio`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::StreamableHttp => "streamable-http",
            Self::Sse => "sse",
            Self::Stdio => "stdio",
        }
    }
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A configuration rejected before dialling.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The name breaks the server-name rule (`[A-Za-z0-9._-]`, 1 to 64 bytes, no `__`).
    #[error("MCP server name {name:?}: {problem}")]
    Name {
        /// The name as given.
        name: String,
        /// The rule it breaks.
        problem: ServerNameError,
    },
    /// An HTTP server without URL.
    #[error("MCP server {0:?} uses HTTP but has no URL")]
    MissingUrl(String),
    /// A stdio server without program.
    #[error("MCP server {0:?} uses stdio but has no program")]
    MissingProgram(String),
}

impl ServerConfig {
    /// An operator-configured streamable-HTTP server (30 s, same-origin redirects).
    pub fn http(name: impl Into<String>, url: impl Into<String>, headers: Option<HeaderMap>) -> Self {
        Self {
            name: name.into(),
            transport: TransportConfig::Http {
                url: url.into(),
                headers,
                redirects: Redirects::SameOrigin,
            },
            connect_timeout: OPERATOR_CONNECT_TIMEOUT,
            source: ServerSource::Static,
            expanded: Expanded::default(),
            sandbox: None,
            auth: AuthConfig::default(),
        }
    }

    /// An operator-configured stdio server (30 s).
    pub fn stdio(
        name: impl Into<String>,
        program: impl Into<String>,
        args: Vec<String>,
        cwd: impl Into<PathBuf>,
    ) -> Self {
        Self {
            name: name.into(),
            transport: TransportConfig::Stdio {
                program: program.into(),
                args,
                cwd: cwd.into(),
                env: Vec::new(),
            },
            connect_timeout: OPERATOR_CONNECT_TIMEOUT,
            source: ServerSource::Static,
            expanded: Expanded::default(),
            sandbox: None,
            auth: AuthConfig::default(),
        }
    }

    /// An operator-configured legacy HTTP+SSE server (30 s).
    pub fn sse(name: impl Into<String>, url: impl Into<String>, headers: Option<HeaderMap>) -> Self {
        Self {
            transport: TransportConfig::Sse {
                url: url.into(),
                headers,
            },
            ..Self::http(name, String::new(), None)
        }
    }

    /// The same config with another connect timeout.
    #[must_use]
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The same config with its stdio process confined as `confinement` says.
    #[must_use]
    pub fn with_sandbox(mut self, confinement: sandbox::Confinement) -> Self {
        self.sandbox = Some(confinement);
        self
    }

    /// The same config with this client's OAuth identity at the server's
    /// authorization server (the `oauth` object of a config file entry).
    #[must_use]
    pub fn with_oauth_client(mut self, client: crate::auth::OAuthClientSettings) -> Self {
        self.auth.client = client;
        self
    }

    /// The same config with its logins kept in `store` and a request for
    /// authorization answered by `authorizer` (default: in memory, stored logins
    /// only). A server with a configured `Authorization` header never uses OAuth, nor
    /// one the operator did not configure (ToolHive, a session's client servers).
    #[must_use]
    pub fn with_authorization(
        mut self,
        store: crate::auth::TokenStore,
        authorizer: crate::auth::Authorizer,
    ) -> Self {
        self.auth.store = store;
        self.auth.authorizer = authorizer;
        self
    }

    /// This client's OAuth identity at the server's authorization server.
    pub fn oauth_client(&self) -> &crate::auth::OAuthClientSettings {
        &self.auth.client
    }

    /// Whether requests carry a configured `Authorization` header (a static token),
    /// which replaces OAuth.
    pub fn has_static_authorization(&self) -> bool {
        self.headers()
            .is_some_and(|headers| headers.contains_key(reqwest::header::AUTHORIZATION))
    }

    /// The headers an HTTP or SSE server's requests carry.
    fn headers(&self) -> Option<&HeaderMap> {
        match &self.transport {
            TransportConfig::Http { headers, .. } | TransportConfig::Sse { headers, .. } => headers.as_ref(),
            TransportConfig::Stdio { .. } => None,
        }
    }

    /// The same config with another source.
    #[must_use]
    pub fn with_source(mut self, source: ServerSource) -> Self {
        self.source = source;
        self
    }

    /// The transport kind.
    pub fn transport_kind(&self) -> TransportKind {
        match self.transport {
            TransportConfig::Http { .. } => TransportKind::StreamableHttp,
            TransportConfig::Sse { .. } => TransportKind::Sse,
            TransportConfig::Stdio { .. } => TransportKind::Stdio,
        }
    }

    /// What diagnostics show for the endpoint: the URL without user info, query or
    /// fragment, or the program; as written in its config file (variables
    /// unexpanded) when it holds a `${VAR}`.
    pub fn endpoint_for_display(&self) -> String {
        match (&self.transport, &self.expanded.endpoint) {
            (TransportConfig::Http { .. } | TransportConfig::Sse { .. }, Some(written)) => {
                crate::redact::redact_url_text(written)
            }
            (TransportConfig::Http { url, .. } | TransportConfig::Sse { url, .. }, None) => {
                crate::redact::redact_url(url)
            }
            (TransportConfig::Stdio { .. }, Some(written)) => written.clone(),
            (TransportConfig::Stdio { program, .. }, None) => program.clone(),
        }
    }

    /// Checks the rules that hold before dialling: a valid server name, a URL for
    /// HTTP and a program for stdio.
    ///
    /// # Errors
    /// The first [`ConfigError`], naming the server (Debug-escaped) and the rule.
    pub fn validate(&self) -> Result<(), ConfigError> {
        ServerName::check(&self.name).map_err(|problem| ConfigError::Name {
            name: self.name.clone(),
            problem,
        })?;
        match &self.transport {
            TransportConfig::Http { url, .. } | TransportConfig::Sse { url, .. } if url.trim().is_empty() => {
                Err(ConfigError::MissingUrl(self.name.clone()))
            }
            TransportConfig::Stdio { program, .. } if program.trim().is_empty() => {
                Err(ConfigError::MissingProgram(self.name.clone()))
            }
            _ => Ok(()),
        }
    }

    /// Header values, stdio environment values and the values `${VAR}` expanded to:
    /// secrets that diagnostics must never show.
    pub(crate) fn secrets(&self) -> Vec<String> {
        let mut out = self.expanded.values.clone();
        if let Some(headers) = self.headers() {
            for value in headers.values() {
                if let Ok(text) = value.to_str() {
                    if let Some(token) = text.strip_prefix("Bearer ") {
                        out.push(token.to_owned());
                    }
                    out.push(text.to_owned());
                }
            }
        }
        if let TransportConfig::Stdio { env, .. } = &self.transport {
            out.extend(env.iter().map(|(_, v)| v.clone()));
        }
        out.extend(self.auth.client.client_secret.clone());
        out.retain(|s| !s.is_empty());
        out
    }
}
