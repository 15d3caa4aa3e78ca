//! Test doubles and conformance suites (feature `testkit`).
//!
//! Doubles: [`ManualClock`], [`MemoryRecorder`], [`CollectingSink`], [`ScriptedLlm`],
//! [`MemorySkillSource`], [`MemoryCommandSource`]. Workloads: [`memory_workload`]
//! (what the memory stores' benches write and search).
//! Suites: one module per port ([`clock`], [`tool_call_recorder`], [`tool_call_log`],
//! [`llm_stream`],
//! [`skill_source`], [`command_source`], [`session_store`], [`event_log`],
//! [`memory_store`], [`workspace_forker`]);
//! each exposes `run` taking a factory for fresh instances and panics with the
//! case name when the implementation breaks the contract. Adapters run the suites
//! of the ports they implement from their own tests.

mod collecting_sink;
mod manual_clock;
mod memory_command_source;
mod memory_recorder;
mod memory_skill_source;
mod scripted_llm;

pub mod clock;
pub mod command_source;
pub mod event_log;
pub mod llm_stream;
pub mod memory_store;
pub mod memory_workload;
pub mod session_store;
pub mod skill_source;
pub mod tool_call_log;
pub mod tool_call_recorder;
pub mod workspace_forker;

pub use collecting_sink::CollectingSink;
pub use manual_clock::ManualClock;
pub use memory_command_source::MemoryCommandSource;
pub use memory_recorder::MemoryRecorder;
pub use memory_skill_source::{MemoryAsset, MemorySkill, MemorySkillSource, SourceCalls};
pub use scripted_llm::{SCRIPT_EXHAUSTED_TEXT, ScriptedLlm, ScriptedTurn, TurnEnding};
