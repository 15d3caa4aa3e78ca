//! Integration tests of the sandbox crate on the real kernel: a prepared sandbox
//! applied to a plain `std::process::Command`.

// Test code may unwrap.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod command;
