//! Integration tests of the composition root and the `mecated` binary: catalog
//! parity, lifecycles, the CLI surface, the demo, and end-to-end runs against real
//! peers (the MCP conformance suite, fakellm).

// Test code: failing loudly is the point, and helpers are shared across modules.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, unreachable_pub)]

mod acp;
mod acp_sessions;
mod api;
mod catalog_parity;
mod cli_chat;
mod cli_policy;
mod cli_run;
mod cli_serve;
mod cli_telemetry;
mod cli_tools;
mod cli_usage;
mod compaction;
mod conformance;
mod delegation;
mod demo;
mod fakellm;
mod http_api;
mod http_studio;
mod lifecycle;
mod mcp_inputs;
mod mcp_lifecycle;
mod mcp_login;
mod mcp_serve;
mod memory;
mod model_limits;
mod operations;
mod pg_store;
mod run_lease;
mod sandbox;
mod skills_commands;
mod studio_browser;
mod support;
mod usage_models;
