//! Integration tests of the file-backed memory store: the port's conformance suite,
//! the file format and its refusals, and writers in other processes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod conformance;
mod files;
mod processes;
