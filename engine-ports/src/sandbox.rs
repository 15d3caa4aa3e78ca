//! [`SandboxMode`] and [`SandboxStatus`]: how commands the harness starts (`Shell`,
//! opted-in stdio MCP servers) are confined, as flags name it and `session.init`
//! states it.

use serde::{Deserialize, Serialize};

use crate::Keyword;

/// How far a confined command may write (`--sandbox`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SandboxMode {
    /// Read anywhere; write only the workspace the command runs in, its private
    /// temporary directory and a few device files.
    #[default]
    #[serde(rename = "workspace-write")]
    WorkspaceWrite,
    /// Read anywhere; write only the private temporary directory and device files.
    #[serde(rename = "read-only")]
    ReadOnly,
    /// No confinement: the command runs with the harness's rights.
    #[serde(rename = "off")]
    Off,
}

crate::keyword_words! {
    SandboxMode {
        WorkspaceWrite => "workspace-write",
        ReadOnly => "read-only",
        Off => "off",
    }
    parse_error: ParseSandboxModeError { value }
}

/// A string that is not one of `workspace-write`, `read-only`, `off`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid sandbox mode {value:?}: expected one of {}", SandboxMode::expected())]
pub struct ParseSandboxModeError {
    /// The rejected text.
    pub value: String,
}

/// The sandbox in force for a session's `Shell`, as `session.init` and
/// `mecated tools` state it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxStatus {
    /// The mode in force: the one asked for, or `off` when the kernel could not
    /// confine and the fallback let commands run unconfined.
    pub mode: SandboxMode,
    /// Whether a confined command may open network (IPv4/IPv6) sockets.
    pub network: bool,
    /// Whether `Shell` calls are refused because the mode asked for cannot be
    /// honoured here (`--sandbox-fallback refuse`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub refused: bool,
}
