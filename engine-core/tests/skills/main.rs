//! The `Skill` and `SkillDraft` tools and the slash-command machinery, driven through
//! their public API (and the `Engine` where a behaviour spans turns or sessions).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod commands;
mod skill_draft;
mod skill_tool;
mod support;
