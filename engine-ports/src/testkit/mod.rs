//! Test doubles and conformance suites (feature `testkit`).
//!
//! Doubles: [`ManualClock`], [`MemoryRecorder`], [`CollectingSink`], [`ScriptedLlm`].
//! Suites: one module per port ([`clock`], [`tool_call_recorder`], [`llm_stream`],
//! [`session_store`], [`event_log`]);
//! each exposes `run` taking a factory for fresh instances and panics with the
//! case name when the implementation breaks the contract. Adapters run the suites
//! of the ports they implement from their own tests.

mod collecting_sink;
mod manual_clock;
mod memory_recorder;
mod scripted_llm;

pub mod clock;
pub mod event_log;
pub mod llm_stream;
pub mod session_store;
pub mod tool_call_recorder;

pub use collecting_sink::CollectingSink;
pub use manual_clock::ManualClock;
pub use memory_recorder::MemoryRecorder;
pub use scripted_llm::{SCRIPT_EXHAUSTED_TEXT, ScriptedLlm, ScriptedTurn, TurnEnding};
