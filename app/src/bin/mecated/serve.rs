//! `mecated serve`: the HTTP + SSE API until SIGINT or SIGTERM, then an orderly
//! shutdown (drain: no new sessions or prompts while running turns finish, within
//! `--drain-secs`; then stop accepting, cancel the runs left, close sessions,
//! `Built::close` — the store flushed, leases released — exit 0).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use app::{AppConfig, AuthToken, Built, HttpOptions, HttpServer, MetricsText, build};
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::cli::{HttpGuardArgs, ServeArgs};
use crate::out;
use crate::to_config::{env_var, interactive_config};
use crate::usage::UsageError;

/// The variable holding the API's bearer token (preferred over `--auth-token`).
const AUTH_TOKEN_ENV: &str = "MECATED_AUTH_TOKEN";

/// Checks the flags (exit 2), builds with interactive engines (exit 1 when the build
/// fails), listens, prints `mecated serve: listening on http://ADDR` on stderr and
/// serves until SIGINT or SIGTERM; exit 0 after an orderly shutdown.
pub(crate) async fn serve(args: ServeArgs) -> ExitCode {
    let auth_token = match auth_token(&args.guard, args.http_addr) {
        Ok(token) => token,
        Err(error) => return error.exit(),
    };
    let mut cfg = match interactive_config(&args.common, &args.model) {
        Ok(cfg) => cfg,
        Err(error) => return error.exit(),
    };
    // `GET /metrics` (unless OTEL_SDK_DISABLED=true).
    cfg.telemetry.prometheus = true;
    let (signals, built) = match signals_then_build(cfg).await {
        Ok(ready) => ready,
        Err(code) => return code,
    };
    let options = HttpOptions {
        auth_token,
        allowed_hosts: args.guard.allowed_host,
        allowed_origins: args.guard.allowed_origin,
        drain: Duration::from_secs(args.drain_secs),
        max_live_sessions: args.max_live_sessions,
        idle_unload: Duration::from_secs(args.idle_unload_secs),
        metrics: built.metrics_text().map(MetricsText::new),
        ..HttpOptions::default()
    };
    let code = match HttpServer::bind(built.host(), args.http_addr, options).await {
        Ok(server) => {
            let addr = server.local_addr();
            tracing::info!(%addr, "serving the HTTP API");
            out::stderr(&format!("mecated serve: listening on http://{addr}"));
            out::stderr(&format!(
                "mecated serve: Mecatl Studio at http://{addr}/ (open it in a browser)"
            ));
            match server.serve(shutdown(signals)).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => out::failure(error),
            }
        }
        Err(error) => out::failure(error),
    };
    if let Err(error) = built.close().await {
        out::stderr(&format!("warning: {error}"));
    }
    tracing::info!("stopped");
    code
}

/// The token from `MECATED_AUTH_TOKEN` (preferred) or `--auth-token`; a usage error
/// for an empty `--auth-token`, or a non-loopback `--http-addr` without a token.
pub(crate) fn auth_token(
    args: &HttpGuardArgs,
    http_addr: std::net::SocketAddr,
) -> Result<Option<AuthToken>, UsageError> {
    let from_env = env_var(AUTH_TOKEN_ENV).and_then(|token| AuthToken::new(&token));
    let from_flag = match &args.auth_token {
        Some(token) => Some(AuthToken::new(token).ok_or_else(|| {
            UsageError::value(
                "--auth-token",
                "",
                "expected a non-empty token (or set MECATED_AUTH_TOKEN)",
            )
        })?),
        None => None,
    };
    if from_env.is_some() && from_flag.is_some() {
        tracing::info!("{AUTH_TOKEN_ENV} is set: it is used instead of --auth-token");
    }
    let token = from_env.or(from_flag);
    if token.is_none() && !http_addr.ip().is_loopback() {
        return Err(UsageError::value(
            "--http-addr",
            http_addr,
            format!(
                "it is not a loopback address, so the API would be open to the network without authentication: \
                 set {AUTH_TOKEN_ENV} (preferred) or pass --auth-token TOKEN, or listen on 127.0.0.1"
            ),
        ));
    }
    Ok(token)
}

/// SIGINT and SIGTERM, which end a server ([`shutdown`]).
pub(crate) type Signals = (Signal, Signal);

/// What a server needs before it listens: the shutdown signals, installed first so
/// no early signal is lost, then the build. On failure, the exit code after the
/// error is printed (1).
pub(crate) async fn signals_then_build(cfg: AppConfig) -> Result<(Signals, Arc<Built>), ExitCode> {
    let signals = match (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) {
        (Ok(interrupt), Ok(terminate)) => (interrupt, terminate),
        (Err(error), _) | (_, Err(error)) => {
            out::stderr(&format!("error: cannot install the signal handlers: {error}"));
            return Err(ExitCode::FAILURE);
        }
    };
    match build(cfg).await {
        Ok(built) => Ok((signals, Arc::new(built))),
        Err(error) => Err(out::failure(error)),
    }
}

/// Resolves at the first SIGINT or SIGTERM.
pub(crate) async fn shutdown(signals: Signals) {
    let (mut interrupt, mut terminate) = signals;
    let name = tokio::select! {
        _ = interrupt.recv() => "SIGINT",
        _ = terminate.recv() => "SIGTERM",
    };
    tracing::info!("{name} received");
}
