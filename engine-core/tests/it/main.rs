//! Integration tests of engine-core through its public API: catalog, disclosure,
//! dispatcher and the agent loop (the scenarios of the core spec), plus property
//! tests of the dispatcher.

// Tests fail loudly by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod catalog;
mod compaction;
mod disclosure;
mod dispatcher;
mod elicitation;
mod engine_loop;
mod memory_tools;
mod output_limit;
mod properties;
mod rules;
mod search_quality;
mod served;
mod session_hooks;
mod session_model;
mod support;
mod turn_listing;
