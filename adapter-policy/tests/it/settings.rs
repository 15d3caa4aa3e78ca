//! Settings files: where they are read from, how they add up, and their errors.

use engine_ports::{PermissionMode, PermissionRules, RuleEffect};
use serde_json::json;

use crate::support::{Setup, effect, shell};

#[test]
fn project_settings_are_read_only_with_trust_project() {
    let setup = Setup::new();
    setup.write(
        "ws/.mecatl/settings.json",
        &json!({"permissions": {"allow": ["Shell(make:*)"]}}),
    );
    setup.write(
        "ws/.claude/settings.local.json",
        &json!({"permissions": {"deny": ["Shell(curl:*)"]}}),
    );
    let untrusted = setup.load(&[], false).unwrap();
    assert_eq!(effect(&untrusted, &shell("make")), None);
    assert_eq!(effect(&untrusted, &shell("curl x")), None);
    assert!(untrusted.files().is_empty());
    let trusted = setup.load(&[], true).unwrap();
    assert_eq!(effect(&trusted, &shell("make all")), Some(RuleEffect::Allow));
    assert_eq!(effect(&trusted, &shell("curl x")), Some(RuleEffect::Deny));
}

#[test]
fn a_managed_deny_cannot_be_loosened_by_any_other_file() {
    let setup = Setup::new();
    setup.write(
        "managed-settings.json",
        &json!({"permissions": {"deny": ["Shell(rm:*)"]}}),
    );
    let cli = setup.write(
        "cli.json",
        &json!({"permissions": {"allow": ["Shell", "Shell(rm:*)"]}}),
    );
    setup.write(
        "ws/.mecatl/settings.local.json",
        &json!({"permissions": {"allow": ["Shell(rm -rf build)"]}}),
    );
    let policy = setup.load(&[&cli], true).unwrap();
    let decided = policy.check(&shell("rm -rf build")).unwrap();
    assert_eq!(decided.effect, RuleEffect::Deny);
    assert!(
        decided.source.ends_with("managed-settings.json"),
        "{}",
        decided.source
    );
}

#[test]
fn a_project_symlink_to_settings_is_refused() {
    let setup = Setup::new();
    let real = setup.write("elsewhere.json", &json!({"permissions": {"allow": ["Shell"]}}));
    std::fs::create_dir_all(setup.workspace().join(".mecatl")).unwrap();
    std::os::unix::fs::symlink(&real, setup.workspace().join(".mecatl/settings.json")).unwrap();
    let error = setup.load(&[], true).unwrap_err().to_string();
    assert!(
        error.contains(".mecatl/settings.json") && error.contains("symbolic link"),
        "{error}"
    );
}

#[test]
fn bad_files_name_the_file_the_json_path_and_what_is_expected() {
    let setup = Setup::new();
    let cases = [
        (
            json!({"permissions": {"allow": ["Shell", 3]}}),
            "$.permissions.allow[1]",
            "expected a rule string",
        ),
        (
            json!({"permissions": {"deny": ["Frobnicate(x)"]}}),
            "$.permissions.deny[0]",
            "unknown tool \"Frobnicate\"",
        ),
        (
            json!({"permissions": {"ask": "Shell"}}),
            "$.permissions.ask",
            "expected an array",
        ),
        (
            json!({"permissions": {"allow": ["Shell(git"]}}),
            "$.permissions.allow[0]",
            "must end with `)`",
        ),
        (
            json!({"permissions": {"defaultMode": "yolo"}}),
            "$.permissions.defaultMode",
            "expected one of default, plan, acceptEdits",
        ),
        (
            json!({"hooks": {"BeforeEverything": []}}),
            "$.hooks.BeforeEverything",
            "unknown hook event",
        ),
        (
            json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}}),
            "$.hooks.PreToolUse[0].hooks[0].timeout",
            "expected whole seconds",
        ),
        (json!([1]), "$", "expected a JSON object"),
    ];
    for (value, path, expected) in cases {
        let file = setup.write("bad.json", &value);
        let error = setup.load(&[&file], false).unwrap_err();
        assert_eq!(error.file, file);
        assert_eq!(error.json_path, path, "{error}");
        let text = error.to_string();
        assert!(
            text.contains(expected) && text.contains("bad.json") && text.contains(path),
            "{text}"
        );
    }
    let missing = setup.dir.path().join("missing.json");
    let error = setup.load(&[&missing], false).unwrap_err().to_string();
    assert!(
        error.contains("missing.json") && error.contains("does not exist"),
        "{error}"
    );
}

#[test]
fn unused_keys_and_other_agents_tools_are_listed_once_as_ignored() {
    let setup = Setup::new();
    let file = setup.write(
        "cli.json",
        &json!({
            "model": "opus", "env": {"A": "1"}, "statusLine": {},
            "permissions": {"allow": ["WebFetch(domain:example.com)", "Bash(ls:*)"], "defaultMode": "acceptEdits"},
        }),
    );
    let policy = setup.load(&[&file], false).unwrap();
    let ignored = policy.ignored().join("\n");
    for key in [
        "$.model",
        "$.env",
        "$.statusLine",
        "$.permissions.allow[0] (WebFetch",
    ] {
        assert_eq!(ignored.matches(key).count(), 1, "{key} in {ignored}");
    }
    assert_eq!(policy.default_mode(), Some(PermissionMode::AcceptEdits));
    assert_eq!(effect(&policy, &shell("ls -la")), Some(RuleEffect::Allow));
}

#[test]
fn managed_hooks_only_drops_every_other_files_hooks() {
    let setup = Setup::new();
    let hook = |command: &str| json!({"PreToolUse": [{"matcher": "Shell", "hooks": [{"type": "command", "command": command}]}]});
    setup.write(
        "managed-settings.json",
        &json!({"allowManagedHooksOnly": true, "hooks": hook("managed.sh")}),
    );
    let cli = setup.write("cli.json", &json!({"hooks": hook("mine.sh")}));
    let policy = setup.load(&[&cli], false).unwrap();
    let commands: Vec<&str> = policy
        .hook_commands()
        .iter()
        .map(|h| h.command.as_str())
        .collect();
    assert_eq!(commands, ["managed.sh"]);
    assert!(
        policy
            .ignored()
            .iter()
            .any(|i| i.contains("cli.json") && i.contains("managed hooks only"))
    );
}
