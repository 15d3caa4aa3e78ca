//! `mecated chat`: the terminal client (the `adapter-tui` face) on an interactive
//! engine. Sessions are stored like `run`'s — in `--store-dir` / `--store-url`, else
//! in the workspace's chat directory under the XDG state directory, beside the prompt
//! history — so `--resume` can continue them. This binary installs what a library
//! must not: the SIGINT and SIGTERM handlers (forwarded to the chat) and a panic hook
//! that restores the terminal before the panic is reported.

use std::process::ExitCode;

use adapter_tui::{ChatOptions, Resume, Signals};
use app::{MemoryEnv, build};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use crate::cli::ChatArgs;
use crate::out;
use crate::to_config::interactive_config;

/// Builds with an interactive engine, chats until the person leaves, closes.
/// Exit 0 after a normal end; 1 when the build, the session or the terminal fails.
pub(crate) async fn chat(mut args: ChatArgs) -> ExitCode {
    // The workspace's chat directory (named by the canonical workspace, as the
    // memory directory is); a bad --workspace is reported by the config below.
    let chat_dir = std::fs::canonicalize(&args.common.workspace)
        .ok()
        .and_then(|workspace| MemoryEnv::from_process().chat_dir(&workspace));
    if args.common.store_dir.is_none() && args.common.store_url.is_none() {
        args.common.store_dir = chat_dir.as_ref().map(|dir| dir.join("sessions"));
    }
    let mut cfg = match interactive_config(&args.common, &args.model) {
        Ok(cfg) => cfg,
        Err(error) => return error.exit(),
    };
    cfg.engine.approve = args.approve;
    cfg.limits.max_turns = args.max_turns;
    let built = match build(cfg).await {
        Ok(built) => built,
        Err(error) => return out::failure(error),
    };
    let options = ChatOptions {
        history: chat_dir.map(|dir| dir.join("history")),
        resume: match args.resume {
            None => Resume::New,
            Some(id) if id.is_empty() => Resume::Pick,
            Some(id) => Resume::Session(id),
        },
        mode: args.mode,
    };
    let (signals, forwarders) = forward_signals();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        adapter_tui::restore_terminal();
        previous(info);
    }));
    let chatted = adapter_tui::chat(built.host(), options, signals).await;
    for forwarder in forwarders {
        forwarder.abort();
    }
    if let Err(error) = built.close().await {
        out::stderr(&format!("warning: {error}"));
    }
    match chatted {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => out::failure(error),
    }
}

/// SIGINT and SIGTERM forwarded to the chat as messages.
fn forward_signals() -> (Signals, Vec<tokio::task::JoinHandle<()>>) {
    let mut forwarders = Vec::new();
    let mut forward = |kind: SignalKind, name: &str| {
        let (tx, rx) = mpsc::unbounded_channel();
        match signal(kind) {
            Ok(mut stream) => forwarders.push(tokio::spawn(async move {
                while stream.recv().await.is_some() {
                    if tx.send(()).is_err() {
                        break;
                    }
                }
            })),
            Err(error) => out::stderr(&format!("warning: {name} cannot be handled: {error}")),
        }
        rx
    };
    let interrupt = forward(SignalKind::interrupt(), "SIGINT");
    let terminate = forward(SignalKind::terminate(), "SIGTERM");
    (Signals { interrupt, terminate }, forwarders)
}
