//! `mecated mcp login|logout|list`: the logins of remote MCP servers. A login is the
//! product's own connect to the configured server with a person answering its
//! request for authorization in a browser; the login is stored in the user's state
//! directory for later `run`, `serve` and `acp` processes, which never start a
//! browser themselves.

use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use adapter_mcp::{AuthStatus, BrowserLogin, LoginOutcome, ServerConfig, TokenStore, TransportConfig};
use serde_json::json;

use crate::cli::{McpListArgs, McpLoginArgs, McpServerArgs};
use crate::out;
use crate::to_config::{common_config, token_store};
use crate::usage::UsageError;

/// The configured server `name` and where logins live.
fn configured(args: &McpServerArgs) -> Result<(ServerConfig, TokenStore), ExitCode> {
    let cfg = common_config(&args.common).map_err(|e| e.exit())?;
    let names: Vec<String> = cfg.mcp.servers.iter().map(|s| s.name.clone()).collect();
    let Some(server) = cfg.mcp.servers.into_iter().find(|s| s.name == args.name) else {
        return Err(UsageError::value(
            "NAME",
            &args.name,
            if names.is_empty() {
                "no MCP server is configured (name one with --mcp-server NAME=URL or an --mcp-config file)"
                    .to_owned()
            } else {
                format!("expected a configured MCP server: {}", names.join(", "))
            },
        )
        .exit());
    };
    let (store, _) = token_store(&args.common.workspace);
    Ok((server, store))
}

fn server_url(server: &ServerConfig) -> Option<&str> {
    match &server.transport {
        TransportConfig::Http { url, .. } => Some(url),
        _ => None,
    }
}

/// `mecated mcp login NAME`.
pub(crate) async fn login(args: McpLoginArgs) -> ExitCode {
    let (server, store) = match configured(&args.server) {
        Ok(found) => found,
        Err(code) => return code,
    };
    let Some(dir) = store.path().map(|p| p.display().to_string()) else {
        return out::failure(
            "there is no place to store the login: set HOME or XDG_STATE_HOME (outside the workspace)",
        );
    };
    let name = server.name.clone();
    let no_browser = args.no_browser;
    let open_name = name.clone();
    let browser = BrowserLogin {
        open: Arc::new(move |url: &str| show(&open_name, url, no_browser)),
        timeout: Duration::from_secs(args.login_timeout),
    };
    match adapter_mcp::login(server, store, browser).await {
        Ok(LoginOutcome::LoggedIn) => {
            out::stdout(&format!(
                "Logged in to MCP server {name:?}; the login is stored in {dir}."
            ));
            ExitCode::SUCCESS
        }
        Ok(LoginOutcome::NotRequired) => {
            out::stdout(&format!(
                "MCP server {name:?} did not ask for a login; nothing was stored."
            ));
            ExitCode::SUCCESS
        }
        Ok(_) => ExitCode::SUCCESS,
        Err(error) => out::failure(error),
    }
}

/// Shows the authorization URL: in the browser (`$BROWSER`, else `xdg-open`)
/// unless `no_browser`, and on stderr whenever no browser could be started.
fn show(server: &str, url: &str, no_browser: bool) {
    if !no_browser && open_browser(url) {
        out::stderr(&format!("Opened the browser to log in to MCP server {server:?}."));
        return;
    }
    out::stderr(&format!(
        "To log in to MCP server {server:?}, open this URL in a browser:\n\n  {url}\n"
    ));
}

/// Starts `$BROWSER` (its first `:`-separated entry; `%s` stands for the URL, else
/// the URL is the last argument) or `xdg-open`; whether it started. It is not waited
/// for beyond a minute.
fn open_browser(url: &str) -> bool {
    let command = std::env::var("BROWSER").ok().and_then(|value| {
        value
            .split(':')
            .map(str::trim)
            .find(|e| !e.is_empty())
            .map(str::to_owned)
    });
    let mut words = match command {
        Some(command) => match shell_words::split(&command) {
            Ok(words) if !words.is_empty() => words,
            _ => return false,
        },
        None => vec!["xdg-open".to_owned()],
    };
    if words.iter().any(|w| w.contains("%s")) {
        for word in &mut words {
            *word = word.replace("%s", url);
        }
    } else {
        words.push(url.to_owned());
    }
    let spawned = tokio::process::Command::new(&words[0])
        .args(&words[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(false)
        .spawn();
    match spawned {
        Ok(mut child) => {
            tokio::spawn(async move {
                let _ = tokio::time::timeout(Duration::from_secs(60), child.wait()).await;
            });
            true
        }
        Err(_) => false,
    }
}

/// `mecated mcp logout NAME`.
pub(crate) fn logout(args: &McpServerArgs) -> ExitCode {
    let (server, store) = match configured(args) {
        Ok(found) => found,
        Err(code) => return code,
    };
    let name = &server.name;
    let Some(url) = server_url(&server) else {
        out::stdout(&format!(
            "MCP server {name:?} uses the {} transport: it has no login.",
            server.transport_kind()
        ));
        return ExitCode::SUCCESS;
    };
    match store.remove(url) {
        Ok(true) => {
            out::stdout(&format!(
                "Logged out of MCP server {name:?}: its stored login was removed."
            ));
            ExitCode::SUCCESS
        }
        Ok(false) => {
            out::stdout(&format!("No login was stored for MCP server {name:?}."));
            ExitCode::SUCCESS
        }
        Err(error) => out::failure(error),
    }
}

/// `mecated mcp list`.
pub(crate) fn list(args: &McpListArgs) -> ExitCode {
    let cfg = match common_config(&args.common) {
        Ok(cfg) => cfg,
        Err(error) => return error.exit(),
    };
    let (store, _) = token_store(&args.common.workspace);
    let mut rows = Vec::new();
    for server in &cfg.mcp.servers {
        let (auth, expires_at) = match server_url(server) {
            None => ("none".to_owned(), None),
            Some(_) if server.has_static_authorization() => ("token (configured header)".to_owned(), None),
            Some(url) => match store.status(url) {
                Ok(AuthStatus::LoggedIn {
                    expires_at,
                    renewable,
                }) => {
                    let expiry = expires_at.map(|at| {
                        let time = engine_ports::format_rfc3339_micros(UNIX_EPOCH + Duration::from_secs(at));
                        let time = time.split('.').next().map_or(time.clone(), |t| format!("{t}Z"));
                        if renewable {
                            format!(" (expires {time}, renewed automatically)")
                        } else {
                            format!(" (expires {time})")
                        }
                    });
                    (format!("logged in{}", expiry.unwrap_or_default()), expires_at)
                }
                Ok(AuthStatus::NeedsLogin) => {
                    (format!("needs login (mecated mcp login {})", server.name), None)
                }
                Ok(_) => ("none".to_owned(), None),
                Err(error) => (format!("unreadable login: {error}"), None),
            },
        };
        rows.push((server, auth, expires_at));
    }
    if args.json {
        let servers: Vec<_> = rows
            .iter()
            .map(|(server, auth, expires_at)| {
                json!({
                    "name": server.name,
                    "transport": server.transport_kind().as_str(),
                    "endpoint": server.endpoint_for_display(),
                    "auth": auth,
                    "expires_at": expires_at,
                })
            })
            .collect();
        out::stdout(&json!({ "servers": servers }).to_string());
        return ExitCode::SUCCESS;
    }
    if rows.is_empty() {
        out::stdout("No MCP server is configured (--mcp-server NAME=URL, --mcp-stdio, --mcp-config FILE).");
    }
    for (server, auth, _) in &rows {
        out::stdout(&format!(
            "{}\t{}\t{}\t{auth}",
            server.name,
            server.transport_kind(),
            server.endpoint_for_display()
        ));
    }
    for note in &cfg.mcp.notes {
        out::stderr(&format!("warning: {}", note.message));
    }
    ExitCode::SUCCESS
}
