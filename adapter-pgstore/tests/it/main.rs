//! Integration tests of `adapter-pgstore` against a real PostgreSQL (a throwaway
//! cluster per test binary, a database per test): the `engine-ports` conformance
//! suites, the schema and its versions, ids, run leases across store values and
//! processes, time limits, a database restart, TLS and concurrency, and memory scopes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod concurrency;
mod conformance;
mod group_commits;
mod ids;
mod leases;
mod memory;
mod restart;
mod schema;
mod sessions;
mod timeouts;
mod tls;
