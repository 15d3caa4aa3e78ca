//! Integration tests of `adapter-mcp`: every documented behaviour against in-process
//! rmcp fixture servers, stdio fixtures and real peers (server-everything,
//! server-filesystem, mcp-server-time/git, the Python SDK bearer server, the
//! conformance suite).

// Test code: failing loudly is the point, and helpers are shared across modules.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    missing_docs,
    unreachable_pub
)]

mod support;

mod catalog;
mod client;
mod conformance;
mod connect;
mod elicitation;
mod execute;
mod flags;
mod peers;
mod perf;
mod protocol;
mod real_resilience;
mod resilience;
mod sandbox;
mod sse;
mod stdio;
mod structured;
mod too_large;
mod toolhive;
