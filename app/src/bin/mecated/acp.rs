//! `mecated acp`: the Agent Client Protocol on stdin/stdout — stdout carries protocol
//! frames only (logs go to stderr); a bad input line is answered with a parse error
//! and skipped; EOF on stdin lets running prompts finish within `--drain-secs`, then
//! closes every session and the build; SIGTERM closes them at once.

use std::process::ExitCode;
use std::time::Duration;

use app::{AcpServer, acp_stdio_transport, build};
use tokio::signal::unix::{SignalKind, signal};

use crate::cli::AcpArgs;
use crate::out;
use crate::to_config::interactive_config;

/// Builds with an interactive engine (asks go to the client), serves ACP on stdio
/// until stdin ends, then closes. Exit 0 after a clean EOF; 1 when the build or the
/// transport fails.
pub(crate) async fn acp(args: AcpArgs) -> ExitCode {
    let cfg = match interactive_config(&args.common, &args.model) {
        Ok(cfg) => cfg,
        Err(error) => return error.exit(),
    };
    let built = match build(cfg).await {
        Ok(built) => built,
        Err(error) => return out::failure(error),
    };
    // SIGTERM ends serving like EOF does, so the close below still runs (it stops the
    // runs and removes their workspace copies).
    let server = AcpServer::new(built.host()).with_drain(Duration::from_secs(args.drain_secs));
    let served = match signal(SignalKind::terminate()) {
        Ok(mut terminate) => tokio::select! {
            served = server.serve(acp_stdio_transport()) => served,
            _ = terminate.recv() => {
                tracing::info!("SIGTERM received");
                Ok(())
            }
        },
        Err(error) => {
            out::stderr(&format!("warning: SIGTERM cannot be handled: {error}"));
            server.serve(acp_stdio_transport()).await
        }
    };
    let closed = built.close().await;
    if let Err(error) = closed {
        out::stderr(&format!("warning: {error}"));
    }
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => out::failure(error),
    }
}
