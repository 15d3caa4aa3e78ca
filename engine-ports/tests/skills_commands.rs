//! The skills and commands vocabulary: the validators, the
//! ellipsis truncation, and the conformance suites run against the in-memory doubles.

use std::sync::Arc;

use engine_ports::testkit::{MemoryCommandSource, MemorySkillSource, command_source, skill_source};
use engine_ports::{truncate_with_ellipsis, valid_command_name, valid_skill_asset_name, valid_skill_name};

#[test]
fn valid_asset_names() {
    for name in [
        "SKILL_NOTES.md",
        "references/api.md",
        "scripts/run.sh",
        "references/deep/nested/notes.md",
        "a.b/c.d",
        ".env.example",
    ] {
        assert!(valid_skill_asset_name(name), "{name:?} must be valid");
    }
}

#[test]
fn invalid_asset_names() {
    for name in [
        "", "../x", "a/../b", "a/..", "/abs", "a\\b", "a/./b", ".", "..", "a/", "a//b",
    ] {
        assert!(!valid_skill_asset_name(name), "{name:?} must be invalid");
    }
    for c in ['\0', '\n', '\r', '\t', '\u{85}', '\u{2028}', '\u{2029}'] {
        let name = format!("a{c}b");
        assert!(!valid_skill_asset_name(&name), "{name:?} must be invalid");
    }
}

#[test]
fn skill_names() {
    for name in [
        "review",
        "commit-style",
        "deploy-to-staging",
        "api_v2",
        "a",
        "a1",
        "my_skill-2",
        "1skill",
        "a--b",
        "a-",
    ] {
        assert!(valid_skill_name(name), "{name:?} must be valid");
    }
    let too_long = format!("a{}", "b".repeat(64));
    assert!(valid_skill_name(&too_long[..64]), "64 chars are fine");
    for name in [
        "",
        "Review",
        "UPPER",
        "my skill",
        "-lead",
        "_lead",
        "has.dot",
        too_long.as_str(),
    ] {
        assert!(!valid_skill_name(name), "{name:?} must be invalid");
    }
}

#[test]
fn command_names() {
    for name in ["review", "fix-1", "a_b.c", "X9"] {
        assert!(valid_command_name(name), "{name:?} must be valid");
    }
    for name in ["", "has space", "slash/y", "uni±code", "tab\tx", "/lead"] {
        assert!(!valid_command_name(name), "{name:?} must be invalid");
    }
}

#[test]
fn truncation_with_ellipsis_is_bounded_and_utf8_safe() {
    assert_eq!(truncate_with_ellipsis("abc", 3), "abc");
    let ascii = "x".repeat(1_600);
    let cut = truncate_with_ellipsis(&ascii, 800);
    assert_eq!(cut.len(), 800);
    assert!(cut.ends_with('\u{2026}'));
    let fits = "é".repeat(400);
    assert_eq!(truncate_with_ellipsis(&fits, 800), fits);
    let over = "é".repeat(401);
    let cut = truncate_with_ellipsis(&over, 800);
    assert!(cut.len() <= 800 && cut.ends_with('\u{2026}'));
    assert_eq!(
        cut.trim_end_matches('\u{2026}')
            .chars()
            .filter(|c| *c != 'é')
            .count(),
        0
    );
    assert_eq!(truncate_with_ellipsis("abcdef", 2), "ab");
}

#[tokio::test]
async fn the_memory_skill_source_passes_the_conformance_suite() {
    skill_source::run(|fixture| {
        skill_source::SourceUnderTest::new(Arc::new(MemorySkillSource::from_fixture(fixture)))
    })
    .await;
}

#[tokio::test]
async fn the_memory_command_source_passes_the_conformance_suite() {
    command_source::run(|fixture| {
        command_source::CommandSourceUnderTest::new(Arc::new(MemoryCommandSource::from_fixture(fixture)))
    })
    .await;
}

#[test]
fn the_fixture_renders_a_frontmatter_block_with_every_field() {
    let review = skill_source::fixture()
        .into_iter()
        .find(|s| s.name == "review")
        .unwrap();
    let text = review.skill_md();
    assert!(text.starts_with("---\nname: \"review\"\n"), "{text}");
    assert!(text.contains("compatibility: \"mecatl >= 0.1\"\n"), "{text}");
    assert!(
        text.ends_with("---\n\n# Review\n\nWork through the checklist, then summarise.\n"),
        "{text}"
    );
}
