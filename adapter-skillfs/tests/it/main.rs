//! Integration tests of the filesystem skills adapter, one module per area; the
//! scenario numbers are those of the skills spec.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod commands;
mod conformance;
mod discovery;
mod drafts;
mod fs_source;
mod skill_md;
mod support;
mod tiers;
