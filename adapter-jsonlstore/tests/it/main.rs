//! Integration tests of `adapter-jsonlstore`: the `engine-ports` conformance suites,
//! every documented store behaviour, crash, concurrency and torn-tail tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod appender;
mod concurrency;
mod conformance;
mod crash;
mod delete;
mod events;
mod hostile_files;
mod layout;
mod locking;
mod recorder;
mod run_lease;
mod snapshots;
mod torn_tail;
