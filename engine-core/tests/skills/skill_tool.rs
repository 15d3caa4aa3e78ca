//! The `Skill` tool.

use std::sync::Arc;

use engine_core::{Catalog, Deps, Engine, SkillTool, Tool};
use engine_ports::testkit::{MemorySkill, MemorySkillSource, ScriptedLlm, ScriptedTurn};
use engine_ports::{PermissionMode, SessionId, SkillMeta, SkillSource, SkillSourceError};
use futures::StreamExt as _;

use crate::support::{C, FakeSource, call, call_json, marker, meta};

const PREAMBLE: &str = "\
Activates a skill: a named set of instructions for a particular kind of task.
Call with {name} to activate a skill: the result is its instructions plus its bundled assets, listed by logical name.
Call with {name, asset} to get one textual asset, using a logical name exactly as the activation listed it.
Assets are reachable only through this tool.
Available skills:";

fn tool(source: FakeSource) -> (SkillTool, Arc<FakeSource>) {
    let source = Arc::new(source);
    (
        SkillTool::new(Arc::clone(&source) as Arc<dyn SkillSource>, source.metas()),
        source,
    )
}

fn review() -> FakeSource {
    FakeSource::new()
        .skill(
            SkillMeta {
                compatibility: Some("mecatl >= 1".into()),
                allowed_tools: vec!["Grep".into()],
                ..meta("review", "Review a change.")
            },
            "Follow the review procedure.",
        )
        .asset("review", "references/checklist.md", "- [ ] tests\n")
}

fn header(skill: &str, asset: &str) -> String {
    format!("Skill: {skill}, asset: {asset}\n\n")
}

#[tokio::test]
async fn tool_spec() {
    let (tool, _) = tool(review());
    let spec = tool.spec();
    assert_eq!(spec.name(), "Skill");
    assert!(tool.read_only());
    assert!(tool.advertised_spec().is_none(), "not disclosable");
    let schema = spec.schema().unwrap();
    assert_eq!(schema["required"], serde_json::json!(["name"]));
    assert_eq!(schema["properties"]["name"]["type"], "string");
    assert_eq!(schema["properties"]["asset"]["type"], "string");
    let description = spec.description();
    assert!(description.contains("{name}") && description.contains("{name, asset}"));
    for forbidden in [
        "Base directory",
        "absolute path",
        "path",
        "director",
        "/workspace",
        "Read",
        "Shell",
        "script",
        "file",
    ] {
        assert!(!description.contains(forbidden), "{forbidden:?} in {description}");
    }
}

#[tokio::test]
async fn the_description_is_stable_and_one_line_per_skill() {
    let source = FakeSource::new().skill(meta("zeta", "Last one."), "z").skill(
        meta("alpha", "First line\n  second line\r\nthird\tkept  spaces"),
        "a",
    );
    let (first, source) = tool(source);
    assert_eq!(
        first.description(),
        format!("{PREAMBLE}\n- alpha: First line second line third\tkept  spaces\n- zeta: Last one.")
    );
    let again = SkillTool::new(Arc::clone(&source) as Arc<dyn SkillSource>, source.metas());
    assert_eq!(
        first.description().as_bytes(),
        again.description().as_bytes(),
        "2 builds"
    );
    let rebuilt = SkillTool::from_source(source).await.unwrap();
    assert_eq!(first.description(), rebuilt.description());

    let empty = SkillTool::new(Arc::new(FakeSource::new()), Vec::new());
    assert_eq!(
        empty.description(),
        format!("{PREAMBLE}\nNo skills are configured.")
    );

    let long = FakeSource::new().skill(meta("long", &"x".repeat(2_000)), "b");
    let (long, _) = tool(long);
    let line = long.description().lines().last().unwrap();
    assert!(line.len() <= 800 && line.ends_with('\u{2026}'), "{}", line.len());
}

#[tokio::test]
async fn the_description_is_byte_identical_across_turns_and_sessions() {
    let (skill, _) = tool(review());
    let mut catalog = Catalog::new();
    catalog.must_register(Arc::new(skill));
    let llm = Arc::new(ScriptedLlm::new([
        ScriptedTurn::call("c1", "Skill", r#"{"name":"review"}"#),
        ScriptedTurn::text("done"),
        ScriptedTurn::text("second session"),
    ]));
    let engine = Engine::new(Deps::new(llm.clone(), Arc::new(catalog), crate::support::env())).unwrap();
    for session in ["s1", "s2"] {
        let session = SessionId::from(session);
        engine
            .create_session(&session, PermissionMode::Default)
            .await
            .unwrap();
        let mut run = engine.run(&session, "go").unwrap();
        while run.next().await.is_some() {}
    }
    let requests = llm.requests();
    assert_eq!(requests.len(), 3, "two turns in s1, one in s2");
    let descriptions: Vec<String> = requests
        .iter()
        .map(|r| {
            r.tools
                .iter()
                .find(|t| t.name() == "Skill")
                .unwrap()
                .description()
                .to_owned()
        })
        .collect();
    assert!(
        descriptions
            .windows(2)
            .all(|w| w[0].as_bytes() == w[1].as_bytes())
    );
}

#[tokio::test]
async fn activation() {
    let (tool, source) = tool(review());
    let result = call_json(&tool, serde_json::json!({"name": "review"})).await;
    assert!(!result.is_error(), "{}", result.content());
    let text = result.content();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "Skill: review");
    assert_eq!(lines[1], "Compatibility: mecatl >= 1");
    assert!(
        lines[2].contains("Grep") && lines[2].contains("advisory"),
        "{}",
        lines[2]
    );
    assert!(lines[2].contains("nothing is granted") && lines[2].contains("permission rules"));
    assert!(text.contains("  - references/checklist.md (12 bytes)"), "{text}");
    assert!(text.ends_with("\n\nFollow the review procedure."), "{text}");
    assert_eq!(source.reads(), 0);
}

#[tokio::test]
async fn golden_full() {
    let source = Arc::new(MemorySkillSource::new([MemorySkill {
        meta: SkillMeta {
            compatibility: Some("mecatl >= 0.1".into()),
            allowed_tools: vec!["Bash".into(), "Read".into()],
            ..meta("full", "Everything at once.")
        },
        ..MemorySkill::new("full", "Everything at once.", "Full body.")
    }
    .with_asset("references/api.md", "API notes\n")
    .with_asset("scripts/run.sh", "#!/bin/sh\necho ok\n")]));
    let metas = source.list_skills().await.unwrap();
    let tool = SkillTool::new(Arc::clone(&source) as Arc<dyn SkillSource>, metas);

    let activation = call_json(&tool, serde_json::json!({"name": "full"})).await;
    assert_eq!(
        activation.content(),
        "Skill: full\n\
         Compatibility: mecatl >= 0.1\n\
         Expected tools: Shell, Read (advisory: the skill expects to use these tools; nothing is granted, and every call still follows the normal permission rules)\n\
         Bundled assets, by logical name (to fetch one, call the Skill tool again with `name` and `asset`):\n  \
         - references/api.md (10 bytes)\n  \
         - scripts/run.sh (18 bytes)\n\
         \n\
         Full body."
    );
    assert_eq!(source.calls().reads, 0);

    let asset = call_json(
        &tool,
        serde_json::json!({"name": "full", "asset": "references/api.md"}),
    )
    .await;
    assert_eq!(
        asset.content(),
        format!("{}API notes\n", header("full", "references/api.md"))
    );
    assert_eq!(source.calls().reads, 1);
}

#[tokio::test]
async fn the_activation_cap() {
    let (tool, source) = tool(
        FakeSource::new()
            .skill(meta("huge", "d"), &"body-".repeat(25_000))
            .asset("huge", "a.md", "x"),
    );
    let result = call_json(&tool, serde_json::json!({"name": "huge"})).await;
    assert_eq!(result.content().len(), C);
    assert!(result.content().ends_with(&marker()));
    assert_eq!(source.reads(), 0);
}

#[tokio::test]
async fn asset_read() {
    let (tool, source) = tool(FakeSource::new().skill(meta("review", "d"), "b").asset(
        "review",
        "references/checklist.md",
        "hello",
    ));
    let result = call_json(
        &tool,
        serde_json::json!({"name": "review", "asset": "references/checklist.md"}),
    )
    .await;
    assert!(!result.is_error());
    assert_eq!(
        result.content(),
        format!("{}hello", header("review", "references/checklist.md"))
    );
    assert_eq!(source.reads(), 1);
}

#[tokio::test]
async fn the_payload_limit() {
    let limit = C - header("s", "exact.md").len();
    let over_limit = C - header("s", "over.md").len();
    let (tool, source) = tool(
        FakeSource::new()
            .skill(meta("s", "d"), "b")
            .asset("s", "exact.md", "x".repeat(limit))
            .asset_sized("s", "over.md", over_limit as u64 + 1, "x"),
    );
    let exact = call_json(&tool, serde_json::json!({"name": "s", "asset": "exact.md"})).await;
    assert!(!exact.is_error());
    assert_eq!(exact.content().len(), C);
    assert!(!exact.content().ends_with(&marker()));
    assert_eq!(source.reads(), 1);

    let over = call_json(&tool, serde_json::json!({"name": "s", "asset": "over.md"})).await;
    assert!(over.is_error());
    assert!(over.content().contains("too large"), "{}", over.content());
    let (size, shown_limit) = ((over_limit + 1).to_string(), over_limit.to_string());
    assert!(
        over.content().contains(&size) && over.content().contains(&shown_limit),
        "{}",
        over.content()
    );
    assert_eq!(source.reads(), 1, "no read for an advertised size over the limit");
}

#[tokio::test]
async fn rejected_before_reading() {
    let (tool, source) = tool(
        FakeSource::new()
            .skill(meta("s", "d"), "b")
            .asset("s", "listed.md", "x")
            .asset_sized("s", "big.md", 25_001, "x"),
    );
    for (asset, needle) in [
        ("../secret", "invalid logical asset name"),
        ("unlisted.md", "unknown asset"),
        ("big.md", "too large"),
    ] {
        let result = call_json(&tool, serde_json::json!({"name": "s", "asset": asset})).await;
        assert!(result.is_error(), "{asset}");
        assert!(result.content().contains(needle), "{asset}: {}", result.content());
    }
    assert_eq!(source.reads(), 0);
    let unknown = call_json(&tool, serde_json::json!({"name": "s", "asset": "unlisted.md"})).await;
    assert!(unknown.content().contains("\"s\"") && unknown.content().contains("activate the skill"));
}

#[tokio::test]
async fn rejected_after_one_read() {
    let limit = C - header("s", "grown.md").len();
    let payload = "x".repeat(limit + 1);
    let cases: [(&str, Vec<u8>, &[&str]); 3] = [
        (
            "grown.md",
            payload.clone().into_bytes(),
            &["too large", "no content returned"],
        ),
        (
            "binary.md",
            [b"x".repeat(200), vec![0xFF]].concat(),
            &["not valid UTF-8"],
        ),
        (
            "nul.md",
            [b"x".repeat(200), b"a\0b".to_vec()].concat(),
            &["NUL", "not a textual asset"],
        ),
    ];
    for (asset, content, needles) in cases {
        let (tool, source) = tool(
            FakeSource::new()
                .skill(meta("s", "d"), "b")
                .asset_sized("s", asset, 10, content),
        );
        let result = call_json(&tool, serde_json::json!({"name": "s", "asset": asset})).await;
        assert!(result.is_error(), "{asset}");
        for needle in needles {
            assert!(result.content().contains(needle), "{asset}: {}", result.content());
        }
        assert!(
            !result.content().contains(&"x".repeat(100)),
            "{asset}: payload leaked"
        );
        assert_eq!(source.reads(), 1, "{asset}");
    }
}

#[tokio::test]
async fn long_source_errors_are_cut() {
    let long = SkillSourceError::Backend {
        message: "e".repeat(8_000),
    };
    let bound = 1_000 + marker().len();
    let mut body = FakeSource::new()
        .skill(meta("s", "d"), "b")
        .asset("s", "a.md", "x");
    body.body_error = Some(long.clone());
    let (tool_body, _) = tool(body);
    let mut listing = FakeSource::new()
        .skill(meta("s", "d"), "b")
        .asset("s", "a.md", "x");
    listing.list_error = Some(long.clone());
    let (tool_listing, _) = tool(listing);
    let mut read = FakeSource::new()
        .skill(meta("s", "d"), "b")
        .asset("s", "a.md", "x");
    read.read_error = Some(long);
    let (tool_read, _) = tool(read);

    for (tool, args, what) in [
        (&tool_body, serde_json::json!({"name": "s"}), "loading skill"),
        (
            &tool_listing,
            serde_json::json!({"name": "s"}),
            "listing the assets",
        ),
        (
            &tool_read,
            serde_json::json!({"name": "s", "asset": "a.md"}),
            "reading asset",
        ),
    ] {
        let result = call_json(tool, args).await;
        assert!(result.is_error());
        assert!(
            result.content().len() <= bound,
            "{what}: {}",
            result.content().len()
        );
        assert!(result.content().starts_with(what), "{}", &result.content()[..60]);
        assert!(result.content().ends_with(&marker()));
    }
}

#[tokio::test]
async fn bad_calls_are_error_results() {
    let (tool, source) = tool(
        FakeSource::new()
            .skill(meta("review", "d"), "b")
            .skill(meta("commit-style", "d"), "b"),
    );
    for args in [r#"{"name":"missing"}"#, "{}", r#"{"name":"   "}"#] {
        let result = call(&tool, args).await;
        assert!(result.is_error(), "{args}");
        assert!(
            result.content().contains("commit-style, review"),
            "{args}: {}",
            result.content()
        );
    }
    assert!(call(&tool, "{}").await.content().contains("`name` is required"));
    assert!(
        call(&tool, r#"{"name":"missing"}"#)
            .await
            .content()
            .contains("\"missing\"")
    );
    let raw = call(&tool, "{").await;
    assert!(raw.is_error(), "{}", raw.content());
    let typed = call(&tool, r#"{"name": 5}"#).await;
    assert!(typed.is_error());
    let extra = call(&tool, r#"{"name": "review", "extra": true}"#).await;
    assert!(!extra.is_error(), "unknown properties are ignored");
    assert_eq!(source.reads(), 0);

    let none = SkillTool::new(Arc::new(FakeSource::new()), Vec::new());
    assert!(
        call(&none, "{}")
            .await
            .content()
            .contains("No skills are configured")
    );
}

#[tokio::test]
async fn a_large_inventory_is_bounded() {
    let mut source = FakeSource::new().skill(meta("many", "d"), "Body.");
    for i in 0..1_000 {
        source = source.asset("many", &format!("references/{i:04}.md"), "x");
    }
    let (tool, source) = tool(source);
    let text = call_json(&tool, serde_json::json!({"name": "many"}))
        .await
        .content()
        .to_owned();
    let start = text.find("Bundled assets").unwrap();
    let end = text.find("\n\nBody.").unwrap();
    let block = &text[start..end];
    assert!(block.len() <= 8_000, "{}", block.len());
    let shown = block.lines().filter(|l| l.starts_with("  - references/")).count();
    let last = block.lines().last().unwrap();
    assert!(last.starts_with("  ") && last.contains("omitted"), "{last}");
    assert!(last.contains(&(1_000 - shown).to_string()), "{last}");
    assert_eq!(source.reads(), 0);
}

#[tokio::test]
async fn activation_edge_cases() {
    let mut vanished = FakeSource::new().skill(meta("gone", "d"), "b");
    vanished.list_error = Some(SkillSourceError::SkillNotFound { skill: "gone".into() });
    let (tool_vanished, _) = tool(vanished);
    let result = call_json(&tool_vanished, serde_json::json!({"name": "gone"})).await;
    assert_eq!(
        result.content(),
        "Skill: gone\n\nb",
        "a listing's not-found means no assets"
    );

    let bad = FakeSource::new()
        .skill(meta("bad", "d"), "b")
        .asset("bad", "../secret", "x");
    let (tool_bad, _) = tool(bad);
    let result = call_json(&tool_bad, serde_json::json!({"name": "bad"})).await;
    assert!(result.is_error() && result.content().contains("invalid logical asset name"));

    let (plain, _) = tool(FakeSource::new().skill(meta("plain", "d"), "Just do it."));
    let result = call_json(&plain, serde_json::json!({"name": " plain ", "asset": ""})).await;
    assert_eq!(
        result.content(),
        "Skill: plain\n\nJust do it.",
        "name trimmed, empty asset activates"
    );
}
