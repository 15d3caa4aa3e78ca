//! ToolHive discovery — reads already-running workloads from the ToolHive HTTP
//! API (`GET /api/v1beta/workloads` only), fail-soft, merged after static servers.

use std::time::Duration;

use engine_ports::{Diagnostic, Diagnostics, Level};
use serde::Deserialize;
use serde_json::Value;

use crate::config::{
    Expanded, OPERATOR_CONNECT_TIMEOUT, Redirects, ServerConfig, ServerSource, TransportConfig,
};
use crate::server_name::ServerName;

/// The API base when neither `--toolhive-url` nor `MECATED_TOOLHIVE_URL` is set.
pub(crate) const TOOLHIVE_DEFAULT_URL: &str = "http://127.0.0.1:8080";
/// The environment variable naming the API base.
pub(crate) const TOOLHIVE_URL_ENV: &str = "MECATED_TOOLHIVE_URL";
/// The ToolHive group used without `--toolhive-group`.
pub(crate) const TOOLHIVE_DEFAULT_GROUP: &str = "default";
/// Most workloads one consultation accepts (counted before filtering).
pub(crate) const MAX_WORKLOADS: usize = 128;
/// Largest response body accepted.
pub(crate) const MAX_BODY_BYTES: usize = 1024 * 1024;

const WORKLOADS_PATH: &str = "/api/v1beta/workloads";
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
const TOTAL_TIMEOUT: Duration = Duration::from_secs(5);

/// The API base: `--toolhive-url`, else `MECATED_TOOLHIVE_URL`, else the default.
pub fn toolhive_base_url(flag: Option<&str>, env: impl Fn(&str) -> Option<String>) -> String {
    flag.map(str::to_owned)
        .filter(|s| !s.trim().is_empty())
        .or_else(|| env(TOOLHIVE_URL_ENV).filter(|s| !s.trim().is_empty()))
        .unwrap_or_else(|| TOOLHIVE_DEFAULT_URL.to_owned())
}

/// Where and what to discover.
#[derive(Clone, Debug)]
pub struct ToolhiveOptions {
    /// The API base URL.
    pub base_url: String,
    /// `--toolhive-group` (`None`: `default`).
    pub group: Option<String>,
}

/// A workload that was not mapped to a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolhiveSkip {
    /// The workload (or server) name.
    pub name: String,
    /// Why it was skipped.
    pub reason: String,
    /// Its source, e.g. `toolhive(default)`.
    pub source: String,
}

/// What one consultation found.
#[derive(Debug, Default)]
pub struct ToolhiveDiscovery {
    /// Mapped workloads, sorted by name.
    pub servers: Vec<ServerConfig>,
    /// Skipped workloads, each logged as one WARN.
    pub skipped: Vec<ToolhiveSkip>,
    /// Everything logged, as data (D9).
    pub diagnostics: Diagnostics,
}

#[derive(Deserialize)]
struct Workloads {
    #[serde(default)]
    workloads: Option<Vec<Value>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Workload {
    name: Option<String>,
    url: Option<String>,
    transport_type: Option<String>,
    proxy_mode: Option<String>,
    status: Option<String>,
    group: Option<String>,
}

fn source_label(group: &str) -> String {
    format!("toolhive({group})")
}

fn warn_skip(diagnostics: &mut Diagnostics, skip: &ToolhiveSkip) {
    let message = format!(
        "MCP server {:?} from {} skipped: {}",
        skip.name, skip.source, skip.reason
    );
    tracing::warn!(server = %skip.name, source = %skip.source, reason = %skip.reason, "{message}");
    diagnostics.extend([Diagnostic {
        level: Level::Warn,
        message,
    }]);
}

/// Decodes a `{"workloads":[…]}` body for `group` (pure: no logging).
///
/// # Errors
/// A consultation failure: malformed JSON or more than [`MAX_WORKLOADS`] entries.
pub(crate) fn decode_workloads(
    body: &[u8],
    group: &str,
) -> Result<(Vec<ServerConfig>, Vec<ToolhiveSkip>), String> {
    let decoded: Workloads =
        serde_json::from_slice(body).map_err(|e| format!("the workload list is not valid JSON ({e})"))?;
    let entries = decoded.workloads.unwrap_or_default();
    if entries.len() > MAX_WORKLOADS {
        return Err(format!(
            "{} workloads exceed the limit of {MAX_WORKLOADS}; no ToolHive server is used",
            entries.len()
        ));
    }
    let source = source_label(group);
    let mut servers = Vec::new();
    let mut skipped = Vec::new();
    for entry in entries {
        let workload: Workload = serde_json::from_value(entry).unwrap_or_default();
        let workload_group = workload
            .group
            .as_deref()
            .filter(|g| !g.is_empty())
            .unwrap_or(TOOLHIVE_DEFAULT_GROUP);
        if workload_group != group {
            continue;
        }
        let name = workload.name.clone().unwrap_or_default();
        let skip = |reason: String| ToolhiveSkip {
            name: name.clone(),
            reason,
            source: source.clone(),
        };
        let status = workload.status.as_deref().unwrap_or("");
        if status != "running" {
            skipped.push(skip(format!("the workload is not running (status {status:?})")));
            continue;
        }
        if let Err(problem) = ServerName::check(&name) {
            skipped.push(skip(problem.to_string()));
            continue;
        }
        let transport = workload.transport_type.as_deref().unwrap_or("");
        let effective = if transport == "stdio" {
            match workload.proxy_mode.as_deref().unwrap_or("") {
                "" => "streamable-http",
                mode => mode,
            }
        } else {
            transport
        };
        if effective != "streamable-http" {
            skipped.push(skip(format!(
                "the workload is not served over streamable HTTP (proxy transport {effective:?})"
            )));
            continue;
        }
        let url = workload.url.clone().unwrap_or_default();
        if url.trim().is_empty() {
            skipped.push(skip("the workload has no URL".to_owned()));
            continue;
        }
        if crate::url_check::check_http_shape(&url).is_err() {
            skipped.push(skip(format!(
                "the workload URL {:?} is not an absolute http(s) URL",
                crate::redact::redact_url(&url)
            )));
            continue;
        }
        servers.push(ServerConfig {
            name,
            transport: TransportConfig::Http {
                url,
                headers: None,
                redirects: Redirects::SameOrigin,
            },
            connect_timeout: OPERATOR_CONNECT_TIMEOUT,
            source: ServerSource::Toolhive {
                group: group.to_owned(),
            },
            expanded: Expanded::default(),
            sandbox: None,
            auth: crate::config::AuthConfig::default(),
        });
    }
    servers.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((servers, skipped))
}

/// Consults the ToolHive API: never fatal. Not reachable → one INFO and no
/// servers; non-2xx, malformed JSON, an oversize body or too many entries → one
/// WARN and no servers; each skipped workload → one WARN.
pub async fn discover_toolhive(options: &ToolhiveOptions) -> ToolhiveDiscovery {
    let group = options.group.as_deref().unwrap_or(TOOLHIVE_DEFAULT_GROUP);
    let mut discovery = ToolhiveDiscovery::default();
    let base = options.base_url.trim_end_matches('/');
    let url = format!("{base}{WORKLOADS_PATH}");
    let shown = crate::redact::redact_url(&url);
    let body = match fetch(&url).await {
        Ok(body) => body,
        Err(Fetch::Unreachable(reason)) => {
            discovery.diagnostics.info(format!(
                "ToolHive not reachable at {shown} ({reason}); no ToolHive MCP servers"
            ));
            return discovery;
        }
        Err(Fetch::Failed(reason)) => {
            discovery.diagnostics.warn(format!(
                "ToolHive consultation at {shown} failed: {reason}; no ToolHive MCP servers"
            ));
            return discovery;
        }
    };
    match decode_workloads(&body, group) {
        Ok((servers, skipped)) => {
            for skip in &skipped {
                warn_skip(&mut discovery.diagnostics, skip);
            }
            discovery.servers = servers;
            discovery.skipped = skipped;
        }
        Err(reason) => discovery
            .diagnostics
            .warn(format!("ToolHive consultation at {shown} failed: {reason}")),
    }
    discovery
}

enum Fetch {
    Unreachable(String),
    Failed(String),
}

async fn fetch(url: &str) -> Result<Vec<u8>, Fetch> {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(TOTAL_TIMEOUT)
        .build()
        .map_err(|e| Fetch::Failed(format!("cannot build the HTTP client: {e}")))?;
    let unreachable = |e: &reqwest::Error| e.is_connect() || e.is_timeout();
    let mut response = client.get(url).send().await.map_err(|e| {
        let text = crate::redact::redact_text(&e.to_string(), &[]);
        if unreachable(&e) {
            Fetch::Unreachable(text)
        } else {
            Fetch::Failed(text)
        }
    })?;
    if !response.status().is_success() {
        return Err(Fetch::Failed(format!("HTTP {}", response.status())));
    }
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                body.extend_from_slice(&chunk);
                if body.len() > MAX_BODY_BYTES {
                    return Err(Fetch::Failed(format!(
                        "the response body exceeds {MAX_BODY_BYTES} bytes"
                    )));
                }
            }
            Ok(None) => return Ok(body),
            Err(e) if e.is_timeout() => return Err(Fetch::Unreachable(e.to_string())),
            Err(e) => return Err(Fetch::Failed(crate::redact::redact_text(&e.to_string(), &[]))),
        }
    }
}

/// The server list of one process: static servers in flag order, then ToolHive
/// servers sorted by name, with what was skipped and logged.
#[derive(Debug, Default)]
pub struct MergedServers {
    /// The servers, in connect and registration order.
    pub servers: Vec<ServerConfig>,
    /// ToolHive workloads that were skipped (discovery skips and name clashes).
    pub skipped: Vec<ToolhiveSkip>,
    /// Everything logged, as data (D9).
    pub diagnostics: Diagnostics,
}

/// Merges static servers and a ToolHive discovery: a workload whose name equals a
/// static name (case-insensitively) is skipped, naming the kept and the dropped
/// source. No server at all → one INFO saying MCP is disabled.
pub fn merge_servers(static_servers: Vec<ServerConfig>, toolhive: ToolhiveDiscovery) -> MergedServers {
    let mut merged = MergedServers {
        skipped: toolhive.skipped,
        diagnostics: toolhive.diagnostics,
        servers: static_servers,
    };
    for server in toolhive.servers {
        let source = server.source.to_string();
        if let Some(kept) = merged
            .servers
            .iter()
            .find(|s| s.source == ServerSource::Static && s.name.eq_ignore_ascii_case(&server.name))
        {
            let skip = ToolhiveSkip {
                reason: format!(
                    "the static server {:?} (--mcp-server/--mcp-stdio) is kept; the workload {:?} from {source} is dropped",
                    kept.name, server.name
                ),
                name: server.name.clone(),
                source,
            };
            warn_skip(&mut merged.diagnostics, &skip);
            merged.skipped.push(skip);
            continue;
        }
        merged.servers.push(server);
    }
    if merged.servers.is_empty() {
        merged
            .diagnostics
            .info("MCP disabled: no MCP server from --mcp-server, --mcp-stdio or ToolHive");
    }
    merged
}
