//! Conformance suite for [`CommandSource`] implementations, over a canonical fixture
//! of command templates.
//!
//! Each adapter materialises [`fixture`] in its own medium (for files:
//! `<dir>/<name>.md` holding [`CommandFixture::template`]) and hands [`run`] a fresh
//! source per case. The suite pins what makes expansion byte-identical across
//! sources: bodies come back verbatim (frontmatter included, `post` empty), listings
//! are sorted, and an unknown name is `Ok(None)`.

use std::any::Any;
use std::sync::Arc;

use crate::commands::{CommandBody, CommandInfo, CommandSource};

/// One command of the canonical fixture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandFixture {
    /// The command name.
    pub name: &'static str,
    /// The template text, exactly as stored.
    pub template: &'static str,
    /// The description a listing must show: the frontmatter `description:` value, or
    /// else the first non-blank line, trimmed and cut to 80 chars with `…`.
    pub description: &'static str,
}

/// The canonical fixture, sorted by name: frontmatter with a description (`review`),
/// a quoted description (`quoted`), CRLF line endings (`crlf`), no frontmatter
/// (`fix`), an unclosed block (`odd`: no frontmatter, so its first line describes
/// it) and a first line over 80 chars (`long`).
pub fn fixture() -> Vec<CommandFixture> {
    vec![
        CommandFixture {
            name: "crlf",
            template: "---\r\ndescription: Windows line endings\r\n---\r\nLine one $1\r\nLine two\r\n",
            description: "Windows line endings",
        },
        CommandFixture {
            name: "fix",
            template: "Fix the failing test in $1\n",
            description: "Fix the failing test in $1",
        },
        CommandFixture {
            name: "long",
            template: "Explain, in plain words and with one example for each point, why this 100-character line is longer\n",
            description: "Explain, in plain words and with one example for each point, why this 100-chara\u{2026}",
        },
        CommandFixture {
            name: "odd",
            template: "---\nnot closed\nOdd $ARGUMENTS and $1\n",
            description: "---",
        },
        CommandFixture {
            name: "quoted",
            template: "---\ndescription: 'Summarise the diff'\nargument-hint: [file]\n---\n\nSummarise $ARGUMENTS\n",
            description: "Summarise the diff",
        },
        CommandFixture {
            name: "review",
            template: "---\ndescription: Review a pull request\n---\nReview $1 $2 $3.\nAll: $ARGUMENTS\nHome stays: $HOME\n",
            description: "Review a pull request",
        },
    ]
}

/// A source under test, plus whatever must outlive it.
pub struct CommandSourceUnderTest {
    /// The source.
    pub source: Arc<dyn CommandSource>,
    /// Dropped after the case.
    pub guard: Box<dyn Any + Send>,
}

impl CommandSourceUnderTest {
    /// A source that needs nothing kept alive.
    pub fn new(source: Arc<dyn CommandSource>) -> Self {
        Self {
            source,
            guard: Box::new(()),
        }
    }
}

/// Runs every case, each against a fresh source built by `make` from [`fixture`].
///
/// # Panics
/// When a case fails; the message names the case.
pub async fn run(make: impl Fn(&[CommandFixture]) -> CommandSourceUnderTest) {
    let fixture = fixture();
    listing_matches_the_fixture(make(&fixture), &fixture).await;
    bodies_are_verbatim(make(&fixture), &fixture).await;
    unknown_names_are_none(make(&fixture)).await;
}

async fn listing_matches_the_fixture(sut: CommandSourceUnderTest, fixture: &[CommandFixture]) {
    let case = "listing_matches_the_fixture";
    let expected: Vec<CommandInfo> = fixture
        .iter()
        .map(|c| CommandInfo {
            name: c.name.to_owned(),
            description: c.description.to_owned(),
        })
        .collect();
    for _ in 0..2 {
        match sut.source.list_commands().await {
            Ok(listed) => assert_eq!(listed, expected, "command_source::{case}"),
            Err(error) => panic!("command_source::{case}: {error}"),
        }
    }
}

async fn bodies_are_verbatim(sut: CommandSourceUnderTest, fixture: &[CommandFixture]) {
    let case = "bodies_are_verbatim";
    for command in fixture {
        let body = sut.source.command_body(command.name).await;
        let expected = CommandBody {
            body: command.template.to_owned(),
            post: String::new(),
        };
        assert_eq!(
            body,
            Ok(Some(expected)),
            "command_source::{case}: {}",
            command.name
        );
    }
}

async fn unknown_names_are_none(sut: CommandSourceUnderTest) {
    let case = "unknown_names_are_none";
    for name in ["no-such-command", "has space", "../review", ""] {
        let body = sut.source.command_body(name).await;
        assert_eq!(body, Ok(None), "command_source::{case}: {name:?}");
    }
}
