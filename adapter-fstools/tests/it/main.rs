//! Integration tests of the core tools, driven through the `Tool` trait and
//! `core_tools`, on temporary workspaces.

// Test code may unwrap and print.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod catalog;
mod confinement;
mod edit;
mod fork;
mod glob;
mod grep;
mod list_dir;
mod output_cap;
mod read;
mod sandbox;
mod shell;
mod support;
mod write;
