//! The audit port: [`ToolCallRecorder`] and the [`ToolCallRecord`] it writes.

use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::call::ToolCall;
use crate::clock::format_rfc3339_micros;
use crate::ids::{SessionId, ToolCallId};
use crate::permission::Approval;
use crate::result::ToolResult;
use crate::rules::Provenance;
use crate::store::StoreError;

/// The per-call audit seam, distinct from events and diagnostics.
///
/// The engine calls `record` once per **decided** call with the record it built
/// once: its time read from the engine's [`Clock`](crate::Clock) (the Unix epoch for
/// an engine without one), who decided ([`Approval`]), and
/// - an executed call after the PostToolUse hook, with the effective call (rewritten
///   arguments included), the final result, the queue and execution times and the
///   approval that let it run;
/// - a call the policy, the user or a hook refused, with the refusal the model saw as
///   an error result, zero times and an approval whose verdict is `deny` (so a
///   record with a `deny` verdict is a call that never ran).
///
/// Calls the mode refused (an unknown tool, a mutating call in plan mode) are
/// recorded too, with a `mode` approval; calls cancelled before they were decided
/// or started are not.
///
/// # Contract
/// - The record is written as given, every field (the `time` included) unchanged:
///   a recorder never stamps its own time.
/// - Records of one session keep the order of `record` calls; sessions never mix.
/// - A failure returns [`RecorderError`] naming the session, the call, the tool and
///   the cause; it never panics. The engine logs it at WARN and changes nothing else,
///   so a recorder must never block a run beyond its own bounded timeout.
/// - A recorder may buffer (`record` then succeeds before the write). `flush` writes
///   what the session's records still buffer and reports, once, any of its records
///   lost since the last `flush` (the default: nothing is buffered, nothing to report).
///   Engines that require audit call it at every turn boundary.
#[async_trait]
pub trait ToolCallRecorder: Send + Sync {
    /// Records one decided call (of the session `record.session_id`).
    async fn record(&self, record: &ToolCallRecord) -> Result<(), RecorderError>;

    /// Writes the session's buffered records; reports records lost since the last
    /// flush.
    async fn flush(&self, session: &SessionId) -> Result<(), RecorderError> {
        let _ = session;
        Ok(())
    }
}

/// The read side of the audit: a session's records as its recorder wrote them.
///
/// The stores that record calls (JSONL, PostgreSQL, in memory) implement it, so a
/// face can show a session's calls with who decided and how long they queued and
/// took, which the events do not carry.
///
/// # Contract
/// - `read` returns the session's records in the order `record` was called, every
///   record already acknowledged included (a buffering recorder writes its buffer
///   first); an unknown session has none (`Ok(vec![])`).
/// - A record that cannot be decoded fails the read with [`StoreError::Corrupt`]
///   naming where; it never panics.
#[async_trait]
pub trait ToolCallLog: Send + Sync {
    /// The records of `session`, in recording order.
    async fn read(&self, session: &SessionId) -> Result<Vec<ToolCallRecord>, StoreError>;
}

/// A record the recorder could not write (the record is dropped).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecorderError {
    /// Writing the record failed.
    #[error("dropped audit record of call {call_id} ({tool}) in session {session_id:?}: {cause}")]
    Failed {
        /// The session.
        session_id: SessionId,
        /// The call.
        call_id: ToolCallId,
        /// The tool.
        tool: String,
        /// What went wrong.
        cause: String,
    },
    /// Buffered records of a session could not be written (reported by `flush`).
    #[error("dropped buffered audit records of session {session_id:?}: {cause}")]
    Lost {
        /// The session.
        session_id: SessionId,
        /// What went wrong.
        cause: String,
    },
}

impl RecorderError {
    /// Records of `session` that a buffered write lost.
    pub fn lost(session: &SessionId, cause: impl Into<String>) -> Self {
        Self::Lost {
            session_id: session.clone(),
            cause: cause.into(),
        }
    }

    /// A failure writing `record`.
    pub fn failed(record: &ToolCallRecord, cause: impl Into<String>) -> Self {
        Self::Failed {
            session_id: record.session_id.clone(),
            call_id: record.call_id.clone(),
            tool: record.tool.clone(),
            cause: cause.into(),
        }
    }
}

/// One audit record, in the field order of a `.tools.jsonl` line:
/// `{"type":"tool_call","time","session_id","call_id","tool","args","result",
/// "is_error","queued_micros","took_micros","approval":{"by","verdict"},
/// "provenance":{"rule","source","hook","reason"},"caller":{"surface","client","subject"}}`.
///
/// `approval` is optional for readers: lines written before it existed have none;
/// `caller` is present only for calls a client made directly (the MCP server face),
/// not for the calls of a run's model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    /// Always `tool_call`.
    #[serde(rename = "type")]
    pub record_type: String,
    /// Write time, UTC RFC 3339 with fractional seconds.
    pub time: String,
    /// The real session id.
    pub session_id: SessionId,
    /// The (normalized) call id.
    pub call_id: ToolCallId,
    /// The real catalog name (never a wire-encoded name).
    pub tool: String,
    /// `ToolCall::args_value()`, the value the `tool.call` event carries.
    pub args: serde_json::Value,
    /// The final result content.
    pub result: String,
    /// Whether the result is an error.
    pub is_error: bool,
    /// Time between the turn's enqueue instant and the start of execution.
    pub queued_micros: u64,
    /// Execution time.
    pub took_micros: u64,
    /// Who decided whether the call runs, and what (absent in older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
    /// What exactly decided: the rule and its file, the hook's command and reason,
    /// the mode's refusal (absent when the approval says it all, and in older
    /// records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
    /// Who made the call when a client called the tool directly rather than a
    /// model (absent for a run's calls, and in older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<Caller>,
}

/// The identity of a client that called a tool directly (through the MCP server
/// face), as the audit keeps it: never a secret, only what names the caller.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caller {
    /// The surface the call came through (`mcp-stdio`, `mcp-http`).
    pub surface: String,
    /// The client's own name and version (`clientInfo` of MCP's `initialize`:
    /// `name/version`), as it gave them: self-declared, not authenticated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// What authenticated the caller, when something did: for a bearer token, a
    /// fingerprint of it (`token:sha256:<16 hex>`), never the token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

impl ToolCallRecord {
    /// The record of one executed call, written at `time`.
    pub fn new(
        session: &SessionId,
        call: &ToolCall,
        result: &ToolResult,
        queued: Duration,
        took: Duration,
        time: SystemTime,
    ) -> Self {
        Self::with_args(session, call, call.args_value(), result, (queued, took), time)
    }

    /// [`new`](Self::new) with the call's arguments already parsed
    /// (`call.args_value()`), so a caller that parsed them once shares them; `timing`
    /// is the queue and execution times.
    pub fn with_args(
        session: &SessionId,
        call: &ToolCall,
        args: serde_json::Value,
        result: &ToolResult,
        (queued, took): (Duration, Duration),
        time: SystemTime,
    ) -> Self {
        Self {
            record_type: "tool_call".to_owned(),
            time: format_rfc3339_micros(time),
            session_id: session.clone(),
            call_id: call.id().clone(),
            tool: call.name().to_owned(),
            args,
            result: result.content().to_owned(),
            is_error: result.is_error(),
            queued_micros: micros(queued),
            took_micros: micros(took),
            approval: None,
            provenance: None,
            caller: None,
        }
    }

    /// The same record with who decided.
    #[must_use]
    pub fn with_approval(mut self, approval: Approval) -> Self {
        self.approval = Some(approval);
        self
    }

    /// The same record with the detail of who decided.
    #[must_use]
    pub fn with_provenance(mut self, provenance: Option<Provenance>) -> Self {
        self.provenance = provenance;
        self
    }

    /// The same record naming the client that made the call directly.
    #[must_use]
    pub fn with_caller(mut self, caller: Option<Caller>) -> Self {
        self.caller = caller;
        self
    }
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}
