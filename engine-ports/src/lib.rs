//! Vocabulary types and port traits of the Mecatl tool catalog.
//!
//! This crate is what a downstream crate depends on to plug into the engine: the
//! value types that cross every boundary ([`ToolCall`], [`ToolResult`] with its typed
//! [`ContentPart`]s, [`ToolSpec`], [`PermissionMode`], the D11 [`Event`] schema) and
//! the port traits adapters implement ([`LlmProvider`], [`ToolCallRecorder`],
//! [`Clock`], [`EventSink`], [`EventLog`], [`SessionStore`], [`SkillSource`],
//! [`SkillDrafter`], [`CommandSource`], [`CommandExpander`], [`PermissionPolicy`],
//! [`ToolHooks`], [`MemoryStore`], [`WorkspaceForker`]). It depends on no workspace crate and on no transport (no `rmcp`,
//! `reqwest`, `axum` or `clap`); it is not the engine (that is `engine-core`).
//!
//! Start with [`ToolCall`] and [`ToolResult`], then the port you implement; its
//! `# Contract` section says what the engine relies on. Behind the `testkit` feature,
//! `testkit` holds test doubles and one conformance suite per port, which every
//! implementation runs from its own tests. Behind the `memory-document` feature,
//! `MemoryDocument` and `MemorySearch` hold the rules and the ranking every
//! [`MemoryStore`] applies, so a new memory store reuses them instead of restating
//! them.
//!
//! A downstream skill source in a few lines:
//!
//! ```
//! use std::sync::Arc;
//! use async_trait::async_trait;
//! use engine_ports::{SkillAsset, SkillMeta, SkillSource, SkillSourceError, valid_skill_asset_name};
//!
//! struct OneSkill;
//!
//! #[async_trait]
//! impl SkillSource for OneSkill {
//!     async fn list_skills(&self) -> Result<Vec<SkillMeta>, SkillSourceError> {
//!         Ok(vec![SkillMeta {
//!             name: "greet".into(),
//!             description: "Say hello politely.".into(),
//!             ..SkillMeta::default()
//!         }])
//!     }
//!     async fn skill_body(&self, name: &str) -> Result<Arc<str>, SkillSourceError> {
//!         match name {
//!             "greet" => Ok(Arc::from("Greet the user by name.")),
//!             _ => Err(SkillSourceError::SkillNotFound { skill: name.into() }),
//!         }
//!     }
//!     async fn list_skill_assets(&self, name: &str) -> Result<Vec<SkillAsset>, SkillSourceError> {
//!         self.skill_body(name).await.map(|_| Vec::new())
//!     }
//!     async fn read_skill_asset(&self, skill: &str, asset: &str) -> Result<Vec<u8>, SkillSourceError> {
//!         if !valid_skill_asset_name(asset) {
//!             return Err(SkillSourceError::InvalidAssetName { asset: asset.into() });
//!         }
//!         Err(SkillSourceError::AssetNotFound { skill: skill.into(), asset: asset.into() })
//!     }
//! }
//!
//! # tokio_test_block_on(async {
//! let source: Arc<dyn SkillSource> = Arc::new(OneSkill);
//! assert_eq!(source.list_skills().await.unwrap()[0].name, "greet");
//! assert!(source.skill_body("nope").await.unwrap_err().is_skill_not_found());
//! # });
//! # fn tokio_test_block_on(f: impl std::future::Future<Output = ()>) {
//! #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
//! # }
//! ```

mod call;
mod clock;
mod commands;
mod content;
mod conversation;
mod diagnostics;
mod event;
mod fork;
mod hooks;
mod ids;
mod keyword;
mod llm;
mod memory;
#[cfg(feature = "memory-document")]
mod memory_document;
#[cfg(feature = "memory-document")]
mod memory_search;
mod mode;
mod permission;
mod recorder;
mod result;
mod rules;
mod sandbox;
mod skills;
mod spec;
mod store;
mod text;
mod usage;
#[cfg(feature = "memory-document")]
mod word_tokenizer;

#[cfg(feature = "testkit")]
pub mod testkit;

// The whole public surface, in one place. Everything here is a stable part of the
// port contract; modules stay private so paths never leak.
pub use call::{ArgsError, ToolCall};
pub use clock::{
    Clock, SystemClock, elapsed_between, format_rfc3339_micros, format_rfc3339_nanos, parse_rfc3339,
};
pub use commands::{
    CommandBody, CommandError, CommandExpander, CommandInfo, CommandSource, Expansion, valid_command_name,
};
pub use content::{
    ContentError, ContentPart, EmbeddedBody, EmbeddedResource, MAX_BINARY_PART_BYTES,
    MAX_RESULT_INLINE_BYTES, MAX_TEXT_PART_BYTES, ResourceLink, encode_base64, validate_parts,
};
pub use conversation::{Iter as ConversationIter, WeakPrefix};
pub use diagnostics::{Diagnostic, Diagnostics, Level};
pub use event::{
    ChildActivity, ChildPhase, CompactionTrigger, ElicitationAction, Event, EventKind, EventSink, HookAction,
    HookPhase, ServerOrigin, SessionHookAction, StopReason, Verdict,
};
pub use fork::{ChangeKind, FileChange, ForkError, WorkspaceCopy, WorkspaceForker};
pub use hooks::{
    CompactTrigger, EventAnswer, HookError, HookEvent, HookText, ParseHookEventError, Post, Pre,
    SessionEvent, SessionSource, ToolHooks,
};
pub use ids::{SessionId, ToolCallId};
pub use keyword::Keyword;
pub use llm::{
    Capabilities, Chunk, ChunkStream, Conversation, DEFAULT_MAX_TOKENS, LlmError, LlmProvider, LlmRequest,
    Message, ModelRetry, RequestPurpose,
};
pub use memory::{
    MAX_MEMORY_DESCRIPTION_BYTES, MAX_MEMORY_DOCUMENT_BYTES, MAX_MEMORY_KEY_BYTES, MAX_MEMORY_KEYS,
    MAX_MEMORY_VALUE_BYTES, MEMORY_REVISIONS_KEPT, MemoryEntry, MemoryError, MemoryHit, MemoryIndexEntry,
    MemoryPrefix, MemoryRevision, MemoryStore, MemoryWrite, check_memory_key, check_memory_write,
};
#[cfg(feature = "memory-document")]
pub use memory_document::{Applied, MemoryDocument};
#[cfg(feature = "memory-document")]
pub use memory_search::{CachedDocument, LoadedDocument, MemorySearch};
pub use mode::{ParseModeError, PermissionMode};
pub use permission::{Approval, ApprovalVerdict, Decider, Decision, PermissionPolicy, PermissionRequest};
pub use recorder::{Caller, RecorderError, ToolCallLog, ToolCallRecord, ToolCallRecorder};
pub use result::ToolResult;
pub use rules::{PermissionRules, Provenance, RuleEffect, RuleMatch};
pub use sandbox::{ParseSandboxModeError, SandboxMode, SandboxStatus};
pub use skills::{
    DraftError, DraftReceipt, SkillAsset, SkillDraftRequest, SkillDrafter, SkillMeta, SkillOrigin,
    SkillSource, SkillSourceError, valid_skill_asset_name, valid_skill_name,
};
pub use spec::ToolSpec;
pub use store::{
    EventLog, LeaseRelease, ReportedContext, RunLease, SESSION_TITLE_CHARS, SessionListing, SessionSnapshot,
    SessionStore, StoreError,
};
pub use text::{clip_chars, truncate_with_ellipsis};
pub use usage::Usage;
#[cfg(feature = "memory-document")]
pub use word_tokenizer::{WordIndex, WordTokenizer};

/// Re-exported so implementors name the same token type as the engine.
pub use tokio_util::sync::CancellationToken;
