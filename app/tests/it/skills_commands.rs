//! Skills and slash commands through the real build: the trust gate, project commands, the palette, and byte parity of
//! file and in-memory templates through the real chain.

use std::sync::Arc;

use adapter_skillfs::ProjectTrust;
use app::{Built, SessionRequest, build};
use engine_core::{CommandChain, OutputCap};
use engine_ports::testkit::MemoryCommandSource;
use engine_ports::{CommandExpander, CommandInfo, Expansion, Level};
use serde_json::Value;

use crate::support::{Scratch, config, mecated};

async fn expand(built: &Built, input: &str) -> Expansion {
    built.commands().expand(input).await.unwrap()
}

#[tokio::test]
async fn an_untrusted_project_skill_exists_nowhere() {
    let scratch = Scratch::new();
    scratch.skill("ws/.mecatl/skills", "proj", "A project skill.");
    let explicit = scratch.skill("skills", "greet", "Greets people.");
    for trust in [ProjectTrust::Untrusted, ProjectTrust::Trusted] {
        let mut cfg = config(&scratch);
        cfg.skills.conventional = true;
        cfg.skills.trust = trust;
        cfg.skills.dirs = vec![explicit.clone()];
        let built = build(cfg).await.unwrap();
        let skills: Vec<&str> = built.report().skills.iter().map(|s| s.name.as_str()).collect();
        let description = built
            .shared_catalog()
            .lookup("Skill")
            .unwrap()
            .spec()
            .description()
            .to_owned();
        let palette: Vec<String> = built
            .commands()
            .list()
            .await
            .unwrap()
            .into_iter()
            .map(|c| c.name)
            .collect();
        let proj = expand(&built, "/proj now").await;
        if trust.is_trusted() {
            assert_eq!(skills, ["greet", "proj"]);
            assert!(description.contains("- proj: A project skill."));
            assert!(palette.contains(&"proj".to_owned()));
            assert!(matches!(proj, Expansion::Expanded(ref text) if text.contains("Do the proj thing.")));
        } else {
            assert_eq!(skills, ["greet"]);
            assert!(!description.contains("proj"), "{description}");
            assert!(!palette.contains(&"proj".to_owned()), "{palette:?}");
            assert_eq!(proj, Expansion::NotExpanded);
            let withheld = built
                .report()
                .diagnostics
                .iter()
                .filter(|d| d.level == Level::Warn && d.message.contains("withheld"))
                .count();
            assert_eq!(withheld, 1, "{:?}", built.report().diagnostics);
        }
        built.close().await.unwrap();
    }

    // And `tools --json` shows it only for a trusted workspace.
    let ws = scratch.ws().display().to_string();
    let untrusted = mecated(
        scratch.dir.path(),
        &["tools", "--json", "--workspace", &ws, "--skills-conventional"],
        &[],
    )
    .await;
    let trusted = mecated(
        scratch.dir.path(),
        &[
            "tools",
            "--json",
            "--workspace",
            &ws,
            "--skills-conventional",
            "--trust-project",
        ],
        &[],
    )
    .await;
    let listed = |output: &crate::support::Output| -> Vec<String> {
        let json: Value = serde_json::from_str(&output.stdout).unwrap();
        json["skills"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(listed(&untrusted), Vec::<String>::new());
    assert_eq!(listed(&trusted), ["proj"]);
    let json: Value = serde_json::from_str(&trusted.stdout).unwrap();
    assert_eq!(json["skills"][0]["origin"], "project");
    let json: Value = serde_json::from_str(&untrusted.stdout).unwrap();
    assert!(
        !json["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "Skill")
    );
}

#[tokio::test]
async fn trusted_project_commands_expand_and_untrusted_ones_pass_through() {
    let scratch = Scratch::new();
    scratch.write("ws/.claude/commands/hi.md", "Hello $ARGUMENTS");
    let mut cfg = config(&scratch);
    cfg.skills.trust = ProjectTrust::Trusted;
    let built = build(cfg).await.unwrap();
    assert_eq!(
        expand(&built, "/hi there").await,
        Expansion::Expanded("Hello there".to_owned())
    );
    built.close().await.unwrap();

    let built = build(config(&scratch)).await.unwrap();
    assert_eq!(expand(&built, "/hi there").await, Expansion::NotExpanded);
    let warns: Vec<&str> = built
        .report()
        .diagnostics
        .iter()
        .filter(|d| d.level == Level::Warn)
        .map(|d| d.message.as_str())
        .collect();
    assert!(
        warns
            .iter()
            .any(|w| w.contains("withheld") && w.contains(".claude/commands")),
        "{warns:?}"
    );
    built.close().await.unwrap();

    // Through `run`: the expanded text is the user message the session stores.
    let ws = scratch.ws().display().to_string();
    let store = scratch.path("store").display().to_string();
    let output = mecated(
        scratch.dir.path(),
        &[
            "run",
            "--mock",
            "--workspace",
            &ws,
            "--toolhive=false",
            "--trust-project",
            "--store-dir",
            &store,
            "--session",
            "hi",
            "/hi there",
        ],
        &[],
    )
    .await;
    assert_eq!(output.code, 0, "{output:?}");
    let token = adapter_jsonlstore::JsonlStore::token(&engine_ports::SessionId::from("hi"));
    let snapshot =
        std::fs::read_to_string(scratch.path(&format!("store/sid-v1/{token}.session.json"))).unwrap();
    assert!(snapshot.contains("\"Hello there\""), "{snapshot}");
    assert!(!snapshot.contains("/hi there"), "{snapshot}");
}

#[tokio::test]
async fn the_palette_merges_files_and_skills_with_files_first() {
    let scratch = Scratch::new();
    scratch.write(
        "ws/.mecatl/commands/review.md",
        "---\ndescription: Review a pull request\n---\nReview $1.\n",
    );
    scratch.write("ws/.mecatl/commands/fix.md", "Fix the failing test in $1\n");
    scratch.write(
        "ws/.mecatl/commands/dup.md",
        "---\ndescription: from mecatl\n---\nmecatl dup\n",
    );
    scratch.write(
        "ws/.claude/commands/dup.md",
        "---\ndescription: from claude\n---\nclaude dup\n",
    );
    let skills = scratch.skill("skills", "greet", "Greets people.");
    let mut cfg = config(&scratch);
    cfg.skills.trust = ProjectTrust::Trusted;
    cfg.skills.dirs = vec![skills];
    let built = build(cfg).await.unwrap();
    let palette = built.commands().list().await.unwrap();
    let entry = |name: &str, description: &str| CommandInfo {
        name: name.to_owned(),
        description: description.to_owned(),
    };
    assert_eq!(
        palette,
        [
            entry("dup", "from mecatl"),
            entry("fix", "Fix the failing test in $1"),
            entry("greet", "Greets people."),
            entry("review", "Review a pull request"),
        ]
    );
    assert_eq!(
        expand(&built, "/dup").await,
        Expansion::Expanded("mecatl dup\n".to_owned())
    );
    // Per-session engines share the chain.
    let session = built
        .factory()
        .create_private(SessionRequest::default())
        .await
        .unwrap();
    let again = session.engine().commands().unwrap().list().await.unwrap();
    assert_eq!(again, palette);
    session.close().await.unwrap();
    built.close().await.unwrap();
}

#[tokio::test]
async fn file_and_in_memory_templates_expand_byte_identically() {
    let templates = [
        (
            "review",
            "Review $1 against $2 (third: $3). All: $ARGUMENTS. Home: $HOME\n",
        ),
        ("fix", "---\ndescription: Fix it\n---\nFix $1 now.\n"),
        ("odd", "---\nnot closed\nBody $ARGUMENTS\n"),
    ];
    let scratch = Scratch::new();
    for (name, body) in templates {
        scratch.write(&format!("commands/{name}.md"), body);
    }
    let mut cfg = config(&scratch);
    cfg.commands_dir = Some(scratch.path("commands"));
    let built = build(cfg).await.unwrap();
    let memory = CommandChain::builder(OutputCap::new(engine_core::DEFAULT_OUTPUT_CAP))
        .file_commands(Arc::new(MemoryCommandSource::from_templates(templates)))
        .build();
    for input in [
        "/review foo.go bar.go",
        "  /review one",
        "/fix pkg/thing.go",
        "/odd a b c",
        "/review",
    ] {
        let from_files = built.commands().expand(input).await.unwrap();
        let from_memory = memory.expand(input).await.unwrap();
        assert!(matches!(from_files, Expansion::Expanded(_)), "{input}");
        assert_eq!(from_files, from_memory, "{input}");
    }
    assert_eq!(
        expand(&built, "/review foo.go bar.go").await,
        Expansion::Expanded(
            "Review foo.go against bar.go (third: ). All: foo.go bar.go. Home: $HOME\n".to_owned()
        )
    );
    built.close().await.unwrap();
}

#[tokio::test]
async fn skills_list_prints_the_resolved_skills() {
    let scratch = Scratch::new();
    let skills = scratch
        .skill("skills", "greet", "Greets people.")
        .display()
        .to_string();
    let ws = scratch.ws().display().to_string();
    let output = mecated(
        scratch.dir.path(),
        &[
            "skills",
            "list",
            "--json",
            "--workspace",
            &ws,
            "--skills-dir",
            &skills,
        ],
        &[],
    )
    .await;
    assert_eq!(output.code, 0, "{output:?}");
    let json: Value = serde_json::from_str(&output.stdout).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "skills": [{"name": "greet", "description": "Greets people.", "origin": "explicit", "has_assets": false}],
            "diagnostics": [],
        })
    );
    let text = mecated(
        scratch.dir.path(),
        &["skills", "list", "--workspace", &ws, "--skills-dir", &skills],
        &[],
    )
    .await;
    assert_eq!(text.stdout, "greet  explicit  Greets people.\n");
}

#[tokio::test]
async fn skills_promote_moves_a_draft_and_refuses_without_confirmation() {
    let scratch = Scratch::new();
    let draft = "---\nname: \"tidy\"\ndescription: \"Tidies things up.\"\norigin: model\ndrafted_at: 2026-01-01T00:00:00Z\n---\n\nTidy the workspace.\n";
    scratch.write("drafts/tidy/SKILL.md", draft);
    let ws = scratch.ws().display().to_string();
    let drafts = scratch.path("drafts").display().to_string();
    let active = scratch.path("active").display().to_string();
    let base = [
        "skills",
        "promote",
        "--workspace",
        &ws,
        "--skills-draft-dir",
        &drafts,
        "--skills-dir",
        &active,
    ];
    let refused = mecated(scratch.dir.path(), &[&base[..], &["tidy"]].concat(), &[]).await;
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(refused.stderr.contains("not confirmed"), "{}", refused.stderr);
    assert!(scratch.path("drafts/tidy/SKILL.md").is_file());

    let promoted = mecated(scratch.dir.path(), &[&base[..], &["--yes", "tidy"]].concat(), &[]).await;
    assert_eq!(promoted.code, 0, "{promoted:?}");
    assert!(
        promoted.stdout.contains("promoted skill tidy"),
        "{}",
        promoted.stdout
    );
    assert!(scratch.path("active/tidy/SKILL.md").is_file());
    assert!(!scratch.path("drafts/tidy").exists());

    let missing = mecated(
        scratch.dir.path(),
        &["skills", "promote", "--workspace", &ws, "--yes", "tidy"],
        &[],
    )
    .await;
    assert_eq!(missing.code, 2, "{missing:?}");
    assert!(
        missing.stderr.contains("--skills-draft-dir"),
        "{}",
        missing.stderr
    );
}
