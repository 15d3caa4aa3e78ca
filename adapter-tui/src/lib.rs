//! The terminal face of Mecatl: `mecated chat`, an interactive session in the
//! terminal, and its plain line mode for scripts.
//!
//! Like every face it depends on `engine-ports` and `engine-core` only and reaches
//! the composition root through the host port ([`SessionHost`]): it opens the
//! session's engine there, runs prompts on it, answers its asks and questions, and
//! reads the store for the past sessions of the workspace. It decides nothing the
//! engine decides: modes, permissions, rules and hooks stay the engine's and the
//! host's.
//!
//! [`chat`] picks the mode: with stdin and stdout on a terminal, the interactive one
//! (raw mode, the answer streamed with Markdown, asks answered with one key, the
//! prompt editor with history and completion); otherwise the plain one (prompts read
//! line by line, plain text out, asks answered by `y`/`a`/`n` lines). The terminal is
//! left as it was found on every way out: [`restore_terminal`] is for the host's
//! panic hook.

mod chat;
mod commands;
mod diff;
mod editor;
mod history;
mod markdown;
mod plain;
mod session;
mod style;
mod term;
mod tui;
mod view;

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::sync::Arc;

use engine_core::host::SessionHost;
use engine_ports::PermissionMode;
use tokio::sync::mpsc;

/// Which session a chat talks to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Resume {
    /// A new session, created at the first prompt.
    #[default]
    New,
    /// A stored session of the workspace the person picks from a list, newest first.
    Pick,
    /// This stored session.
    Session(String),
}

/// How a chat starts.
#[derive(Clone, Debug, Default)]
pub struct ChatOptions {
    /// The file of the prompt history (the interactive mode reads and appends it;
    /// `None` keeps no history).
    pub history: Option<PathBuf>,
    /// Which session.
    pub resume: Resume,
    /// The mode of the session (else a new session gets the engine's, a continued
    /// one keeps its own).
    pub mode: Option<PermissionMode>,
}

/// The signals the host forwards (installing handlers is the binary's business):
/// an interrupt cancels the running turn (at an idle prompt it ends the plain mode);
/// a termination cancels the turn and ends the chat, restoring the terminal.
#[derive(Debug)]
pub struct Signals {
    /// SIGINT (in the interactive mode Ctrl-C arrives as a key instead).
    pub interrupt: mpsc::UnboundedReceiver<()>,
    /// SIGTERM.
    pub terminate: mpsc::UnboundedReceiver<()>,
}

/// Why a chat could not go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChatError {
    /// The session could not be opened or continued.
    #[error("{0}")]
    Session(String),
    /// The terminal could not be set up or written.
    #[error("the terminal: {0}")]
    Terminal(#[from] std::io::Error),
}

/// Whether stdin and stdout are both a terminal (the interactive mode).
pub fn stdio_is_terminal() -> bool {
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// Runs a chat until the person leaves, stdin ends or a termination arrives:
/// interactive on a terminal, plain otherwise (see the crate doc).
///
/// # Errors
/// [`ChatError`]: the session could not be opened, the terminal failed.
pub async fn chat(
    host: Arc<dyn SessionHost>,
    options: ChatOptions,
    signals: Signals,
) -> Result<(), ChatError> {
    if stdio_is_terminal() {
        tui::run(host, options, signals).await
    } else {
        plain::run(host, options, signals).await
    }
}

/// Puts the terminal back as the chat found it (cooked mode, cursor shown, bracketed
/// paste off) if the interactive mode had changed it; nothing otherwise. For the
/// host's panic hook: a chat leaving normally restores it itself.
pub fn restore_terminal() {
    term::restore();
}
