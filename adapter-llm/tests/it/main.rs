//! Integration tests of the LLM providers: the mock, the HTTP providers against
//! recorded fixtures, against bodies as real servers send them and against the real
//! fakellm server, and D6 end to end.

// Test code: helpers outside `#[test]` functions fail loudly too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod anthropic;
mod conformance;
mod d6;
mod fakellm;
mod mock;
mod openai;
mod real_servers;
mod retry;
mod support;
