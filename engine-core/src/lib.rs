//! The Mecatl domain: tools, the catalog, progressive disclosure, the dispatcher and
//! the agent loop.
//!
//! A [`Catalog`] holds [`Tool`]s keyed by name and projects them per
//! [`PermissionMode`](engine_ports::PermissionMode) (plan mode keeps read-only tools:
//! D1). The [`Dispatcher`] runs one assistant turn's calls read-parallel and
//! mutate-serial, contains panics (D2) and gives every call exactly one result in
//! call order. The [`Engine`] is the loop around it: model stream → whole tool calls
//! (D12) → dispatch → results, with limits, permissions, hooks, progressive
//! disclosure ([`ToolSearch`], D3/D4), persistence through the
//! [`SessionStore`](engine_ports::SessionStore) port and the D11 event stream.
//!
//! This crate performs no I/O of its own except through ports; it knows no transport,
//! no file format and no CLI. Start with [`Catalog`] and [`Tool`], then [`Engine`].
//!
//! Build a catalog and dispatch one call:
//!
//! ```
//! use std::sync::Arc;
//! use async_trait::async_trait;
//! use engine_core::{Catalog, DefaultPolicy, Approve, Dispatcher, Environment, Tool, ToolError, TurnContext};
//! use engine_ports::{CancellationToken, PermissionMode, SessionId, ToolCall, ToolResult, ToolSpec};
//!
//! struct Echo;
//!
//! #[async_trait]
//! impl Tool for Echo {
//!     fn spec(&self) -> ToolSpec {
//!         ToolSpec::new("Echo", "Returns its arguments.")
//!     }
//!     fn read_only(&self) -> bool {
//!         true
//!     }
//!     async fn execute(&self, _: &CancellationToken, call: &ToolCall, _: &Environment)
//!         -> Result<ToolResult, ToolError>
//!     {
//!         Ok(ToolResult::text(call.id().clone(), call.args()))
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let mut catalog = Catalog::new();
//! catalog.must_register(Arc::new(Echo));
//! let ctx = TurnContext::new(
//!     SessionId::from("s1"),
//!     PermissionMode::Default,
//!     Arc::new(catalog),
//!     Environment::new("/tmp").unwrap(),
//!     Arc::new(DefaultPolicy::new(false, Approve::ReadOnly)),
//! );
//! let outcome = Dispatcher::default()
//!     .dispatch(&ctx, &[ToolCall::new("c1", "Echo", "hi"), ToolCall::new("c2", "Nope", "")])
//!     .await;
//! assert_eq!(outcome.results[0].content(), "hi");
//! assert!(outcome.results[1].is_error());
//! # });
//! ```

mod catalog;
mod commands;
mod context;
mod delegation;
mod disclosure;
mod dispatch;
mod elicitation;
mod emitter;
mod engine;
mod environment;
pub mod host;
pub mod memory;
mod memory_store;
mod memory_tools;
mod output_cap;
mod permission;
mod skill_draft_tool;
mod skill_inventory;
mod skill_tool;
mod text_reply;
mod tool;
mod tool_search;

// The public surface, in one place.
pub use catalog::{Catalog, CatalogError, CatalogUpdates, NameSet, Resolved, available_in};
pub use commands::{
    CommandChain, CommandChainBuilder, CommandInvocation, SkillCommandSource, SourceExpander, parse_command,
    render_template, strip_frontmatter, substitute,
};
pub use context::{
    BYTES_PER_TOKEN, COMPACT_AT_PERCENT, COMPACTION_INSTRUCTIONS, DEFAULT_CONTEXT_WINDOW, KEEP_PERCENT,
    KEPT_USER_TURNS, MIN_TRANSCRIPT_ITEM_CAP, OutputLimits, SUMMARY_INTRO, TRANSCRIPT_ITEM_CAP,
    TRANSCRIPT_PERCENT, context_window_for, output_limits_for,
};
pub use delegation::{
    AgentDefinition, CHILD_MAX_TOOL_CALLS, CHILD_MAX_TURNS, CHILD_PROMPT_NOTE, ChildAccess, ChildEngines,
    ChildError, ChildLearning, ChildPolicy, ChildSpec, DelegationSettings, FORK_INTRO,
    INSPECT_MEMBER_TOOL_NAME, INSPECT_MESSAGE_CHARS, INSPECT_MESSAGES, INSPECT_SUBAGENT_TOOL_NAME,
    INSPECT_TOTAL_CHARS, InspectMemberTool, InspectSubagentTool, JUDGE_INSTRUCTIONS, MARKERS,
    MAX_MEMBER_TURNS_AT_ONCE, MAX_OUTPUT_SCHEMA_BYTES, MAX_PARALLEL_TASKS, MAX_QUEUED_MESSAGES,
    MAX_RUNNING_BRANCHES, MAX_RUNNING_SUBAGENTS, MAX_STATUS_WAIT_MS, MAX_SUBAGENT_TIMEOUT_MS,
    MAX_TEAM_FINDINGS, MAX_TEAM_MEMBERS, MAX_TEAM_ROUNDS, MAX_TEAM_TASKS, PARALLEL_TOOL_NAME, PREVIEW_CHARS,
    ParallelTool, SALVAGE_INSTRUCTIONS, SUBAGENT_STATUS_TOOL_NAME, SUBAGENT_TOOL_NAME, SUBMIT_ATTEMPTS,
    SUBMIT_RESULT_TOOL_NAME, SubagentStatusTool, SubagentTool, TEAM_TOOL_NAME, TeamTool, inspect_transcript,
    neutralise, preview, subagent_tools, team_tools,
};
pub use disclosure::{AUTO_SHARE_PERCENT, Disclosure, auto_defers, tool_search_spec_for, turn_specs};
pub use dispatch::{
    AskAnswer, AskRegistry, DEFAULT_CANCEL_GRACE, DEFAULT_MAX_PARALLEL_READS, DispatchConfig, Dispatcher,
    MAX_DENY_REASON_CHARS, TurnContext, TurnOutcome, normalize_call_ids,
};
pub use elicitation::{
    DEFAULT_ELICITATION_TIMEOUT, ElicitationAnswerError, ElicitationRequest, ElicitationResponse, Elicitor,
    MAX_ELICITATION_FIELDS, MAX_ELICITATION_MESSAGE_BYTES, MAX_ELICITATION_SCHEMA_BYTES,
    MAX_ELICITATIONS_PER_CALL, check_content, check_form,
};
pub use emitter::EventEmitter;
pub use engine::{
    DEFAULT_COMMAND_TIMEOUT, Deps, Engine, EngineConfig, EngineError, Limits, MAX_STOP_HOOK_CONTINUATIONS,
    OfferedTool, Run, ServedAnswers, ServedCall, ServedOutcome, ServedRun,
};
pub use environment::{CommandOutput, CommandRunner, Environment, EnvironmentError, RunnerError};
pub use memory::InMemoryStore;
pub use memory_store::InMemoryMemory;
pub use memory_tools::{
    DEFAULT_MEMORY_SEARCH_LIMIT, FORGET_MEMORY_TOOL_NAME, FORGET_USER_TOOL_NAME, MAX_MEMORY_QUERY_BYTES,
    MAX_MEMORY_SEARCH_LIMIT, MEMORY_DATA_LINE, MEMORY_INDEX_MAX_BYTES, MEMORY_INDEX_MAX_ENTRIES,
    MEMORY_WRITE_TOOL_NAMES, OPERATOR_PROFILE_MAX_BYTES, RECALL_PREFIX_LIMIT, RECALL_TOOL_NAME,
    RECALL_USER_TOOL_NAME, REMEMBER_TOOL_NAME, REMEMBER_USER_TOOL_NAME, SEARCH_MEMORY_TOOL_NAME,
    SEARCH_USER_MODEL_TOOL_NAME, USER_KEY_PREFIX, memory_tools, render_memory_index, render_operator_profile,
    user_key, user_model_tools,
};
pub use output_cap::{DEFAULT_OUTPUT_CAP, OutputCap, floor_char_boundary, truncation_marker};
pub use permission::{Approve, DefaultPolicy, ParseApproveError};
pub use skill_draft_tool::{SKILL_DRAFT_TOOL_NAME, SkillDraftTool};
pub use skill_inventory::INVENTORY_CAP;
pub use skill_tool::{
    SKILL_LISTING_LINE_CAP, SKILL_TOOL_FAMILY, SKILL_TOOL_NAME, SOURCE_ERROR_CAP, SkillTool,
};
pub use tool::{Tool, ToolError, with_args};
pub use tool_search::{
    COMPACT_SEARCH_UP_TO, DEFAULT_SEARCH_LIMIT, DEFERRED_NAMES_BUDGET, MAX_SEARCH_LIMIT, TOOL_SEARCH_NAME,
    ToolSearch, deferred_tool_search_spec, returned_names, tool_search_spec,
};
