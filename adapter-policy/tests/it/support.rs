//! Shared helpers: a workspace with settings files, and calls.

use std::path::{Path, PathBuf};

use adapter_policy::{Policy, SettingsError, Sources};
use engine_ports::{PermissionRules, RuleEffect, ToolCall};
use serde_json::json;

/// The tools these tests know.
pub(crate) fn known(name: &str) -> bool {
    [
        "Read", "Write", "Edit", "Glob", "Grep", "ListDir", "Shell", "Subagent",
    ]
    .contains(&name)
}

/// A temporary directory with a workspace in `ws/`.
pub(crate) struct Setup {
    pub(crate) dir: tempfile::TempDir,
}

impl Setup {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("ws")).unwrap();
        Self { dir }
    }

    pub(crate) fn workspace(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    /// Writes `value` at `relative` (under the temporary directory).
    pub(crate) fn write(&self, relative: &str, value: &serde_json::Value) -> PathBuf {
        let path = self.dir.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, serde_json::to_string_pretty(value).unwrap()).unwrap();
        path
    }

    pub(crate) fn sources(&self, files: &[&Path], trust_project: bool) -> Sources {
        Sources {
            workspace: self.workspace(),
            managed: self.dir.path().join("managed-settings.json"),
            files: files.iter().map(|p| p.to_path_buf()).collect(),
            trust_project,
            user: None,
            home: Some(self.dir.path().join("home")),
        }
    }

    pub(crate) fn load(&self, files: &[&Path], trust_project: bool) -> Result<Policy, SettingsError> {
        Policy::load(&self.sources(files, trust_project), &known)
    }

    /// A policy of one `--settings` file with these permissions.
    pub(crate) fn policy(&self, permissions: serde_json::Value) -> Policy {
        let file = self.write("cli.json", &json!({ "permissions": permissions }));
        self.load(&[&file], false).unwrap()
    }
}

pub(crate) fn shell(command: &str) -> ToolCall {
    ToolCall::new("c1", "Shell", json!({ "command": command }).to_string())
}

pub(crate) fn tool(name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall::new("c1", name, args.to_string())
}

/// The effect of the rule that matches, if any.
pub(crate) fn effect(policy: &Policy, call: &ToolCall) -> Option<RuleEffect> {
    policy.check(call).map(|m| m.effect)
}
