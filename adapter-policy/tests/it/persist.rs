//! Saved approvals: an "allow always" becomes a prefix rule in the project's
//! `.mecatl/settings.local.json`, written atomically and read back.

use adapter_policy::learned_rule;
use engine_ports::{PermissionRules, RuleEffect};
use serde_json::json;

use crate::support::{Setup, effect, shell, tool};

#[test]
fn an_allow_always_is_saved_as_a_prefix_rule_and_reloaded() {
    let setup = Setup::new();
    setup.write(
        "ws/.mecatl/settings.local.json",
        &json!({"model": "x", "permissions": {"deny": ["Shell(rm:*)"]}}),
    );
    let policy = setup.load(&[], true).unwrap().persisting_approvals();
    let saved = policy.learn(&shell("git commit -m 'first'")).unwrap();
    assert_eq!(saved.rule, "Shell(git commit:*)");
    assert_eq!(saved.effect, RuleEffect::Allow);
    assert_eq!(
        saved.source,
        setup
            .workspace()
            .canonicalize()
            .unwrap()
            .join(".mecatl/settings.local.json")
            .display()
            .to_string()
    );
    // It matches at once, and again after a reload, a different message included.
    assert_eq!(
        effect(&policy, &shell("git commit -m second")),
        Some(RuleEffect::Allow)
    );
    let reloaded = setup.load(&[], true).unwrap();
    assert_eq!(
        effect(&reloaded, &shell("git commit -m third")),
        Some(RuleEffect::Allow)
    );
    assert_eq!(effect(&reloaded, &shell("git push")), None);
    let saved: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(setup.workspace().join(".mecatl/settings.local.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(saved["model"], "x");
    assert_eq!(saved["permissions"]["allow"], json!(["Shell(git commit:*)"]));
    // Saving it twice does not repeat it.
    policy.learn(&shell("git commit -m again"));
    let again: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(setup.workspace().join(".mecatl/settings.local.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(again["permissions"]["allow"], json!(["Shell(git commit:*)"]));
}

#[test]
fn compound_commands_save_no_rule_and_other_tools_save_the_tool() {
    assert_eq!(learned_rule(&shell("make && rm -rf /")), None);
    assert_eq!(
        learned_rule(&shell("./build.sh --fast")),
        Some("Shell(./build.sh:*)".to_owned())
    );
    assert_eq!(
        learned_rule(&tool("Write", json!({"path": "a"}))),
        Some("Write".to_owned())
    );
}

#[test]
fn the_rule_offered_before_saving_is_the_one_saved_and_only_when_approvals_persist() {
    let setup = Setup::new();
    let call = shell("git commit -m 'first'");
    let plain = setup.load(&[], true).unwrap();
    assert_eq!(
        plain.suggest(&call),
        None,
        "nothing can be saved: nothing is offered"
    );
    assert_eq!(plain.learn(&call), None);
    let persisting = setup.load(&[], true).unwrap().persisting_approvals();
    let offered = persisting.suggest(&call);
    assert_eq!(offered.as_deref(), Some("Shell(git commit:*)"));
    assert!(
        !setup.workspace().join(".mecatl/settings.local.json").exists(),
        "offering a rule saves nothing"
    );
    assert_eq!(persisting.learn(&call).map(|saved| saved.rule), offered);
    assert_eq!(persisting.suggest(&shell("make && rm -rf /")), None);
}
