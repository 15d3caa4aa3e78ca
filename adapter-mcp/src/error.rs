//! [`McpError`]: what a live MCP operation can end with, and the exact model-visible
//! texts (its `Display`).

use std::fmt;

/// The live operation a request belongs to; it picks the error prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Operation {
    /// `tools/call`.
    CallTool,
    /// `resources/read`.
    ReadResource,
    /// `prompts/get`.
    GetPrompt,
    /// A (re-)listing of tools, resources or prompts.
    List,
    /// Closing a server.
    Close,
}

impl Operation {
    /// The prefix of this operation's error texts (`mcp call failed`, …).
    pub fn prefix(self) -> &'static str {
        match self {
            Self::CallTool => "mcp call failed",
            Self::ReadResource => "mcp resource read failed",
            Self::GetPrompt => "mcp prompt get failed",
            Self::List => "mcp list failed",
            Self::Close => "mcp close failed",
        }
    }

    /// The MCP method of this operation, as a timeout names it.
    pub fn method(self) -> &'static str {
        match self {
            Self::CallTool => "tools/call",
            Self::ReadResource => "resources/read",
            Self::GetPrompt => "prompts/get",
            Self::List => "a listing",
            Self::Close => "close",
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::CallTool => "tool call",
            Self::ReadResource => "resource read",
            Self::GetPrompt => "prompt get",
            Self::List => "listing",
            Self::Close => "close",
        })
    }
}

/// A failed MCP operation. `Display` is the model-visible text: it never carries
/// header values, tokens, URL user info or queries, nor raw transport detail for
/// the two "unavailable" cases.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// No server of that name (an invalid-argument class error).
    #[error("unknown MCP server {server:?}: no connected MCP server has this name")]
    UnknownServer {
        /// The name asked for.
        server: String,
    },
    /// The server (or its manager) was closed; nothing was sent.
    #[error("{}: MCP server {server:?} is closed", operation.prefix())]
    Closed {
        /// The server.
        server: String,
        /// The operation.
        operation: Operation,
    },
    /// The session dropped and the single reconnect (or the resend after it) failed.
    #[error("{}: MCP server {server:?} unavailable after reconnect", operation.prefix())]
    UnavailableAfterReconnect {
        /// The server.
        server: String,
        /// The operation.
        operation: Operation,
    },
    /// The connection broke after the request may have reached the server (D13):
    /// it was not resent.
    #[error("{}: MCP server {server:?} unavailable; request outcome is unknown", operation.prefix())]
    OutcomeUnknown {
        /// The server.
        server: String,
        /// The operation.
        operation: Operation,
    },
    /// No reply within the request timeout (restarted by each progress notification)
    /// or the longest call allowed: the server was sent `notifications/cancelled`;
    /// whether the request ran is unknown.
    #[error(
        "{}: MCP server {server:?} did not answer {subject} within {}; request outcome is unknown",
        operation.prefix(),
        crate::server::seconds(*after)
    )]
    TimedOut {
        /// The server.
        server: String,
        /// The operation.
        operation: Operation,
        /// What was asked: the remote tool name of a call, else the method.
        subject: String,
        /// The limit that ran out.
        after: std::time::Duration,
    },
    /// The reply went over the size limit of one message, seen as soon as it
    /// passed the limit: the server was sent `notifications/cancelled` and the
    /// reply discarded (the session stays).
    #[error(
        "{}: MCP server {server:?} answered {subject} with more than {limit} bytes, the limit of one message; the result was discarded",
        operation.prefix()
    )]
    TooLarge {
        /// The server.
        server: String,
        /// The operation.
        operation: Operation,
        /// What was asked: the remote tool name of a call, else the method.
        subject: String,
        /// The limit in bytes.
        limit: usize,
    },
    /// The server answered with a JSON-RPC error (a successful round trip).
    #[error("{}: {message} (JSON-RPC error {code})", operation.prefix())]
    Remote {
        /// The server.
        server: String,
        /// The operation.
        operation: Operation,
        /// The JSON-RPC error code.
        code: i32,
        /// The error message, verbatim but redacted.
        message: String,
    },
    /// Any other failure, verbatim but redacted.
    #[error("{}: {message}", operation.prefix())]
    Failed {
        /// The server.
        server: String,
        /// The operation.
        operation: Operation,
        /// What went wrong.
        message: String,
    },
    /// The caller cancelled; the request future was dropped (the server is told).
    #[error("cancelled")]
    Cancelled,
}

impl McpError {
    /// Whether the caller passed an invalid argument (an unknown server name).
    pub fn is_invalid_argument(&self) -> bool {
        matches!(self, Self::UnknownServer { .. })
    }

    /// Whether this is the caller's own cancellation.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, Self::Cancelled)
    }

    /// The server the error is about, if any.
    pub fn server(&self) -> Option<&str> {
        match self {
            Self::UnknownServer { server }
            | Self::Closed { server, .. }
            | Self::UnavailableAfterReconnect { server, .. }
            | Self::OutcomeUnknown { server, .. }
            | Self::TimedOut { server, .. }
            | Self::TooLarge { server, .. }
            | Self::Remote { server, .. }
            | Self::Failed { server, .. } => Some(server),
            Self::Cancelled => None,
        }
    }
}
