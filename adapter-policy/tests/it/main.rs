//! Integration tests of adapter-policy: settings files, rules, hooks and saved
//! approvals through the public API.

// Tests fail loudly by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod hooks;
mod persist;
mod rules;
mod settings;
mod support;
