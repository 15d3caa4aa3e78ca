//! The [`Tool`] trait every catalog entry implements, [`ToolError`], and
//! [`with_args`], the typed start of a call.

use std::future::Future;

use async_trait::async_trait;
use engine_ports::{ToolCall, ToolResult, ToolSpec};
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::environment::Environment;

/// A tool the model can call.
///
/// One tool object serves every session, concurrently with itself: per-session state
/// comes from the [`Environment`], never from fields mutated per call.
///
/// # Contract
/// - `read_only` is a correctness promise: `true` lets calls overlap other read-only
///   calls and keeps the tool available in plan mode. A tool that mutates anything a
///   session can observe MUST return `false`. There is no default.
/// - Failures the model can act on (bad arguments, a missing file) are
///   `Ok(ToolResult::error(..))`; `Err(ToolError)` is for harness-level faults.
/// - `execute` MUST observe `cancel` and return promptly once it fires (the dispatcher
///   abandons it after a grace period).
/// - The result should answer `call.id()`; the dispatcher forces it otherwise.
///
/// Optional capabilities are provided methods with the safe default:
/// [`Tool::advertised_spec`] (Disclosable), [`Tool::plan_only`],
/// [`Tool::dispatch_serial`], [`Tool::call_read_only`], and what a listing for
/// another client says of the tool: [`Tool::output_schema`] and
/// [`Tool::destructive`].
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The full spec. A catalog reads it once, at registration (its name is the
    /// catalog key), and lists that for all turns: the spec is the same for the
    /// tool's life.
    fn spec(&self) -> ToolSpec;

    /// Whether the tool never mutates anything a session can observe. The same for
    /// the tool's life (a catalog reads it once, at registration, for its mode views).
    fn read_only(&self) -> bool;

    /// Runs one call.
    async fn execute(
        &self,
        cancel: &CancellationToken,
        call: &ToolCall,
        env: &Environment,
    ) -> Result<ToolResult, ToolError>;

    /// `Some(light spec)` makes the tool Disclosable: it is advertised with this spec
    /// until `ToolSearch` returns its full spec in a session (D3). Read once, at
    /// registration, as [`Tool::spec`].
    fn advertised_spec(&self) -> Option<ToolSpec> {
        None
    }

    /// Whether the tool is projected only in plan mode. Read once, at registration,
    /// as [`Tool::read_only`].
    fn plan_only(&self) -> bool {
        false
    }

    /// Whether calls of this (read-only) tool are kept out of concurrent batches.
    fn dispatch_serial(&self) -> bool {
        false
    }

    /// Whether this call is read-only: [`Tool::read_only`] unless the tool's arguments
    /// make a call mutating (a read-only tool whose call asks to change something).
    /// It may only narrow: for a mutating tool every call is mutating, whatever this
    /// returns. A call that is not read-only is dispatched like a mutating tool's
    /// (alone, through the permission policy as a mutating call) and is refused in
    /// plan mode (D1).
    fn call_read_only(&self, call: &ToolCall) -> bool {
        let _ = call;
        self.read_only()
    }

    /// The JSON schema of the structured part of a successful result, when the tool
    /// declares one (an MCP server's `outputSchema`); `None` by default.
    fn output_schema(&self) -> Option<serde_json::Value> {
        None
    }

    /// Whether a call may destroy or overwrite something rather than only add to it
    /// (MCP's `destructiveHint`): by default every tool that is not read-only may.
    fn destructive(&self) -> bool {
        !self.read_only()
    }
}

/// A harness-level tool failure (not something the model can act on).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The tool failed.
    #[error("{0}")]
    Failed(String),
    /// The tool observed cancellation.
    #[error("cancelled")]
    Cancelled,
    /// An I/O error.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Any other error.
    #[error("{0}")]
    Other(Box<dyn std::error::Error + Send + Sync>),
}

/// Runs `op` on the call's arguments parsed as `A`; arguments that do not parse get
/// the uniform invalid-arguments result ([`engine_ports::ArgsError::into_result`])
/// and `op` does not run.
pub async fn with_args<A, F>(call: &ToolCall, op: impl FnOnce(A) -> F) -> ToolResult
where
    A: DeserializeOwned,
    F: Future<Output = ToolResult>,
{
    match call.parse_args() {
        Ok(args) => op(args).await,
        Err(error) => error.into_result(call),
    }
}
