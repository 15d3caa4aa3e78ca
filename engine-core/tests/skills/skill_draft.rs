//! The `SkillDraft` tool.

use std::sync::Arc;

use engine_core::{Catalog, SkillDraftTool, SkillTool, Tool};
use engine_ports::{PermissionMode, SkillDrafter};

use crate::support::{FakeSource, RecordingDrafter, call, call_json, meta};

fn tool(warnings: &[&str]) -> (SkillDraftTool, Arc<RecordingDrafter>) {
    let drafter = Arc::new(RecordingDrafter {
        warnings: warnings.iter().map(ToString::to_string).collect(),
        ..RecordingDrafter::default()
    });
    (
        SkillDraftTool::new(Arc::clone(&drafter) as Arc<dyn SkillDrafter>),
        drafter,
    )
}

#[tokio::test]
async fn the_tool_is_mutating_and_hidden_in_plan_mode() {
    let (draft, _) = tool(&[]);
    assert!(!draft.read_only());
    let spec = draft.spec();
    assert_eq!(spec.name(), "SkillDraft");
    assert_eq!(
        spec.schema().unwrap()["required"],
        serde_json::json!(["name", "description", "body"])
    );
    let source = Arc::new(FakeSource::new().skill(meta("review", "d"), "b"));
    let mut catalog = Catalog::new();
    catalog.must_register(Arc::new(draft));
    catalog.must_register(Arc::new(SkillTool::new(source.clone(), source.metas())));
    assert_eq!(catalog.available_names(PermissionMode::Plan), ["Skill"]);
    assert_eq!(
        catalog.available_names(PermissionMode::Default),
        ["Skill", "SkillDraft"]
    );
}

#[tokio::test]
async fn success_names_the_relative_location_and_says_inactive() {
    let (draft, drafter) = tool(&["near-duplicate of active skills: deploy-staging"]);
    let result = call_json(
        &draft,
        serde_json::json!({
            "name": "deploy-to-staging",
            "description": "How to deploy to staging.",
            "body": "1. Build.\n2. Deploy."
        }),
    )
    .await;
    assert!(!result.is_error(), "a near-duplicate is a note, not an error");
    let text = result.content();
    assert!(text.contains("deploy-to-staging/SKILL.md"), "{text}");
    assert!(text.contains("not active this session"), "{text}");
    assert!(
        text.contains("\nNote: near-duplicate of active skills: deploy-staging"),
        "{text}"
    );
    assert!(
        !text.split_whitespace().any(|word| word.starts_with('/')),
        "{text}"
    );
    assert_eq!(drafter.written.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn bad_arguments_and_draft_errors_are_error_results() {
    let (draft, drafter) = tool(&[]);
    let raw = call(&draft, "{bad").await;
    assert!(raw.is_error(), "{}", raw.content());
    let missing = call(&draft, r#"{"name": "x"}"#).await;
    assert!(missing.is_error());
    let invalid = call_json(
        &draft,
        serde_json::json!({"name": "Bad Name", "description": "d", "body": "b"}),
    )
    .await;
    assert!(invalid.is_error());
    assert!(invalid.content().contains("invalid"), "{}", invalid.content());
    assert!(drafter.written.lock().unwrap().is_empty(), "nothing written");
}
