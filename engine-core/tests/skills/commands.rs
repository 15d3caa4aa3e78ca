//! Slash commands: grammar, substitution, stripping, skills as commands, the chain
//! and the palette.

use std::sync::Arc;

use async_trait::async_trait;
use engine_core::{Catalog, CommandChain, Deps, Engine, OutputCap, SkillCommandSource, SourceExpander};
use engine_ports::testkit::{MemoryCommandSource, ScriptedLlm};
use engine_ports::{
    CommandError, CommandExpander, CommandInfo, CommandSource, Event, EventKind, Expansion, Message,
    PermissionMode, SessionId, SkillSource, SkillSourceError, StopReason,
};
use futures::StreamExt as _;

use crate::support::{C, FakeSource, marker, meta};

fn cap() -> OutputCap {
    OutputCap::new(C)
}

fn templates(pairs: &[(&str, &str)]) -> Arc<dyn CommandSource> {
    Arc::new(MemoryCommandSource::from_templates(pairs.iter().copied()))
}

fn expander(source: Arc<dyn CommandSource>) -> SourceExpander {
    SourceExpander::new(source, cap())
}

async fn expanded(expander: &dyn CommandExpander, input: &str) -> String {
    match expander.expand(input).await {
        Ok(Expansion::Expanded(text)) => text,
        other => panic!("{input:?} must expand: {other:?}"),
    }
}

async fn passes_through(expander: &dyn CommandExpander, input: &str) {
    assert_eq!(
        expander.expand(input).await,
        Ok(Expansion::NotExpanded),
        "{input:?}"
    );
}

fn info(name: &str, description: &str) -> CommandInfo {
    CommandInfo {
        name: name.into(),
        description: description.into(),
    }
}

/// A chain link that always fails, or cannot list.
struct Broken {
    can_list: bool,
}

#[async_trait]
impl CommandExpander for Broken {
    async fn expand(&self, input: &str) -> Result<Expansion, CommandError> {
        Err(CommandError::Expand {
            command: input
                .trim_start_matches('/')
                .split(' ')
                .next()
                .unwrap_or_default()
                .into(),
            reason: "backend down".into(),
        })
    }
    async fn list(&self) -> Result<Vec<CommandInfo>, CommandError> {
        Err(CommandError::List {
            reason: "backend down".into(),
        })
    }
    fn can_list(&self) -> bool {
        self.can_list
    }
}

/// A listing-only link with fixed entries that never expands.
struct Listed(Vec<CommandInfo>);

#[async_trait]
impl CommandExpander for Listed {
    async fn expand(&self, _: &str) -> Result<Expansion, CommandError> {
        Ok(Expansion::NotExpanded)
    }
    async fn list(&self) -> Result<Vec<CommandInfo>, CommandError> {
        Ok(self.0.clone())
    }
}

#[tokio::test]
async fn pass_through() {
    let empty = CommandChain::new(Vec::new());
    for input in ["hello world", "/review foo.go", ""] {
        passes_through(&empty, input).await;
    }
    assert!(empty.list().await.unwrap().is_empty());

    let chain = CommandChain::builder(cap())
        .file_commands(templates(&[("review", "Review $1")]))
        .build();
    for input in ["/nope foo", "just chatting", "look at /etc/hosts", "/", "/ space"] {
        passes_through(&chain, input).await;
    }
}

#[tokio::test]
async fn without_an_expander_the_engine_sends_the_prompt_verbatim() {
    let llm = Arc::new(ScriptedLlm::new([]));
    let engine = Engine::new(Deps::new(
        llm.clone(),
        Arc::new(Catalog::new()),
        crate::support::env(),
    ))
    .unwrap();
    let session = SessionId::from("s");
    let mut run = engine.run(&session, "/review foo.go").unwrap();
    while run.next().await.is_some() {}
    let first = &llm.requests()[0].messages[0];
    assert_eq!(
        first,
        &Message::User {
            text: "/review foo.go".into()
        }
    );
}

#[tokio::test]
async fn positional_arguments() {
    let source = templates(&[("review", "Please review $1 and also $2.\nAll args: $ARGUMENTS")]);
    assert_eq!(
        expanded(&expander(source), "/review foo.go bar.go").await,
        "Please review foo.go and also bar.go.\nAll args: foo.go bar.go"
    );
}

#[tokio::test]
async fn placeholder_edge_cases() {
    let source = templates(&[
        ("c", "keep $HOME but drop [$3] and use $1"),
        ("twelve", "$12|$1|$0|trailing $"),
        ("glue", "$ARGUMENTSx"),
    ]);
    let expander = expander(source);
    assert_eq!(
        expanded(&expander, "/c only").await,
        "keep $HOME but drop [] and use only"
    );
    let args: Vec<String> = (1..=12).map(|i| format!("a{i}")).collect();
    assert_eq!(
        expanded(&expander, &format!("/twelve {}", args.join(" "))).await,
        "a12|a1||trailing $"
    );
    assert_eq!(expanded(&expander, "/glue p q").await, "p qx");
    assert_eq!(expanded(&expander, "/glue").await, "x");
}

#[tokio::test]
async fn frontmatter_stripping() {
    let source = templates(&[
        ("review", "---\ndescription: Review a file\n---\nReview $1 now."),
        ("open", "---\nnot closed\nBody $ARGUMENTS"),
    ]);
    let expander = expander(source);
    assert_eq!(expanded(&expander, "/review foo.go").await, "Review foo.go now.");
    assert_eq!(
        expanded(&expander, "/open x y").await,
        "---\nnot closed\nBody x y"
    );
}

#[tokio::test]
async fn trusted_and_withheld_project_commands() {
    // The file source lists `hi` only when the workspace is trusted (adapter test);
    // here: a source that has it expands, one that withholds it passes the input on.
    let trusted = expander(templates(&[("hi", "Hello $ARGUMENTS")]));
    assert_eq!(expanded(&trusted, "/hi there").await, "Hello there");
    let untrusted = expander(templates(&[]));
    passes_through(&untrusted, "/hi there").await;
}

#[tokio::test]
async fn listing_through_the_expander() {
    let source: Arc<dyn CommandSource> = Arc::new(MemoryCommandSource::new([
        (info("review", "Review a pull request"), Default::default()),
        (info("fix", "Fix the failing test in $1"), Default::default()),
        (
            info("bad name", "invalid names are not offered"),
            Default::default(),
        ),
    ]));
    assert_eq!(
        expander(source).list().await.unwrap(),
        [
            info("fix", "Fix the failing test in $1"),
            info("review", "Review a pull request")
        ]
    );
}

#[tokio::test]
async fn byte_parity_of_equal_templates() {
    let templates_ = [
        (
            "review",
            "---\ndescription: Review\n---\nReview $1 $2 $3 with $ARGUMENTS and $HOME\n",
        ),
        ("fix", "Fix $1 now.\r\nKeep CRLF.\r\n"),
        ("odd", "---\nnot closed\nOdd $ARGUMENTS"),
    ];
    let expected = [
        (
            "/review foo.go bar.go",
            "Review foo.go bar.go  with foo.go bar.go and $HOME\n",
        ),
        ("  /review one", "Review one   with one and $HOME\n"),
        ("/fix pkg/thing.go", "Fix pkg/thing.go now.\r\nKeep CRLF.\r\n"),
        ("/odd a b c", "---\nnot closed\nOdd a b c"),
        ("/review", "Review    with  and $HOME\n"),
    ];
    // Two independent sources holding the same templates (the file source returns
    // file text verbatim, proven against the in-memory one by the adapter's tests).
    let first = expander(templates(&templates_));
    let second = CommandChain::builder(cap())
        .remote_commands(templates(&templates_))
        .build();
    for (input, output) in expected {
        let a = expanded(&first, input).await;
        let b = expanded(&second, input).await;
        assert_eq!(a.as_bytes(), output.as_bytes(), "{input:?}");
        assert_eq!(a.as_bytes(), b.as_bytes(), "{input:?}");
    }
}

#[tokio::test]
async fn skill_command_listing_and_failures() {
    let source = FakeSource::new()
        .skill(meta("zebra", "Z."), "Zebra $1")
        .skill(meta("alpha", "First alpha."), "Alpha $1")
        .skill(meta("blank", "Blank body."), "  \n\t ")
        .skill(meta("Bad/Name", "Not a command name."), "x");
    let metas = [
        meta("zebra", "Z."),
        meta("alpha", "First alpha."),
        meta("alpha", "Duplicate alpha."),
        meta("blank", "Blank body."),
        meta("Bad/Name", "Not a command name."),
    ];
    let source = Arc::new(source);
    let commands = SkillCommandSource::new(Arc::clone(&source) as Arc<dyn SkillSource>, &metas);
    let listed = commands.list_commands().await.unwrap();
    let names: Vec<&str> = listed.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["alpha", "blank", "zebra"]);
    assert_eq!(listed[0].description, "First alpha.");

    let calls_before = source.calls();
    assert_eq!(commands.command_body("unknown").await, Ok(None));
    assert_eq!(commands.command_body("Bad/Name").await, Ok(None));
    assert_eq!(
        source.calls(),
        calls_before,
        "unadmitted names never reach the source"
    );
    assert_eq!(commands.command_body("blank").await, Ok(None));
    passes_through(&expander(Arc::new(commands)), "/blank x").await;

    let mut failing = FakeSource::new().skill(meta("s", "d"), "b");
    failing.body_error = Some(SkillSourceError::Backend {
        message: "backend unavailable".into(),
    });
    let failing = Arc::new(failing);
    let commands = SkillCommandSource::new(failing.clone(), &failing.metas());
    let error = commands.command_body("s").await.unwrap_err();
    assert!(
        matches!(&error, CommandError::Expand { command, reason } if command == "s" && reason.contains("backend unavailable")),
        "{error:?}"
    );

    let secret = Arc::new(
        FakeSource::new()
            .skill(meta("s", "d"), "b")
            .asset("s", "../secret", "x"),
    );
    let commands = SkillCommandSource::new(secret.clone(), &secret.metas());
    let error = commands.command_body("s").await.unwrap_err();
    assert!(error.to_string().contains("invalid logical asset"), "{error}");

    let mut missing = FakeSource::new().skill(meta("s", "d"), "b");
    missing.list_error = Some(SkillSourceError::SkillNotFound { skill: "s".into() });
    let missing = Arc::new(missing);
    let commands = SkillCommandSource::new(missing.clone(), &missing.metas());
    assert_eq!(commands.command_body("s").await, Ok(None));
}

#[tokio::test]
async fn skill_command_expansion() {
    let source = Arc::new(
        FakeSource::new()
            .skill(
                engine_ports::SkillMeta {
                    compatibility: Some("mecatl >= 1".into()),
                    allowed_tools: vec!["Shell".into()],
                    ..meta("deploy", "Deploy things.")
                },
                "Deploy $1 to $ARGUMENTS.",
            )
            .asset("deploy", "references/api.md", "a".repeat(42))
            .asset("deploy", "scripts/run.sh", "echo run\n"),
    );
    let commands = SkillCommandSource::new(source.clone(), &source.metas());
    let chain = CommandChain::builder(cap())
        .skill_commands(Arc::new(commands))
        .build();
    let text = expanded(&chain, "/deploy staging production").await;
    assert!(text.starts_with("Bundled assets, by logical name"), "{text}");
    assert!(text.contains("\n  - references/api.md (42 bytes)\n"), "{text}");
    assert!(text.contains("\n  - scripts/run.sh (9 bytes)\n\n"), "{text}");
    assert!(
        text.ends_with("\n\nDeploy staging to staging production."),
        "{text}"
    );
    assert!(
        !text.contains("Expected tools") && !text.contains("Compatibility"),
        "{text}"
    );
    assert_eq!(source.reads(), 0);
}

#[tokio::test]
async fn asset_names_stay_literal_and_the_cap_holds() {
    let source = Arc::new(
        FakeSource::new()
            .skill(meta("post", "d"), "Use $1.")
            .asset("post", "$1.md", "x")
            .skill(meta("huge", "d"), &"y".repeat(30_000))
            .asset("huge", "references/a.md", "x"),
    );
    let commands = SkillCommandSource::new(source.clone(), &source.metas());
    let expander = expander(Arc::new(commands));
    let text = expanded(&expander, "/post value").await;
    assert!(text.contains("  - $1.md (1 bytes)"), "{text}");
    assert!(text.ends_with("\n\nUse value."), "{text}");

    let huge = expanded(&expander, "/huge").await;
    assert!(huge.len() <= C);
    assert!(huge.ends_with(&marker()));
    assert!(huge.starts_with("Bundled assets"));
}

#[tokio::test]
async fn chain_precedence() {
    let skill_source =
        Arc::new(FakeSource::new().skill(meta("dup", "Skill dup."), "SKILL dup body $ARGUMENTS"));
    let skills: Arc<dyn CommandSource> = Arc::new(SkillCommandSource::new(
        skill_source.clone(),
        &skill_source.metas(),
    ));
    let remote = templates(&[("dup", "REMOTE dup $ARGUMENTS"), ("far", "REMOTE far $1")]);
    let file = templates(&[("dup", "FILE dup body $ARGUMENTS")]);

    // Given in the wrong order on purpose: the builder places each link at its rank.
    let full = CommandChain::builder(cap())
        .remote_commands(remote.clone())
        .skill_commands(skills.clone())
        .file_commands(file)
        .build();
    assert_eq!(expanded(&full, "/dup x").await, "FILE dup body x");

    let no_file = CommandChain::builder(cap())
        .skill_commands(skills)
        .remote_commands(remote.clone())
        .build();
    assert_eq!(expanded(&no_file, "/dup x").await, "SKILL dup body x");
    assert_eq!(expanded(&no_file, "/far y").await, "REMOTE far y");

    let erroring = CommandChain::new(vec![
        Arc::new(Broken { can_list: true }),
        Arc::new(expander(remote)),
    ]);
    let error = erroring.expand("/far y").await.unwrap_err();
    assert!(error.to_string().contains("far"), "{error}");
}

#[tokio::test]
async fn a_chain_error_stops_the_run_before_the_model() {
    let llm = Arc::new(ScriptedLlm::new([]));
    let mut deps = Deps::new(llm.clone(), Arc::new(Catalog::new()), crate::support::env());
    deps.commands = Some(Arc::new(CommandChain::new(vec![Arc::new(Broken {
        can_list: true,
    })])));
    let engine = Engine::new(deps).unwrap();
    let session = SessionId::from("s");
    engine
        .create_session(&session, PermissionMode::Default)
        .await
        .unwrap();
    let mut run = engine.run(&session, "/deploy now").unwrap();
    let mut events: Vec<Event> = Vec::new();
    while let Some(event) = run.next().await {
        events.push(event);
    }
    let last = events.last().unwrap();
    assert!(
        matches!(
            &last.kind,
            EventKind::Result {
                stop: StopReason::Error,
                ..
            }
        ),
        "{last:?}"
    );
    assert!(llm.requests().is_empty(), "nothing reaches the model");
}

#[tokio::test]
async fn palette_merge() {
    let chain = CommandChain::new(vec![
        Arc::new(Listed(vec![info("b", "first"), info("a", "a")])),
        Arc::new(Broken { can_list: false }),
        Arc::new(Listed(vec![info("b", "second"), info("c", "c")])),
    ]);
    assert_eq!(
        chain.list().await.unwrap(),
        [info("a", "a"), info("b", "first"), info("c", "c")]
    );

    let failing = CommandChain::new(vec![
        Arc::new(Listed(vec![info("a", "a")])),
        Arc::new(Broken { can_list: true }),
    ]);
    assert!(matches!(failing.list().await, Err(CommandError::List { .. })));
}
