//! Conformance suite for [`SkillSource`] implementations, over a canonical fixture.
//!
//! The fixture is data ([`fixture`]): each adapter materialises it in its own medium
//! (files, a database, a remote service) and hands the suite a fresh source per case
//! through the factory given to [`run`]. [`FixtureSkill::skill_md`] renders a skill
//! as a `SKILL.md` text for file-backed adapters.

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use crate::skills::{
    SkillAsset, SkillMeta, SkillOrigin, SkillSource, SkillSourceError, valid_skill_asset_name,
};

/// One skill of the canonical fixture.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FixtureSkill {
    /// The name (valid under the skill-name grammar).
    pub name: String,
    /// The description (single line, well under every cap).
    pub description: String,
    /// Licence text.
    pub license: Option<String>,
    /// Compatibility note.
    pub compatibility: Option<String>,
    /// Free-form metadata.
    pub metadata: BTreeMap<String, String>,
    /// Advisory tool names.
    pub allowed_tools: Vec<String>,
    /// The instructions, already trimmed.
    pub body: String,
    /// The assets, sorted by name.
    pub assets: Vec<FixtureAsset>,
}

/// One asset of a fixture skill.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FixtureAsset {
    /// Logical, `/`-joined name.
    pub name: String,
    /// The bytes.
    pub content: Vec<u8>,
    /// Whether the asset carries an execute bit.
    pub executable: bool,
}

impl FixtureSkill {
    /// The metadata a source must list for this skill (with `origin` as given).
    pub fn meta(&self, origin: SkillOrigin) -> SkillMeta {
        SkillMeta {
            name: self.name.clone(),
            description: self.description.clone(),
            origin,
            has_assets: !self.assets.is_empty(),
            license: self.license.clone(),
            compatibility: self.compatibility.clone(),
            metadata: self.metadata.clone(),
            allowed_tools: self.allowed_tools.clone(),
        }
    }

    /// The asset inventory a source must list for this skill.
    pub fn inventory(&self) -> Vec<SkillAsset> {
        self.assets
            .iter()
            .map(|asset| SkillAsset {
                name: asset.name.clone(),
                size: asset.content.len() as u64,
                executable: asset.executable,
            })
            .collect()
    }

    /// The skill as a `SKILL.md` text: YAML frontmatter (every string double-quoted)
    /// followed by the body.
    pub fn skill_md(&self) -> String {
        let mut out = String::from("---\n");
        let _ = writeln!(out, "name: {}", yaml_quoted(&self.name));
        let _ = writeln!(out, "description: {}", yaml_quoted(&self.description));
        if let Some(license) = &self.license {
            let _ = writeln!(out, "license: {}", yaml_quoted(license));
        }
        if let Some(compatibility) = &self.compatibility {
            let _ = writeln!(out, "compatibility: {}", yaml_quoted(compatibility));
        }
        if !self.metadata.is_empty() {
            out.push_str("metadata:\n");
            for (key, value) in &self.metadata {
                let _ = writeln!(out, "  {}: {}", yaml_quoted(key), yaml_quoted(value));
            }
        }
        if !self.allowed_tools.is_empty() {
            out.push_str("allowed-tools:\n");
            for tool in &self.allowed_tools {
                let _ = writeln!(out, "  - {}", yaml_quoted(tool));
            }
        }
        out.push_str("---\n\n");
        out.push_str(&self.body);
        out.push('\n');
        out
    }
}

/// `text` as a YAML double-quoted scalar.
fn yaml_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The canonical fixture: `commit-style` without assets, `research`
/// with one nested asset, and `review` with every optional field, a textual asset
/// and an executable one. Sorted by name.
pub fn fixture() -> Vec<FixtureSkill> {
    vec![
        FixtureSkill {
            name: "commit-style".into(),
            description: "Write commit messages in the house style.".into(),
            body: "# Commit style\n\nUse the imperative mood and keep the subject under 72 characters."
                .into(),
            ..FixtureSkill::default()
        },
        FixtureSkill {
            name: "research".into(),
            description: "Research a topic from primary sources.".into(),
            body: "# Research\n\nStart from the bundled source list.".into(),
            assets: vec![FixtureAsset {
                name: "references/deep/sources.md".into(),
                content: b"primary sources only\n".to_vec(),
                executable: false,
            }],
            ..FixtureSkill::default()
        },
        FixtureSkill {
            name: "review".into(),
            description: "Review a change for correctness and style.".into(),
            license: Some("MIT".into()),
            compatibility: Some("mecatl >= 0.1".into()),
            metadata: BTreeMap::from([
                ("author".to_owned(), "acme".to_owned()),
                ("version".to_owned(), "1".to_owned()),
            ]),
            allowed_tools: vec!["Read".into(), "Grep".into()],
            body: "# Review\n\nWork through the checklist, then summarise.".into(),
            assets: vec![
                FixtureAsset {
                    name: "references/checklist.md".into(),
                    content: b"- [ ] tests pass\n- [ ] docs updated\n".to_vec(),
                    executable: false,
                },
                FixtureAsset {
                    name: "scripts/lint.sh".into(),
                    content: b"#!/bin/sh\necho lint\n".to_vec(),
                    executable: true,
                },
            ],
        },
    ]
}

/// A source under test, plus whatever must outlive it (a temporary directory, a
/// server handle).
pub struct SourceUnderTest {
    /// The source.
    pub source: Arc<dyn SkillSource>,
    /// Dropped after the case.
    pub guard: Box<dyn Any + Send>,
}

impl SourceUnderTest {
    /// A source that needs nothing kept alive.
    pub fn new(source: Arc<dyn SkillSource>) -> Self {
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
pub async fn run(make: impl Fn(&[FixtureSkill]) -> SourceUnderTest) {
    let fixture = fixture();
    listing_is_sorted_unique_and_stable(make(&fixture), &fixture).await;
    metas_round_trip(make(&fixture), &fixture).await;
    bodies_round_trip(make(&fixture), &fixture).await;
    inventories_round_trip(make(&fixture), &fixture).await;
    contents_round_trip(make(&fixture), &fixture).await;
    unknown_skills_are_skill_not_found(make(&fixture)).await;
    unknown_assets_are_asset_not_found(make(&fixture)).await;
    invalid_asset_names_are_rejected_first(make(&fixture)).await;
    concurrent_use_through_a_shared_trait_object(make(&fixture), &fixture).await;
}

async fn list(sut: &SourceUnderTest, case: &str) -> Vec<SkillMeta> {
    match sut.source.list_skills().await {
        Ok(metas) => metas,
        Err(error) => panic!("skill_source::{case}: list_skills failed: {error}"),
    }
}

async fn listing_is_sorted_unique_and_stable(sut: SourceUnderTest, fixture: &[FixtureSkill]) {
    let case = "listing_is_sorted_unique_and_stable";
    let first = list(&sut, case).await;
    let names: Vec<&str> = first.iter().map(|m| m.name.as_str()).collect();
    let expected: Vec<&str> = fixture.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, expected, "skill_source::{case}: names");
    assert!(
        names.windows(2).all(|w| w[0] < w[1]),
        "skill_source::{case}: not strictly sorted: {names:?}"
    );
    for _ in 0..3 {
        assert_eq!(
            list(&sut, case).await,
            first,
            "skill_source::{case}: listing changed"
        );
    }
}

async fn metas_round_trip(sut: SourceUnderTest, fixture: &[FixtureSkill]) {
    let case = "metas_round_trip";
    let metas = list(&sut, case).await;
    for (meta, skill) in metas.iter().zip(fixture) {
        let expected = skill.meta(meta.origin);
        assert_eq!(meta, &expected, "skill_source::{case}: {}", skill.name);
    }
}

async fn bodies_round_trip(sut: SourceUnderTest, fixture: &[FixtureSkill]) {
    let case = "bodies_round_trip";
    for skill in fixture {
        match sut.source.skill_body(&skill.name).await {
            Ok(body) => assert_eq!(&*body, skill.body, "skill_source::{case}: {}", skill.name),
            Err(error) => panic!("skill_source::{case}: body of {} failed: {error}", skill.name),
        }
    }
}

async fn inventories_round_trip(sut: SourceUnderTest, fixture: &[FixtureSkill]) {
    let case = "inventories_round_trip";
    for skill in fixture {
        let assets = match sut.source.list_skill_assets(&skill.name).await {
            Ok(assets) => assets,
            Err(error) => panic!("skill_source::{case}: assets of {} failed: {error}", skill.name),
        };
        assert_eq!(assets, skill.inventory(), "skill_source::{case}: {}", skill.name);
        assert!(
            assets.windows(2).all(|w| w[0].name < w[1].name),
            "skill_source::{case}: {} not sorted",
            skill.name
        );
        assert!(
            assets.iter().all(|a| valid_skill_asset_name(&a.name)),
            "skill_source::{case}: {} lists an invalid name",
            skill.name
        );
    }
}

async fn contents_round_trip(sut: SourceUnderTest, fixture: &[FixtureSkill]) {
    let case = "contents_round_trip";
    for skill in fixture {
        for asset in &skill.assets {
            match sut.source.read_skill_asset(&skill.name, &asset.name).await {
                Ok(bytes) => assert_eq!(
                    bytes, asset.content,
                    "skill_source::{case}: {}/{}",
                    skill.name, asset.name
                ),
                Err(error) => panic!(
                    "skill_source::{case}: reading {}/{} failed: {error}",
                    skill.name, asset.name
                ),
            }
        }
    }
}

async fn unknown_skills_are_skill_not_found(sut: SourceUnderTest) {
    let case = "unknown_skills_are_skill_not_found";
    let body = sut.source.skill_body("no-such-skill").await;
    assert!(
        body.as_ref().is_err_and(SkillSourceError::is_skill_not_found),
        "skill_source::{case}: body: {body:?}"
    );
    let assets = sut.source.list_skill_assets("no-such-skill").await;
    assert!(
        assets.as_ref().is_err_and(SkillSourceError::is_skill_not_found),
        "skill_source::{case}: assets: {assets:?}"
    );
}

async fn unknown_assets_are_asset_not_found(sut: SourceUnderTest) {
    let case = "unknown_assets_are_asset_not_found";
    for (skill, asset) in [
        ("review", "references/ghost.md"),
        ("no-such-skill", "references/checklist.md"),
        ("commit-style", "anything.md"),
    ] {
        let read = sut.source.read_skill_asset(skill, asset).await;
        assert!(
            read.as_ref().is_err_and(SkillSourceError::is_asset_not_found),
            "skill_source::{case}: {skill}/{asset}: {read:?}"
        );
    }
}

async fn invalid_asset_names_are_rejected_first(sut: SourceUnderTest) {
    let case = "invalid_asset_names_are_rejected_first";
    for asset in ["../x", "/abs", "a\\b", "", "a/./b"] {
        let read = sut.source.read_skill_asset("review", asset).await;
        assert!(
            matches!(read, Err(SkillSourceError::InvalidAssetName { .. })),
            "skill_source::{case}: {asset:?} gave {read:?}"
        );
    }
}

async fn concurrent_use_through_a_shared_trait_object(sut: SourceUnderTest, fixture: &[FixtureSkill]) {
    let case = "concurrent_use_through_a_shared_trait_object";
    let Some(skill) = fixture.iter().find(|s| !s.assets.is_empty()) else {
        return;
    };
    let asset = &skill.assets[0];
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let source = Arc::clone(&sut.source);
        let (name, asset_name) = (skill.name.clone(), asset.name.clone());
        tasks.spawn(async move { source.read_skill_asset(&name, &asset_name).await });
    }
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Ok(bytes)) => assert_eq!(bytes, asset.content, "skill_source::{case}"),
            other => panic!("skill_source::{case}: {other:?}"),
        }
    }
}
