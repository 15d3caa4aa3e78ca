//! Rules matched against calls: shell prefix rules against operators and quoting,
//! path globs, MCP and Subagent rules, deny over ask over allow.

use engine_ports::{PermissionRules, RuleEffect};
use serde_json::json;

use crate::support::{Setup, effect, shell, tool};

#[test]
fn a_prefix_rule_allows_a_compound_command_only_when_every_part_is_allowed() {
    let setup = Setup::new();
    let policy = setup.policy(json!({"allow": ["Bash(git:*)", "Shell(echo *)"]}));
    assert_eq!(
        effect(&policy, &shell("git add a && git commit -m x")),
        Some(RuleEffect::Allow)
    );
    assert_eq!(
        effect(&policy, &shell("git status; echo done | git hash-object --stdin")),
        Some(RuleEffect::Allow)
    );
    for command in [
        "echo x && rm -rf /",
        "echo x || rm -rf /",
        "echo x; rm -rf /",
        "echo x | sh",
        "echo x\nrm -rf /",
        "echo $(rm -rf /)",
        "echo `rm -rf /`",
        "(echo x; rm -rf /)",
        "echo x > /etc/passwd",
        "LD_PRELOAD=evil.so git status",
    ] {
        assert_eq!(effect(&policy, &shell(command)), None, "{command}");
    }
}

#[test]
fn quoted_operators_stay_inside_their_word() {
    let setup = Setup::new();
    let policy = setup.policy(json!({"allow": ["Shell(git commit:*)"], "deny": ["Shell(rm:*)"]}));
    assert_eq!(
        effect(&policy, &shell("git commit -m 'a && rm -rf /'")),
        Some(RuleEffect::Allow)
    );
    assert_eq!(
        effect(&policy, &shell(r#"git commit -m "x; rm y""#)),
        Some(RuleEffect::Allow)
    );
    assert_eq!(
        effect(&policy, &shell(r"git commit -m a\;rm")),
        Some(RuleEffect::Allow)
    );
    assert_eq!(
        effect(&policy, &shell("git commit -m \"$(rm -rf /)\"")),
        Some(RuleEffect::Deny)
    );
}

#[test]
fn a_deny_rule_matches_any_part_even_of_an_unparsed_command() {
    let setup = Setup::new();
    let policy = setup.policy(json!({"allow": ["Shell"], "deny": ["Bash(rm:*)"]}));
    assert_eq!(
        effect(&policy, &shell("cargo build && rm -rf target")),
        Some(RuleEffect::Deny)
    );
    assert_eq!(
        effect(&policy, &shell("X=1 rm -rf target")),
        Some(RuleEffect::Deny)
    );
    // An unterminated quote: not parsed, still denied by its words.
    assert_eq!(effect(&policy, &shell("ls; rm -rf / '")), Some(RuleEffect::Deny));
    assert_eq!(effect(&policy, &shell("cargo build")), Some(RuleEffect::Allow));
}

#[test]
fn an_unparsed_command_is_never_allowed_by_a_prefix_rule() {
    let setup = Setup::new();
    let policy = setup.policy(json!({"allow": ["Shell(cat:*)", "Shell(echo:*)"]}));
    for command in [
        "cat <<EOF\nx\nEOF",
        "echo 'open",
        "echo $((1+2))",
        "for f in a; do echo $f; done",
    ] {
        assert_eq!(effect(&policy, &shell(command)), None, "{command}");
    }
    assert_eq!(effect(&policy, &shell("cat a.txt")), Some(RuleEffect::Allow));
}

#[test]
fn exact_and_prefix_rules_differ() {
    let setup = Setup::new();
    let policy = setup.policy(json!({"allow": ["Shell(cargo test)", "Shell(npm run:*)"]}));
    assert_eq!(effect(&policy, &shell("cargo test")), Some(RuleEffect::Allow));
    assert_eq!(effect(&policy, &shell("cargo test --release")), None);
    assert_eq!(effect(&policy, &shell("npm run build")), Some(RuleEffect::Allow));
    assert_eq!(effect(&policy, &shell("npm install")), None);
}

#[test]
fn path_rules_are_gitignore_globs_relative_to_the_workspace() {
    let setup = Setup::new();
    let policy = setup.policy(json!({
        "deny": ["Read(secrets/**)", "Edit(*.lock)", "Read(~/.ssh/**)"],
        "allow": ["Edit(src/**)"],
    }));
    assert_eq!(
        effect(&policy, &tool("Read", json!({"path": "secrets/key.pem"}))),
        Some(RuleEffect::Deny)
    );
    // Read rules cover the tools that read, Edit rules those that edit.
    assert_eq!(
        effect(&policy, &tool("Grep", json!({"pattern": "x", "path": "secrets"}))),
        Some(RuleEffect::Deny)
    );
    assert_eq!(
        effect(&policy, &tool("Read", json!({"path": "src/../secrets/a"}))),
        Some(RuleEffect::Deny)
    );
    assert_eq!(
        effect(
            &policy,
            &tool("Write", json!({"path": "sub/Cargo.lock", "content": ""}))
        ),
        Some(RuleEffect::Deny)
    );
    assert_eq!(
        effect(&policy, &tool("Edit", json!({"path": "src/main.rs"}))),
        Some(RuleEffect::Allow)
    );
    assert_eq!(effect(&policy, &tool("Edit", json!({"path": "docs/a.md"}))), None);
    let home_key = setup.dir.path().join("home/.ssh/id_ed25519");
    assert_eq!(
        effect(
            &policy,
            &tool("Read", json!({"path": home_key.display().to_string()}))
        ),
        Some(RuleEffect::Deny)
    );
}

#[test]
fn mcp_and_subagent_rules_name_servers_tools_and_agents() {
    let setup = Setup::new();
    let policy = setup.policy(json!({
        "deny": ["mcp__github"],
        "ask": ["Subagent(deployer)"],
        "allow": ["mcp__docs__search"],
    }));
    assert_eq!(
        effect(&policy, &tool("mcp__github__create_issue", json!({}))),
        Some(RuleEffect::Deny)
    );
    assert_eq!(effect(&policy, &tool("mcp__githubx__a", json!({}))), None);
    assert_eq!(
        effect(&policy, &tool("mcp__docs__search", json!({}))),
        Some(RuleEffect::Allow)
    );
    assert_eq!(effect(&policy, &tool("mcp__docs__other", json!({}))), None);
    assert_eq!(
        effect(
            &policy,
            &tool("Subagent", json!({"prompt": "p", "agent": "deployer"}))
        ),
        Some(RuleEffect::Ask)
    );
    assert_eq!(effect(&policy, &tool("Subagent", json!({"prompt": "p"}))), None);
    assert!(policy.hides("mcp__github__create_issue").is_some());
    assert!(policy.hides("mcp__docs__search").is_none());
}

#[test]
fn deny_beats_ask_beats_allow_and_the_match_names_rule_and_file() {
    let setup = Setup::new();
    let policy = setup.policy(
        json!({"allow": ["Shell"], "ask": ["Shell(git push:*)"], "deny": ["Shell(git push --force:*)"]}),
    );
    assert_eq!(effect(&policy, &shell("git push origin")), Some(RuleEffect::Ask));
    let denied = policy.check(&shell("git push --force")).unwrap();
    assert_eq!(denied.effect, RuleEffect::Deny);
    assert_eq!(denied.rule, "Shell(git push --force:*)");
    assert!(denied.source.ends_with("cli.json"), "{}", denied.source);
    assert_eq!(effect(&policy, &shell("ls")), Some(RuleEffect::Allow));
    assert!(policy.hides("Shell").is_none());
}
