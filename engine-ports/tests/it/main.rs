//! Integration tests of engine-ports: the vocabulary scenarios, the pinned wire
//! forms, and the test doubles passing their own conformance suites.

// Tests fail loudly by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod doubles;
mod vocabulary;
mod wire_forms;
