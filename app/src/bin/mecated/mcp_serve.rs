//! `mecated mcp serve`: the catalog as one MCP server — on stdin/stdout (stdout
//! carries protocol frames only) until the client closes it, or with `--http-addr`
//! on streamable HTTP until SIGINT or SIGTERM; then the build is closed.

use std::process::ExitCode;
use std::time::Duration;

use app::{McpHttpOptions, McpHttpServer, McpServeOptions, McpServer};

use crate::cli::McpServeArgs;
use crate::out;
use crate::serve::{auth_token, shutdown, signals_then_build};
use crate::to_config::common_config;

/// Checks the flags (exit 2), builds with an interactive engine (asks go to the
/// client; exit 1 when the build fails), serves, closes; exit 0 after a clean end.
pub(crate) async fn mcp_serve(args: McpServeArgs) -> ExitCode {
    let auth_token = match args.http_addr.map(|addr| auth_token(&args.guard, addr)) {
        Some(Err(error)) => return error.exit(),
        Some(Ok(token)) => token,
        None => None,
    };
    let mut cfg = match common_config(&args.common) {
        Ok(cfg) => cfg,
        Err(error) => return error.exit(),
    };
    cfg.engine.interactive = true;
    cfg.engine.approve = args.approve;
    cfg.engine.mode = args.mode;
    let (signals, built) = match signals_then_build(cfg).await {
        Ok(ready) => ready,
        Err(code) => return code,
    };
    let options = McpServeOptions {
        mode: args.mode,
        call_timeout: Duration::from_secs(args.call_timeout),
        ..McpServeOptions::default()
    };
    let server = McpServer::new(built.host(), options);
    let served = match args.http_addr {
        None => tokio::select! {
            served = server.serve_stdio() => served.map_err(|error| error.to_string()),
            () = shutdown(signals) => Ok(()),
        },
        Some(addr) => {
            let http = McpHttpOptions {
                auth_token,
                allowed_hosts: args.guard.allowed_host,
                allowed_origins: args.guard.allowed_origin,
            };
            match McpHttpServer::bind(&server, addr, http).await {
                Ok(listener) => {
                    let local = listener.local_addr().unwrap_or(addr);
                    tracing::info!(%local, "serving the catalog over MCP");
                    out::stderr(&format!("mecated mcp serve: listening on http://{local}/mcp"));
                    listener
                        .serve(shutdown(signals))
                        .await
                        .map_err(|error| error.to_string())
                }
                Err(error) => Err(error.to_string()),
            }
        }
    };
    if let Err(error) = built.close().await {
        out::stderr(&format!("warning: {error}"));
    }
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            out::stderr(&format!("error: {error}"));
            ExitCode::FAILURE
        }
    }
}
